"""The harness side: FUSE unavailable said with its reason, nothing left mounted or running on any exit path."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from plugpull.powercut import mount as mount_module
from plugpull.powercut.durability import Activity, Loss, Variant
from plugpull.powercut.mount import (
    CutReport,
    FuseUnavailable,
    PowerCutError,
    PowerCutMount,
    is_mounted,
    wait_unmounted,
)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not; one that is our child is reaped here)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return False
    if state == "Z":
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return False
    return True


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize(
    ("missing", "reason"),
    [
        ("/dev/fuse", "no /dev/fuse"),
        ("fusermount3", "fusermount3 is not installed (Debian: apt-get install fuse3)"),
        ("fuse3", "libfuse3 is not installed (Debian: apt-get install fuse3)"),
        ("mfusepy", "the Python binding mfusepy is not installed"),
    ],
)
def test_a_missing_piece_of_fuse_is_one_error_with_its_reason_and_nothing_is_started(
    monkeypatch, tmp_path, missing, reason
):
    real_exists = os.path.exists
    monkeypatch.setattr(mount_module.sys, "platform", "linux")
    monkeypatch.setattr(mount_module.os.path, "exists", lambda p: p != missing and real_exists(p))
    monkeypatch.setattr(mount_module.os, "open", lambda *a: os.dup(0))  # /dev/fuse opens as far as this test cares
    monkeypatch.setattr(mount_module.shutil, "which", lambda name: None if name == missing else f"/usr/bin/{name}")
    monkeypatch.setattr(mount_module.ctypes.util, "find_library", lambda name: None if name == missing else "lib")
    monkeypatch.setattr(mount_module.importlib.util, "find_spec", lambda name: None if name == missing else object())
    assert reason in mount_module.unavailable_reason()
    (tmp_path / "b").mkdir()
    (tmp_path / "m").mkdir()
    attempt = PowerCutMount(tmp_path / "b", tmp_path / "m")
    with pytest.raises(FuseUnavailable, match="FUSE cannot mount here: ") as raised:
        attempt.start()
    assert reason in raised.value.reason
    assert attempt.pid is None  # no daemon was started


def test_a_mountpoint_that_is_not_an_empty_directory_is_refused_before_anything_starts(tmp_path):
    if mount_module.unavailable_reason():
        pytest.skip(mount_module.unavailable_reason())
    (tmp_path / "b").mkdir()
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "file").write_bytes(b"")
    with pytest.raises(ValueError, match="must be an existing empty directory"):
        PowerCutMount(tmp_path / "b", tmp_path / "m").start()
    with pytest.raises(ValueError, match="must not be inside the backing directory"):
        (tmp_path / "b" / "inner").mkdir()
        PowerCutMount(tmp_path / "b", tmp_path / "b" / "inner").start()


def test_a_stop_unmounts_and_ends_the_daemon(mounts):
    mount = mounts.mount()
    assert is_mounted(mounts.mnt)
    mount.stop()
    assert not is_mounted(mounts.mnt)
    assert not alive(mount.pid)
    assert mount.unmount_note == "unmounted"
    mount.stop()  # twice is harmless


def test_a_killed_daemon_leaves_no_mount_once_the_harness_stops(mounts):
    mount = mounts.mount()
    (mounts.mnt / "open-file").write_bytes(b"x")
    os.kill(mount.pid, signal.SIGKILL)
    mount.stop()
    # fusermount3's auto_unmount watchdog may have unmounted first (it races the kernel's abort of
    # the connection and misses some kills); either way nothing is mounted or running now.
    assert not is_mounted(mounts.mnt)
    assert not alive(mount.pid)


def children(pid: int) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()[1]) == pid:
                found.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return found


def test_a_daemon_killed_with_fusermounts_watchdog_leaves_no_mount_once_the_harness_stops(mounts):
    mount = mounts.mount()
    # The watchdog (fusermount3 -o auto_unmount, a child of the daemon in its own session) dies first:
    # nothing but the harness can unmount now.
    for child in children(mount.pid):
        os.kill(child, signal.SIGKILL)
    os.kill(mount.pid, signal.SIGKILL)
    time.sleep(0.2)
    assert is_mounted(mounts.mnt)
    mount.stop()
    assert not is_mounted(mounts.mnt)
    assert mount.unmount_note == "unmounted by the harness (fusermount3 -u -q)"


def test_a_killed_harness_makes_the_daemon_unmount_and_exit(mounts):
    code = (
        "import sys; from plugpull.powercut.mount import PowerCutMount; "
        "m = PowerCutMount(sys.argv[1], sys.argv[2]).start(); print(m.pid, flush=True); "
        "import time; time.sleep(600)"
    )
    harness = subprocess.Popen(
        [sys.executable, "-c", code, str(mounts.backing), str(mounts.mnt)], stdout=subprocess.PIPE, text=True
    )
    try:
        daemon = int(harness.stdout.readline())
        assert is_mounted(mounts.mnt)
    finally:
        harness.kill()
        harness.wait(30)
        harness.stdout.close()
    assert wait_unmounted(mounts.mnt, 30)
    assert gone_within(daemon, 30)


def test_a_write_that_bypassed_the_mount_makes_the_cut_an_error_naming_it(mounts):
    mount = mounts.mount()
    (mounts.mnt / "through").write_bytes(b"seen")
    (mounts.backing / "around").write_bytes(b"never seen by the model")
    with pytest.raises(PowerCutError, match="around: on the backing directory, not in the model"):
        mount.cut()
    assert not is_mounted(mounts.mnt)


def test_a_cut_ends_the_mount_and_a_second_cut_is_an_error(mounts):
    mount = mounts.mount()
    mount.cut()
    assert not is_mounted(mounts.mnt)
    assert not alive(mount.pid)
    with pytest.raises(PowerCutError, match="the daemon is gone"):
        mount.cut()


def test_a_cut_report_survives_json():
    report = CutReport(
        Variant.TORN,
        (Loss("a", "data", "a lost its last 1 bytes (unsynced since offset 0)"),),
        Activity(writes=1, bytes_written=1),
        "unmounted",
    )
    assert CutReport.from_json(report.to_json()) == report
