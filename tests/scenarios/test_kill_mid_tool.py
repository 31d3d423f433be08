"""kill-mid-tool with real processes and a real SIGKILL of a real process group."""

import os
import re
import signal
import sys
import uuid
from pathlib import Path

import pytest

from forked_agents import forked_agent
from plugpull.aim import Aim
from plugpull.results import Verdict
from plugpull.scenarios import Runtime, Settings
from plugpull.scenarios.kill_mid_tool import run_point
from plugpull.targets import Target

FAST = Settings(timeout=30)
AGENTS = Path(__file__).parent.parent / "agents"


@pytest.fixture(scope="module")
def runtime(agent_forks):
    """The module's tests share their clean runs; the tests/agents scripts
    run as ``python -m`` fork from the module's server (conftest's AgentForks), a real SIGKILL of a real group."""
    return Runtime(forks=agent_forks)


def misbehaving_marked(how: str, marker: str) -> Target:
    """misbehaving.py with ``marker`` on every command line it starts, so /proc shows its processes."""
    return Target(name="agent", argv=(sys.executable, str(AGENTS / "misbehaving.py"), how, marker))


# The tool-body table: what a framework that re-runs an unfinished
# tool on resume does to each way of writing the tool.
TABLE = {
    "no-key": {"before-effect": "PASS", "after-effect": "FAIL"},
    "stable-key": {"before-effect": "PASS", "after-effect": "PASS"},
    "random-key": {"before-effect": "PASS", "after-effect": "FAIL"},
    "ledger": {"before-effect": "FAIL", "after-effect": "PASS"},
}


@pytest.mark.parametrize("body, point", [(b, p) for b in TABLE for p in TABLE[b]])
def test_each_tool_body_gets_its_verdict_at_each_point(fake_framework, body, point, runtime):
    result = run_point(fake_framework(body), point, FAST, runtime)
    assert result.verdict.value == TABLE[body][point], result.message
    assert result.evidence["start"]["returncode"] == -signal.SIGKILL
    assert result.evidence["proof"]["caller_group"] == result.evidence["proof"]["group"]


def test_a_duplicate_says_how_many_effects_the_provider_saw(fake_framework, runtime):
    result = run_point(fake_framework("no-key"), "after-effect", FAST, runtime)
    assert result.message == "effect duplicated: the provider saw 2 charge (expected 1)"
    assert result.evidence["counts"] == {"charge": 2}


def test_a_lost_effect_says_so(fake_framework, runtime):
    result = run_point(fake_framework("ledger"), "before-effect", FAST, runtime)
    assert result.message == "effect lost: the provider saw 0 charge (expected 1)"


def test_a_tool_that_never_calls_the_provider_is_an_error(misbehaving, runtime):
    result = run_point(misbehaving("never-calls"), "before-effect", FAST, runtime)
    assert result.verdict is Verdict.ERROR
    assert "never called record_effect" in result.message


def test_a_start_that_exits_before_the_tool_is_an_error(misbehaving, runtime):
    result = run_point(misbehaving("exits-early"), "after-effect", FAST, runtime)
    assert result.verdict is Verdict.ERROR
    assert result.evidence["resume"] is None


def test_a_start_that_crashes_shows_its_stderr(misbehaving, runtime):
    result = run_point(misbehaving("crashes"), "before-effect", FAST, runtime)
    assert result.verdict is Verdict.ERROR
    assert "exit code 1" in result.message
    assert "the agent crashed before its tool" in result.stderr


def test_a_call_from_outside_the_killed_group_is_an_error(misbehaving, runtime):
    result = run_point(misbehaving("new-session-worker"), "after-effect", FAST, runtime)
    assert result.verdict is Verdict.ERROR
    assert "outside the killed group" in result.message
    # The escaped worker was killed too: its held connection closed.
    proof = result.evidence["proof"]
    assert proof["caller_pid"] != proof["group"]


def test_a_call_from_a_child_in_the_same_group_is_proven(misbehaving, runtime):
    result = run_point(misbehaving("forked-child"), "before-effect", FAST, runtime)
    assert result.verdict is Verdict.PASS, result.message
    proof = result.evidence["proof"]
    assert proof["caller_pid"] != proof["group"] and proof["caller_group"] == proof["group"]


def test_a_command_that_does_not_exist_is_an_error(runtime):
    target = Target(name="agent", argv=("/nonexistent/agent-binary",))
    result = run_point(target, "before-effect", FAST, runtime)
    assert result.verdict is Verdict.ERROR
    assert result.message.startswith("cannot start the target")


