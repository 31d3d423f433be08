"""Through a real mount: what stores written on the power-cut file system keep after a cut.

Writers run in their own processes and are SIGKILLed before the cut, as the harness will do.
"""

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from plugpull.powercut.durability import Variant

WRITER = Path(__file__).parent / "sqlite_writer.py"
COMMITS = 5


def fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(path: Path, data: bytes, *, fsync: bool) -> None:
    with open(path, "wb") as file:
        file.write(data)
        file.flush()
        if fsync:
            os.fsync(file.fileno())


def test_reads_and_writes_pass_through_and_a_stop_keeps_what_the_writers_left(mounts):
    (mounts.backing / "before").write_bytes(b"on disk before the mount")
    mount = mounts.mount()
    assert (mounts.mnt / "before").read_bytes() == b"on disk before the mount"
    (mounts.mnt / "sub").mkdir()
    write_file(mounts.mnt / "sub" / "after", b"no fsync", fsync=False)
    assert sorted(os.listdir(mounts.mnt)) == ["before", "sub"]
    mount.stop()
    assert os.listdir(mounts.mnt) == []  # unmounted
    assert (mounts.backing / "sub" / "after").read_bytes() == b"no fsync"  # a stop is not a power cut


def test_a_file_written_without_fsync_is_gone_after_the_cut(mounts):
    (mounts.backing / "old").write_bytes(b"synced long ago")
    mount = mounts.mount()
    write_file(mounts.mnt / "old", b"rewritten, never synced", fsync=False)
    write_file(mounts.mnt / "new", b"never synced", fsync=False)
    report = mount.cut()
    assert (mounts.backing / "old").read_bytes() == b"synced long ago"
    assert not (mounts.backing / "new").exists()
    assert [loss.kind for loss in report.losses] == ["absent", "data"]
    assert report.losses[0].text.startswith("new is absent after the cut: the file was created")


def test_a_file_written_with_fsync_and_a_directory_fsync_stays(mounts):
    mount = mounts.mount()
    write_file(mounts.mnt / "journal", b"idempotency-key=7", fsync=True)
    fsync_directory(mounts.mnt)
    report = mount.cut()
    assert (mounts.backing / "journal").read_bytes() == b"idempotency-key=7"
    assert report.losses == ()
    assert report.lines() == ["nothing was lost (unsynced): every write and every name was durable"]
    assert (report.activity.fsyncs, report.activity.directory_fsyncs) == (1, 1)


def test_fdatasync_through_the_mount_is_seen_as_fdatasync(mounts):
    mount = mounts.mount()
    fd = os.open(mounts.mnt / "f", os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"data")
    os.fdatasync(fd)
    os.close(fd)
    report = mount.cut(Variant.LAZYFS)
    assert (report.activity.fsyncs, report.activity.fdatasyncs) == (0, 1)
    assert (mounts.backing / "f").read_bytes() == b"data"


def test_the_torn_variant_keeps_the_last_write_up_to_its_last_sector_boundary(mounts):
    (mounts.backing / "log").write_bytes(b"s" * 4096)
    mount = mounts.mount()
    # One page-aligned 4 KiB write: the kernel passes it as one FUSE write.
    fd = os.open(mounts.mnt / "log", os.O_WRONLY)
    os.pwrite(fd, b"n" * 4096, 4096)
    os.close(fd)
    report = mount.cut(Variant.TORN)
    assert (mounts.backing / "log").read_bytes() == b"s" * 4096 + b"n" * 3584
    assert report.lines() == [
        "log lost its last 512 bytes (unsynced since offset 7680)",
        "log: its last unsynced write (4096 bytes at offset 4096) was torn at offset 7680: 3584 bytes of it "
        "reached the disk, 512 did not",
    ]


def test_a_rename_without_a_directory_fsync_is_undone(mounts):
    (mounts.backing / "state.json").write_bytes(b'{"step": 1}')
    mount = mounts.mount()
    write_file(mounts.mnt / "state.json.tmp", b'{"step": 2}', fsync=True)
    os.rename(mounts.mnt / "state.json.tmp", mounts.mnt / "state.json")
    report = mount.cut()
    assert (mounts.backing / "state.json").read_bytes() == b'{"step": 1}'
    assert not (mounts.backing / "state.json.tmp").exists()  # its create was not durable either
    assert [loss.kind for loss in report.losses] == ["replaced"]


def test_a_rename_followed_by_a_directory_fsync_stays(mounts):
    (mounts.backing / "state.json").write_bytes(b'{"step": 1}')
    mount = mounts.mount()
    write_file(mounts.mnt / "state.json.tmp", b'{"step": 2}', fsync=True)
    os.rename(mounts.mnt / "state.json.tmp", mounts.mnt / "state.json")
    fsync_directory(mounts.mnt)
    report = mount.cut()
    assert (mounts.backing / "state.json").read_bytes() == b'{"step": 2}'
    assert sorted(os.listdir(mounts.backing)) == ["state.json"]
    assert report.losses == ()


