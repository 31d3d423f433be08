"""The daemon on its own: a failed mount and an unreadable backing directory are said, not hidden."""

import json
import os
import subprocess
import sys

import pytest

from plugpull.powercut.mount import is_mounted, unavailable_reason, wait_unmounted


@pytest.fixture(autouse=True)
def fuse():
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)


def daemon(backing, mountpoint) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "plugpull.powercut.daemon", str(backing), str(mountpoint)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_mount_that_fails_is_an_error_event_with_libfuses_words_on_stderr(tmp_path):
    process = daemon(tmp_path, tmp_path / "missing")
    out, err = process.communicate(timeout=60)
    assert json.loads(out.splitlines()[0]) == {"event": "error", "stage": "mount", "reason": "fuse_main failed (1)"}
    assert "bad mount point" in err
    assert process.returncode == 3


def test_a_backing_directory_the_model_cannot_hold_is_an_error_event(tmp_path):
    (tmp_path / "backing").mkdir()
    (tmp_path / "mnt").mkdir()
    os.mkfifo(tmp_path / "backing" / "fifo")
    process = daemon(tmp_path / "backing", tmp_path / "mnt")
    out, _ = process.communicate(timeout=60)
    event = json.loads(out.splitlines()[0])
    assert (event["event"], event["stage"]) == ("error", "load")
    assert "fifo is neither a file, a directory nor a symlink" in event["reason"]
    assert not is_mounted(tmp_path / "mnt")


def test_the_end_of_its_stdin_makes_the_daemon_unmount_and_exit(tmp_path):
    (tmp_path / "backing").mkdir()
    (tmp_path / "mnt").mkdir()
    process = daemon(tmp_path / "backing", tmp_path / "mnt")
    try:
        assert json.loads(process.stdout.readline())["event"] == "ready"
        process.stdin.close()
        assert process.wait(60) == 0
        assert wait_unmounted(tmp_path / "mnt", 10)
    finally:
        if process.poll() is None:
            process.kill()
        subprocess.run(["fusermount3", "-u", "-q", str(tmp_path / "mnt")])
        process.stdout.close()
        process.stderr.close()