def test_a_start_that_never_reaches_the_tool_is_an_error_after_the_timeout():
    target = Target(name="agent", argv=(sys.executable, "-c", "import time; time.sleep(60)"))
    result = run_point(target, "before-effect", Settings(timeout=1))
    assert result.verdict is Verdict.ERROR
    assert "did not reach the tool within 1s" in result.message


def test_a_tool_that_calls_twice_without_a_key_in_one_run_fails_without_any_fault(misbehaving, agent_forks):
    # The clean run (no kill) already records 2 charges: the bug shows with no kill, so the first line fails with
    # it and the other is moot (a fresh runtime: the first line judged holds the FAIL).
    runtime = Runtime(forks=agent_forks)
    first, other = (
        run_point(misbehaving("twice"), point, FAST, runtime) for point in ("before-effect", "after-effect")
    )
    assert first.verdict is other.verdict is Verdict.FAIL
    assert first.message.startswith(
        "without any fault: effect duplicated: a clean run (no kill) already recorded 2 charge (expected 1)"
    )
    assert first.evidence["without_fault"] is True and first.evidence["resume"] is None
    assert other.message == "moot: the clean run already failed without any fault (see before-effect)"
    assert other.evidence["moot"] == "before-effect" and other.evidence["resume"] is None


def test_a_flood_of_output_is_kept_bounded_and_undecodable_bytes_are_replaced(misbehaving, runtime):
    result = run_point(misbehaving("floods"), "after-effect", FAST, runtime)
    assert result.verdict is Verdict.FAIL
    assert result.message.startswith("resume crashed (exit code 3)")
    assert "bad bytes: \ufffd" in result.stderr
    assert len(result.stderr) < 100_000


def test_a_resume_that_never_exits_fails_as_hung_and_is_killed(misbehaving, agent_forks):
    result = run_point(misbehaving("hangs-on-resume"), "after-effect", Settings(timeout=3), Runtime(forks=agent_forks))
    assert result.verdict is Verdict.FAIL
    assert result.message == "resume hung: killed after 3s"
    assert "resume is stuck" in result.stderr
    assert result.evidence["resume"]["timed_out"] is True


def test_the_tail_of_a_flood_is_bounded(misbehaving):
    from plugpull.process import OUTPUT_TAIL_BYTES, spawn

    running = spawn([sys.executable, "-c", "import sys; sys.stdout.write('y' * (8 << 20))"], env=None, cwd=None)
    outcome = running.wait(30)
    assert outcome.returncode == 0
    assert len(outcome.stdout) < OUTPUT_TAIL_BYTES + 100
    assert outcome.stdout.startswith("[... ") and outcome.stdout.endswith("y" * 100)


def test_a_resume_that_exits_0_and_does_nothing_fails_at_after_effect(fake_framework, runtime):
    # The effect was recorded before the kill, so the count alone reads 1: only the missing
    # result shows that the resumed run never finished. On a finished run its resume reports the
    # result, so the recovery protocol holds and the line is the recovery's FAIL.
    result = run_point(fake_framework("idle-when-unfinished"), "after-effect", FAST, runtime)
    assert result.verdict is Verdict.FAIL
    assert result.message == "run did not finish: resume exited 0 without a result"
    assert result.evidence["counts"] == {"charge": 1}
    assert result.evidence["golden"] == [{"charge": "done"}] and result.evidence["resumed"] == []


def test_a_resume_that_does_nothing_even_on_a_finished_run_is_an_error_at_every_point(fake_framework, runtime):
    for point in ("before-effect", "after-effect"):
        result = run_point(fake_framework("idle-resume"), point, FAST, runtime)
        assert result.verdict is Verdict.ERROR
        assert result.message == (
            "resume does not work even on a finished run: it exited 0 without a result (start's clean run reported one)"
        )
        assert result.evidence["resume"] is None  # nothing was killed: no kill can be judged
        assert result.evidence["clean"]["finished_resume"]["returncode"] == 0


def test_a_resume_wrapper_pointing_at_a_missing_script_is_an_error_at_every_point(tmp_path):
    # A user's wrapper: start runs the agent, resume a script that is not there (python exits 2).
    agent = AGENTS / "fake_framework.py"
    wrapper = f'if [ "$1" = start ]; then exec "$0" {agent} stable-key start; else exec "$0" {agent}.missing stable-key resume; fi'
    target = Target(name="agent", argv=("sh", "-c", wrapper, sys.executable))
    runtime = Runtime()
    results = [run_point(target, point, FAST, runtime) for point in ("before-effect", "after-effect")]
    for result in results:
        assert result.verdict is Verdict.ERROR, result.message
        assert result.message.startswith("resume does not work even on a finished run: exit code 2: ")
        assert "can't open file" in result.message and "fake_framework.py.missing" in result.message
        assert "can't open file" in result.stderr  # the resume's stderr goes under the line