def test_a_json_file_written_with_open_and_write_and_no_fsync_comes_back_old(mounts):
    (mounts.backing / "run.json").write_text(json.dumps({"approved": False}))
    mount = mounts.mount()
    (mounts.mnt / "run.json").write_text(json.dumps({"approved": True, "refund": "sent"}))
    mount.cut()
    assert json.loads((mounts.backing / "run.json").read_text()) == {"approved": False}


def test_a_new_json_file_written_without_fsync_comes_back_empty_when_names_survive(mounts):
    mount = mounts.mount()
    (mounts.mnt / "run.json").write_text(json.dumps({"approved": True}))
    report = mount.cut(Variant.LAZYFS)
    assert (mounts.backing / "run.json").read_bytes() == b""
    assert report.lines() == ["run.json lost all its 18 bytes (none was synced): it is empty"]


def test_an_unlink_without_a_directory_fsync_is_undone(mounts):
    (mounts.backing / "lock").write_bytes(b"owner=1")
    mount = mounts.mount()
    os.unlink(mounts.mnt / "lock")
    mount.cut()
    assert (mounts.backing / "lock").read_bytes() == b"owner=1"


def test_the_mount_can_be_made_again_on_the_rewritten_directory_to_resume_at_the_same_path(mounts):
    (mounts.backing / "counter").write_bytes(b"1")
    first = mounts.mount()
    write_file(mounts.mnt / "counter", b"2", fsync=False)
    first.cut()
    second = mounts.mount()
    assert (mounts.mnt / "counter").read_bytes() == b"1"
    write_file(mounts.mnt / "counter", b"2", fsync=True)
    assert second.cut().losses == ()
    assert (mounts.backing / "counter").read_bytes() == b"2"


def run_writer(mounts, journal_mode: str, synchronous: str, commits: int, *, hold: bool) -> None:
    """Run the SQLite writer on the mount until it says it is done (or holding), then SIGKILL it."""
    argv = [sys.executable, str(WRITER), str(mounts.mnt / "store.db"), journal_mode, synchronous, str(commits)]
    writer = subprocess.Popen([*argv, *(["hold"] if hold else [])], stdout=subprocess.PIPE, text=True)
    try:
        wanted = "holding" if hold else f"committed {commits}"
        said: list[str] = []
        for line in writer.stdout:
            said.append(line.strip())
            if said[-1] == wanted:
                break
        assert said[-1:] == [wanted], f"the writer exited early: {said}"
    finally:
        writer.kill()
        writer.wait(30)
        writer.stdout.close()


def rows_after_the_cut(mounts) -> int:
    """Open the database on the rewritten backing directory, as a resumed store would."""
    connection = sqlite3.connect(mounts.backing / "store.db")
    try:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return connection.execute("SELECT count(*) FROM effects").fetchone()[0]
    finally:
        connection.close()


@pytest.mark.parametrize("journal_mode", ["WAL", "TRUNCATE", "DELETE"])
def test_sqlite_with_synchronous_full_keeps_every_committed_transaction_and_loses_the_uncommitted_one(
    mounts, journal_mode
):
    mount = mounts.mount()
    run_writer(mounts, journal_mode, "FULL", COMMITS, hold=True)  # then 100 rows never committed
    report = mount.cut()
    assert rows_after_the_cut(mounts) == COMMITS
    assert any(loss.kind == "data" for loss in report.losses)  # the spilled, uncommitted pages were unsynced


@pytest.mark.parametrize(("journal_mode", "synchronous"), [("WAL", "FULL"), ("TRUNCATE", "FULL"), ("DELETE", "EXTRA")])
def test_sqlite_keeps_its_last_commit_when_nothing_follows_it(mounts, journal_mode, synchronous):
    mount = mounts.mount()
    run_writer(mounts, journal_mode, synchronous, COMMITS, hold=False)
    mount.cut()
    assert rows_after_the_cut(mounts) == COMMITS


def test_sqlite_in_delete_mode_with_synchronous_full_loses_its_last_commit_when_nothing_follows(mounts):
    # SQLite's documented limit (https://www.sqlite.org/pragma.html#pragma_synchronous): in DELETE
    # mode the commit is the journal's unlink, and only synchronous=EXTRA fsyncs the directory after
    # it. Without that fsync the hot journal is back after the cut and rolls the last commit back.
    mount = mounts.mount()
    run_writer(mounts, "DELETE", "FULL", COMMITS, hold=False)
    report = mount.cut()
    assert rows_after_the_cut(mounts) == COMMITS - 1
    assert report.lines() == [
        "store.db-journal is back after the cut: its unlink was not made durable (no fsync of its directory followed)"
    ]


def test_sqlite_in_delete_mode_keeps_its_last_commit_when_names_survive_as_in_lazyfs(mounts):
    mount = mounts.mount()
    run_writer(mounts, "DELETE", "FULL", COMMITS, hold=False)
    mount.cut(Variant.LAZYFS)
    assert rows_after_the_cut(mounts) == COMMITS
