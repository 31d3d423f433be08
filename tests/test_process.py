"""Starting target processes: where their sockets live, and which members of a killed phase's group are still alive."""

import os
import socket
import sys
import tempfile
import time

from plugpull import process
from plugpull.channel import Channel
from plugpull.process import kill_group, live_members, spawn


def test_a_socket_folder_is_under_tmpdir_when_the_path_fits(tmp_path, monkeypatch):
    short = tmp_path.parent / "t"
    short.mkdir(exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(short))
    folder = process.socket_dir("pp-")
    try:
        assert folder.parent == short
        assert folder.stat().st_mode & 0o777 == 0o700
    finally:
        folder.rmdir()


def test_a_tmpdir_too_long_for_a_unix_socket_puts_the_socket_under_tmp(tmp_path, monkeypatch):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    channel = Channel()
    try:
        assert channel.path.startswith("/tmp/plugpull-chan-")
        assert len(os.fsencode(channel.path)) <= process.SOCKET_PATH_MAX
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(channel.path)  # it is bound and listening
    finally:
        channel.close()
    assert list(deep.iterdir()) == []  # nothing tried under the long folder is left there


# The leader starts a helper in its own group, writes the helper's pid to argv[1], then sleeps.
LEADER_WITH_A_HELPER = (
    "import os, subprocess, sys, time\n"
    "helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "open(sys.argv[1] + '.tmp', 'w').write(str(helper.pid)); os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
    "time.sleep(600)\n"
)


def test_a_group_killed_and_reaped_has_no_live_members():
    running = spawn([sys.executable, "-c", "import time; time.sleep(600)"], env=None, cwd=None)
    running.kill()
    assert live_members(running.pgid) == []


def test_a_group_whose_leader_is_gone_still_lists_the_member_left_in_it(tmp_path):
    said = tmp_path / "helper"
    running = spawn([sys.executable, "-c", LEADER_WITH_A_HELPER, str(said)], env=None, cwd=None)
    try:
        while not said.exists():  # no deadline: the test run's own timeout bounds it
            time.sleep(0.01)
        helper = int(said.read_text())
        running.popen.kill()  # the leader alone: its helper stays in the group
        running.popen.wait()
        assert live_members(running.pgid) == [helper]
    finally:
        kill_group(running.pgid)
        running.finish()
    # kill(2) only queues SIGKILL: the helper dies when the kernel next runs it, which under load can come after the
    # first read of /proc (seen twice in one afternoon's runs with four workers on two cores). A bounded wait, not a
    # certainty on the first read; a helper the kill missed still fails the test.
    deadline = time.monotonic() + 10
    while live_members(running.pgid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert live_members(running.pgid) == []