def test_a_recovery_that_crashes_only_after_a_kill_stays_a_fail(fake_framework, runtime):
    result = run_point(fake_framework("crash-when-unfinished"), "after-effect", FAST, runtime)
    assert result.verdict is Verdict.FAIL
    assert result.message == "resume crashed (exit code 1); the provider saw exactly 1 charge"
    assert result.evidence["clean"]["finished_resume"]["returncode"] == 0
    assert "recovery crashed" in result.stderr


def test_a_resume_that_makes_a_new_effect_on_a_finished_run_fails_without_any_fault(agent_forks):
    # two_tools.py's resume runs both tools again, keyed: it asks again and adds no effect.
    keyed = two_tools("sequential")
    result = run_point(keyed, "after-effect", FAST, Runtime(forks=agent_forks))
    assert result.verdict is Verdict.PASS, result.message
    redo = Target(name="agent", argv=(sys.executable, "-c", NEW_EFFECT_ON_RESUME))
    result = run_point(redo, "after-effect", FAST, Runtime())
    assert result.verdict is Verdict.FAIL
    assert result.message == (
        "without any fault: effect duplicated: resume on the finished clean run (no kill) made new effects: 1 charge"
    )


# An agent that keeps no state: resume charges again (no key) even when the run had finished.
NEW_EFFECT_ON_RESUME = (
    "from plugpull import record_effect, record_result; record_effect('charge'); record_result({'charged': True})"
)


def test_a_resume_that_reports_another_result_fails_with_the_difference(fake_framework, runtime):
    result = run_point(fake_framework("phase-result"), "after-effect", FAST, runtime)
    assert result.verdict is Verdict.FAIL
    assert result.message == ('result differs from the clean run: $.finished_in: clean "start", resumed "resume"')
    assert result.evidence["resumed"] == [{"charge": "done", "finished_in": "resume"}]


def test_a_resumed_run_with_the_golden_result_passes_and_says_so(fake_framework, runtime):
    result = run_point(fake_framework("stable-key"), "after-effect", FAST, runtime)
    assert result.verdict is Verdict.PASS
    assert result.message == "the provider saw exactly 1 charge; the result equals the clean run's"


def test_fields_a_target_names_are_left_out_of_the_comparison(fake_framework, runtime):
    from dataclasses import replace

    target = replace(fake_framework("phase-result"), result_ignore=("finished_in",))
    result = run_point(target, "after-effect", FAST, runtime)
    assert result.verdict is Verdict.PASS, result.message
    assert result.evidence["result_ignore"] == ["finished_in"]


def test_an_agent_that_reports_no_result_keeps_the_effect_rule_and_is_told_how_to_check_completion(
    fake_framework, runtime
):
    result = run_point(fake_framework("silent"), "after-effect", FAST, runtime)
    assert result.verdict is Verdict.PASS, result.message
    assert result.message == (
        "the provider saw exactly 1 charge; completion not checked: the clean run reported no result "
        "(call plugpull.record_result(value) where a run ends to check it)"
    )


@pytest.mark.parametrize("how", ["setsid-helper", "double-fork-helper"])
@pytest.mark.parametrize("point", ["before-effect", "after-effect"])
def test_a_helper_that_left_the_group_and_outlived_the_kill_is_an_error_and_is_killed(
    how, point, processes_carrying, runtime
):
    marker = uuid.uuid4().hex[:12]
    result = run_point(misbehaving_marked(how, marker), point, FAST, runtime)
    assert result.verdict is Verdict.ERROR, result.message
    assert re.fullmatch(rf"a process of the run outlived the kill: pid \d+ \(.*{marker}.*\)", result.message)
    # The helper's tool was the killed caller (the kill itself is proven); resume never ran.
    assert result.evidence["proof"]["caller_group"] == result.evidence["proof"]["group"]
    assert result.evidence["resume"] is None
    [helper] = result.evidence["start"]["outlived"]
    assert helper["pid"] != result.evidence["proof"]["group"]
    assert processes_carrying(marker) == []


