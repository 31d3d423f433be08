"""Every process a phase started is accounted for: real processes that leave the group, real orphans."""

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from plugpull import reaper
from plugpull.process import spawn
from plugpull.results import Verdict
from plugpull.scenarios import Runtime, Settings
from plugpull.suite import run_plan
from plugpull.targets import Target

AGENTS = Path(__file__).parent / "agents"
PR_GET_CHILD_SUBREAPER = 37


def leaves_a_helper(marker: str) -> list[str]:
    """A phase that starts a sleeper in a new session and exits at once, leaving it behind."""
    code = (
        "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', "
        f"'{marker}'], start_new_session=True)"
    )
    return [sys.executable, "-c", code]


def test_plugpull_becomes_a_child_subreaper_when_it_starts_a_target():
    running = spawn([sys.executable, "-c", "pass"], env=None, cwd=None)
    running.wait(30)
    flag = ctypes.c_int(0)
    assert ctypes.CDLL(None).prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0
    assert flag.value == 1
    assert reaper.accountable()


def test_a_helper_left_in_a_new_session_is_named_killed_and_reaped(processes_carrying):
    marker = uuid.uuid4().hex[:12]
    outcome = spawn(leaves_a_helper(marker), env=None, cwd=None).wait(30)
    assert outcome.returncode == 0
    [helper] = outcome.outlived
    assert helper["cmdline"].endswith(f"time.sleep(600) {marker}")
    assert processes_carrying(marker) == []
    assert not Path(f"/proc/{helper['pid']}").exists()  # killed and reaped, not a zombie


def test_a_phase_running_at_the_same_time_is_not_blamed_for_another_phases_helper(processes_carrying):
    # -j 2: the helper reaches plugpull while both phases run; its environment names its own phase.
    marker = uuid.uuid4().hex[:12]
    quiet = spawn([sys.executable, "-c", "import time; time.sleep(1.5)"], env=None, cwd=None)
    leaky = spawn(leaves_a_helper(marker), env=None, cwd=None)
    assert quiet.wait(30).outlived == []
    assert [h["pid"] for h in leaky.wait(30).outlived] != []
    assert processes_carrying(marker) == []


def test_an_interrupt_kills_the_helpers_of_every_phase_still_running(processes_carrying):
    marker = uuid.uuid4().hex[:12]
    code = (
        "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', "
        f"'{marker}'], start_new_session=True); time.sleep(600)"
    )
    running = spawn([sys.executable, "-c", code], env=None, cwd=None)
    while len(processes_carrying(marker)) < 2:  # the phase (its code holds the marker) and its helper
        running.tracker.scan()
    running.tracker.scan(force=True)
    reaper.stop_all()  # what process.stop_all adds to killing the groups on Ctrl-C
    assert processes_carrying(marker) == [running.pid]  # the helper is gone; the group is the caller's to kill
    running.kill()
    assert processes_carrying(marker) == []


def test_an_interrupt_inside_popen_still_kills_the_target_it_was_starting(processes_carrying, monkeypatch):
    # A Ctrl-C can land after the child exec'd and before spawn() knows its pid (the window
    # tests/test_cli.py's Ctrl-C test aims at, since it interrupts as soon as the target's command line shows):
    # here KeyboardInterrupt is raised at that moment, deterministically, from reaper.own.
    from plugpull import process

    monkeypatch.setattr(process, "_stopping", threading.Event())  # stop_all refuses later spawns: not here
    monkeypatch.setattr(process, "_starting", set())
    marker = uuid.uuid4().hex[:12]

    def interrupted(pid):
        raise KeyboardInterrupt

    monkeypatch.setattr(reaper, "own", interrupted)
    with pytest.raises(KeyboardInterrupt):
        spawn([sys.executable, "-c", "import time; time.sleep(600)", marker], env=None, cwd=None)
    # Popen returns once the exec closed its error pipe, which the kernel does before the new image has set up
    # its arguments: /proc/PID/cmdline can still be empty then (a full run on 4 workers caught it).
    deadline = time.monotonic() + 30
    while not (carrying := processes_carrying(marker)):
        assert time.monotonic() < deadline, "the target never showed its command line"
        time.sleep(0.01)
    (child,) = carrying  # running, and known to no group list
    process.stop_all()
    deadline = time.monotonic() + 30
    while os.waitpid(child, os.WNOHANG) == (0, 0):  # our child: reaped here once it died
        assert time.monotonic() < deadline, "stop_all left the target it was starting running"
        time.sleep(0.05)
    assert processes_carrying(marker) == []


@pytest.fixture
def forks(agent_forks):
    """The module's fork server of the tests/agents scripts (tests/forked_agents.py), one for its forked tests."""
    return agent_forks


def forked(how: str, marker: str) -> Target:
    """misbehaving as ``python -m``, so the fork server runs it: its helpers never exec."""
    return Target(name="agent", argv=(sys.executable, "-m", "misbehaving", how, marker))


