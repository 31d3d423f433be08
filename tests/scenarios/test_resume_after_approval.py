"""resume-after-approval on a tiny fake framework: real processes, a real gate, a real SIGKILL."""

import re
import signal
import sys
import uuid
from pathlib import Path

import pytest

from plugpull.results import Result, Verdict
from plugpull.scenarios import Runtime, Settings
from plugpull.scenarios.resume_after_approval import POINTS, run_point
from plugpull.targets import Target

AGENTS = Path(__file__).parent.parent / "agents"

# One Settings and one Runtime for the module: each target's clean approval is run once and shared.
SETTINGS = Settings(timeout=30)


@pytest.fixture(scope="module")
def judged(agent_forks):
    """run_point with SETTINGS and the module's runtime, once per (command, point): the table's line and the tests
    below that read more of the same run (its evidence, its message) share it, as they share the clean approval.
    The fake framework's phases (python -m approval_framework) fork from the module's server (tests/forked_agents.py):
    each is still its own group, its kill a real SIGKILL; the racers are real processes waiting at the gate."""
    runtime = Runtime(forks=agent_forks)
    runs: dict[tuple[tuple[str, ...], str], Result] = {}

    def judge(target: Target, point: str) -> Result:
        key = (target.argv, point)
        if key not in runs:
            runs[key] = run_point(target, point, SETTINGS, runtime)
        return runs[key]

    return judge


# What each way of building the framework gets at each boundary (the fake's docstring).
TABLE = {
    "correct": ["PASS", "PASS", "PASS", "PASS", "PASS"],
    "in-memory": ["FAIL", "ERROR", "ERROR", "ERROR", "ERROR"],
    "no-claim": ["PASS", "FAIL", "FAIL", "PASS", "PASS"],
    "racy-claim": ["PASS", "PASS", "FAIL", "PASS", "PASS"],
    "no-key": ["PASS", "PASS", "PASS", "PASS", "FAIL"],
    "stuck": ["PASS", "PASS", "PASS", "FAIL", "FAIL"],
    # recover exits 0 and finishes nothing: the effect alone (recorded before the kill) would pass.
    "idle-recover": ["PASS", "PASS", "PASS", "FAIL", "FAIL"],
}


@pytest.mark.parametrize("how, point", [(h, p) for h in TABLE for p in POINTS])
def test_each_framework_gets_its_verdict_at_each_boundary(approval_framework, how, point, judged):
    result = judged(approval_framework(how), point)
    assert result.verdict.value == TABLE[how][POINTS.index(point)], result.message


def test_racing_approvers_all_wait_at_the_gate_and_exactly_one_runs_the_tool(approval_framework, judged):
    result = judged(approval_framework("correct"), "racing-resumers")
    ev = result.evidence
    assert ev["gated"] == ev["racers"] == 5
    assert sorted(a["effect_calls"] for a in ev["approvals"]) == [0, 0, 0, 0, 1]
    assert sorted(a["outcome"]["returncode"] for a in ev["approvals"]) == [0, 3, 3, 3, 3]


def test_a_killed_approval_is_proven_before_recover_runs(approval_framework, judged):
    result = judged(approval_framework("correct"), "killed-after-effect")
    ev = result.evidence
    assert ev["approvals"][0]["outcome"]["returncode"] == -signal.SIGKILL
    assert ev["proof"]["caller_group"] == ev["proof"]["group"]
    assert ev["recover"]["outcome"]["returncode"] == 0 and ev["counts"] == {"refund": 1}


def test_a_recover_that_exits_0_and_finishes_nothing_fails_although_the_effect_count_is_1(approval_framework, judged):
    result = judged(approval_framework("idle-recover"), "killed-after-effect")
    assert (result.verdict, result.message) == (
        Verdict.FAIL,
        "run did not finish: recover exited 0 without a result",
    )
    ev = result.evidence
    assert ev["counts"] == {"refund": 1} and ev["golden"] == [{"refund": "done"}] and ev["recover"]["results"] == []


def test_the_racer_that_ran_the_tool_reports_the_golden_result(approval_framework, judged):
    result = judged(approval_framework("correct"), "racing-resumers")
    assert result.verdict is Verdict.PASS and result.message.endswith("; the result equals the clean run's")
    assert result.evidence["racer_outcomes"] == {"ran the tool": 1, "refused": 4}


def test_a_stuck_run_says_what_the_framework_said(approval_framework, judged):
    result = judged(approval_framework("stuck"), "killed-before-effect")
    assert result.message.startswith(
        "stuck: the run can no longer be finished: recover refused (exit 3): refused: already resumed"
    )
    assert "effect lost: the provider saw 0 refund" in result.message


def test_approvers_that_never_call_the_gate_prove_no_race(misbehaving, agent_forks):
    # misbehaving "pause-no-gate" pauses and approves correctly but never calls gate().
    settings = Settings(timeout=10, racers=2)
    result = run_point(misbehaving("pause-no-gate"), "racing-resumers", settings, Runtime(forks=agent_forks))
    assert result.verdict is Verdict.ERROR
    assert result.message.startswith("only 0 of 2 approvers were waiting at plugpull's gate")


def marked(how: str, marker: str) -> Target:
    """approval_framework.py with ``marker`` on every command line it starts, so /proc shows its processes."""
    return Target(name="agent", argv=(sys.executable, str(AGENTS / "approval_framework.py"), how, marker))


@pytest.mark.parametrize("point", ["killed-before-effect", "killed-after-effect"])
def test_a_helper_of_the_approving_process_that_outlives_its_kill_is_an_error(point, processes_carrying):
    marker = uuid.uuid4().hex[:12]
    result = run_point(marked("setsid-helper", marker), point, Settings(timeout=30))
    assert result.verdict is Verdict.ERROR, result.message
    assert re.fullmatch(rf"a process of the run outlived the kill: pid \d+ \(.*{marker}\)", result.message)
    assert result.evidence["recover"] is None
    assert processes_carrying(marker) == []


def test_a_recover_that_leaves_a_helper_running_is_an_error(processes_carrying):
    marker = uuid.uuid4().hex[:12]
    result = run_point(marked("recover-leaves-helper", marker), "killed-after-effect", Settings(timeout=30))
    assert result.verdict is Verdict.ERROR, result.message
    assert re.fullmatch(rf"a process of the run outlived recover: pid \d+ \(.*sleep\(600\) {marker}\)", result.message)
    assert processes_carrying(marker) == []