def test_a_resume_that_leaves_a_helper_running_is_an_error_and_the_helper_is_killed(processes_carrying, runtime):
    marker = uuid.uuid4().hex[:12]
    result = run_point(misbehaving_marked("leaves-helper", marker), "after-effect", FAST, runtime)
    assert result.verdict is Verdict.ERROR, result.message
    assert re.fullmatch(rf"a process of the run outlived resume: pid \d+ \(.*sleep\(600\) {marker}\)", result.message)
    assert result.evidence["start"]["outlived"] == [] and result.evidence["clean"]["start"]["outlived"] == []
    assert processes_carrying(marker) == []


def test_the_orphans_plugpull_adopts_are_reaped(runtime):
    # Only the run's own: this process is a subreaper for the whole session, and what other tests' servers
    # leave (fusermount3's daemon, a restate-server or postgres child) is adopted too and is theirs to reap.
    before = {int(entry) for entry in filter(str.isdigit, os.listdir("/proc"))}
    marker = uuid.uuid4().hex[:12]
    run_point(misbehaving_marked("double-fork-helper", marker), "after-effect", FAST, runtime)
    me = os.getpid()
    zombies = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == me and int(entry) not in before:
            zombies.append(int(entry))
    assert zombies == []


def two_tools(how: str) -> Target:
    return forked_agent("two_tools", how)


@pytest.mark.parametrize("state", ["finished", "running"])
def test_a_kill_beside_a_sibling_in_threads_is_proven_and_judged(state, agent_forks):
    settings = Settings(timeout=30, aim=Aim(hold=("charge", 1), sibling=("email", state)))
    result = run_point(two_tools("threads"), "after-effect", settings, Runtime(forks=agent_forks))
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    sibling = result.evidence["sibling"]
    assert sibling["ready"] and sibling["call"]["group"] == result.evidence["proof"]["group"]
    assert (sibling["call"]["held_at"] == "after-effect") is (state == "running")


def test_a_sibling_that_runs_only_after_the_held_tool_is_an_error(agent_forks):
    # charge is held, and email comes only once charge returns: email can be neither finished nor running.
    settings = Settings(timeout=1, aim=Aim(hold=("charge", 1), sibling=("email", "running")))
    result = run_point(two_tools("sequential"), "before-effect", settings, Runtime(forks=agent_forks))
    assert result.verdict is Verdict.ERROR
    assert result.message.startswith("sibling email never called record_effect while charge was held")


def background_saver(how: str) -> Target:
    return forked_agent("background_saver", how)


def test_a_kill_while_a_background_save_is_withheld_fails_every_time(agent_forks):
    # The plan holding the charge's key is never saved: resume draws a new key and charges again.
    settings = Settings(timeout=30, aim=Aim(saves=(("plan-save", 1, "withheld"),)))
    for _ in range(3):
        result = run_point(background_saver("background"), "after-effect", settings, Runtime(forks=agent_forks))
        assert result.verdict is Verdict.FAIL, (result.message, result.stderr)
        assert result.evidence["counts"] == {"charge": 2}
        (save,) = result.evidence["saves"]
        assert save["ready"] and save["open"] and save["mark"]["main_thread"] is False
        assert save["mark"]["group"] == result.evidence["proof"]["group"]


def test_a_kill_once_the_background_save_landed_passes_every_time(agent_forks):
    settings = Settings(timeout=30, aim=Aim(saves=(("plan-save", 1, "landed"),)))
    for _ in range(3):
        result = run_point(background_saver("background"), "after-effect", settings, Runtime(forks=agent_forks))
        assert result.verdict is Verdict.PASS, (result.message, result.stderr)
        assert result.evidence["save_specs"] == ["plan-save:1:landed"]
        assert result.evidence["saves"][0]["mark"]["edge"] == "after"


def test_a_save_the_run_waits_for_cannot_be_withheld(agent_forks):
    settings = Settings(timeout=2, aim=Aim(saves=(("plan-save", 1, "withheld"),)))
    result = run_point(background_saver("main-thread"), "after-effect", settings, Runtime(forks=agent_forks))
    assert result.verdict is Verdict.ERROR
    assert result.message.endswith(
        "plan-save 1 was withheld on the process's main thread, which held up the run "
        "(a save the run waits for cannot be withheld)"
    )


def test_a_save_the_agent_never_marks_is_an_error(agent_forks):
    settings = Settings(timeout=2, aim=Aim(saves=(("plan-save", 1, "withheld"),)))
    result = run_point(background_saver("unmarked"), "after-effect", settings, Runtime(forks=agent_forks))
    assert result.verdict is Verdict.ERROR
    assert result.message.startswith("plan-save 1 was not withheld at the kill: its save had not begun")
