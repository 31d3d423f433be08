"""Process groups: which members of a killed phase's group are still alive."""

from __future__ import annotations

import sys
import time

from plugpull.process import kill_group, live_members, spawn

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
    assert live_members(running.pgid) == []