@pytest.mark.parametrize("how", ["setsid-helper", "double-fork-helper"])
def test_a_forked_target_whose_helper_outlives_the_kill_is_an_error_at_both_points(forks, how, processes_carrying):
    marker = uuid.uuid4().hex[:12]
    target = forked(how, marker)
    results = run_plan(
        [(target, "before-effect"), (target, "after-effect")], Settings(timeout=30), Runtime(forks=forks)
    )
    for result in results:
        assert result.verdict is Verdict.ERROR, result.message
        assert result.message.startswith("a process of the run outlived the kill: pid ")
    assert processes_carrying(marker) == []


def test_with_two_jobs_on_one_fork_server_only_the_target_with_a_helper_is_an_error(forks, processes_carrying):
    marker = uuid.uuid4().hex[:12]
    leaky, tidy = forked("double-fork-helper", marker), forked("forked-child", marker)
    runs = [(t, p) for p in ("before-effect", "after-effect") for t in (leaky, tidy)]
    results = run_plan(runs, Settings(timeout=30), Runtime(forks=forks), jobs=2)
    verdicts = [(r.point, r.target, r.verdict.value) for r in results]
    assert [v for _, _, v in verdicts] == ["ERROR", "PASS", "ERROR", "FAIL"], [r.message for r in results]
    assert all(r.evidence["start"]["outlived"] == [] for r in results[1::2])
    assert processes_carrying(marker) == []


@pytest.fixture
def no_full_scan(monkeypatch):
    """Reading every process of /proc fails the test: a phase is accounted for from its own tree."""

    def refused() -> dict:
        raise AssertionError("read every process of /proc")

    monkeypatch.setattr(reaper, "snapshot", refused)


def test_a_phases_processes_are_read_from_its_tree_not_from_every_process(no_full_scan, processes_carrying):
    assert reaper.children_readable()  # Linux with CONFIG_PROC_CHILDREN, as on every machine this runs on
    marker = uuid.uuid4().hex[:12]
    outcome = spawn(leaves_a_helper(marker), env=None, cwd=None).wait(30)
    [helper] = outcome.outlived  # an orphan in a new session: found among plugpull's own children
    assert helper["cmdline"].endswith(f"time.sleep(600) {marker}")
    assert processes_carrying(marker) == []


@pytest.mark.parametrize("how", ["setsid-helper", "double-fork-helper"])
def test_a_forked_targets_escaped_helper_is_found_from_its_tree_alone(forks, how, no_full_scan, processes_carrying):
    marker = uuid.uuid4().hex[:12]
    target = forked(how, marker)
    results = run_plan([(target, "before-effect")], Settings(timeout=30), Runtime(forks=forks))
    assert results[0].verdict is Verdict.ERROR, results[0].message
    assert results[0].message.startswith("a process of the run outlived the kill: pid ")
    assert processes_carrying(marker) == []


def test_without_proc_children_files_a_phase_is_accounted_for_by_reading_every_process(monkeypatch, processes_carrying):
    monkeypatch.setattr(reaper, "_children_readable", False)
    scans = []
    monkeypatch.setattr(reaper, "snapshot", lambda real=reaper.snapshot: scans.append(1) or real())
    marker = uuid.uuid4().hex[:12]
    outcome = spawn(leaves_a_helper(marker), env=None, cwd=None).wait(30)
    assert [h["cmdline"].endswith(f"time.sleep(600) {marker}") for h in outcome.outlived] == [True]
    assert scans
    assert processes_carrying(marker) == []


def test_a_child_forked_by_any_thread_of_a_process_is_below_it():
    # /proc/PID/task/TID/children lists the children of one thread: a child started by another
    # thread than the main one is on that thread's list only.
    code = (
        "import subprocess, sys, threading, time\n"
        "t = threading.Thread(target=subprocess.Popen, args=([sys.executable, '-c', 'import time; time.sleep(60)'],))\n"
        "t.start(); t.join(); print('started', flush=True); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    kids = []
    try:
        assert parent.stdout.readline() == b"started\n"
        kids = reaper.children(parent.pid)
        [child] = kids
        assert reaper.read_proc(child).ppid == parent.pid
        assert set(reaper.tree({parent.pid})) == {parent.pid, child}
    finally:
        for pid in kids:
            os.kill(pid, signal.SIGKILL)
        parent.kill()
        parent.wait()
        parent.stdout.close()
        for pid in kids:  # reparented to this process when it is a subreaper (an earlier test made it one)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def test_a_command_line_still_empty_inside_execve_is_read_again_until_it_is_written(monkeypatch):
    # The kernel writes a new image's arguments after it dropped the old one's; a process caught in between (a
    # helper its tool started just before the kill) reads as empty. Here the first two reads are that moment.
    written = reaper.cmdline(os.getpid())
    reads = {"n": 0}
    real_open = open

    def open_during_exec(path, *args, **kwargs):
        if str(path).endswith("/cmdline"):
            reads["n"] += 1
            if reads["n"] <= 2:
                return real_open("/dev/null", *args, **kwargs)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", open_during_exec)
    assert reaper.cmdline(os.getpid(), wait=5.0) == written
    assert reads["n"] == 3
    reads["n"] = 0
    assert reaper.cmdline(os.getpid()).startswith("[")  # no wait: the process's name, as before
