"""resume-after-approval on a tiny fake framework: real processes, a real gate, a real SIGKILL."""

import re
import signal
import sys
import uuid
from pathlib import Path

import pytest

from plugpull.results import Result, Verdict
from plugpull.scenarios import Runtime, Settings
from plugpull.scenarios.resume_after_approval import POINTS, SCENARIO, run_point
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
    # The clean approval is refused: every later point fails without any fault (or is moot), none is ERROR.
    "in-memory": ["FAIL", "FAIL", "FAIL", "FAIL", "FAIL"],
    "no-claim": ["PASS", "FAIL", "FAIL", "PASS", "PASS"],
    "racy-claim": ["PASS", "PASS", "FAIL", "PASS", "PASS"],
    "no-key": ["PASS", "PASS", "PASS", "PASS", "FAIL"],
    "stuck": ["PASS", "PASS", "PASS", "FAIL", "FAIL"],
    # recover exits 0 and finishes nothing: the effect alone (recorded before the kill) would pass.
    "idle-recover": ["PASS", "PASS", "PASS", "FAIL", "FAIL"],
    # The approval is lost on resume (exit 5): the clean approval already shows it.
    "pauses-again": ["FAIL", "FAIL", "FAIL", "FAIL", "FAIL"],
    "recover-pauses-again": ["PASS", "PASS", "PASS", "FAIL", "FAIL"],
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
    settings = Settings(timeout=10, options={"resume-after-approval": SCENARIO.Options(racers=2)})
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


def test_an_approval_lost_on_resume_reads_paused_again_and_the_other_points_are_moot(approval_framework, agent_forks):
    # A fresh runtime: its first line (approve-elsewhere, as the CLI orders them) holds the FAIL.
    runtime = Runtime(forks=agent_forks)
    first, *later = [run_point(approval_framework("pauses-again"), point, SETTINGS, runtime) for point in POINTS]
    assert (first.verdict, first.message) == (
        Verdict.FAIL,
        "effect lost: the run paused again instead of running the approved tool (approve exited 5); "
        "the provider saw no effect",
    )
    assert first.evidence["without_fault"] is True
    assert "paused for approval again: the approval was lost" in first.stderr
    for result in later:
        assert (result.verdict, result.message) == (
            Verdict.FAIL,
            "moot: the clean run already failed without any fault (see approve-elsewhere)",
        ), result.point
        assert result.evidence["moot"] == "approve-elsewhere" and result.stderr == ""
        # Nothing was run after the clean approval: a moot line holds no fault of its own.
        assert result.evidence["approvals"] == [] and result.evidence["recover"] is None


@pytest.mark.parametrize("jobs", [1, 5])
def test_the_first_planned_line_holds_the_clean_runs_fail_however_the_lines_finish(
    approval_framework, agent_forks, jobs
):
    # The slowest line (five approvers at the gate) planned first, five lines at once: the FAIL goes with the plan,
    # not with whichever line ends first.
    from dataclasses import replace

    from plugpull.suite import run_plan

    target = replace(approval_framework("pauses-again"), scenario="resume-after-approval")
    order = ["racing-resumers", *reversed([p for p in POINTS if p != "racing-resumers"])]
    results = run_plan([(target, point) for point in order], SETTINGS, Runtime(forks=agent_forks), jobs=jobs)
    assert [r.point for r in results] == order
    first, *later = results
    assert first.verdict is Verdict.FAIL and first.evidence["without_fault"] is True
    assert first.message.startswith("without any fault: a clean approval"), first.message
    for result in later:
        assert result.evidence.get("moot") == order[0], (result.point, result.message)
        assert result.message == f"moot: the clean run already failed without any fault (see {order[0]})"


def test_a_notebooks_shuffled_lines_give_the_clean_runs_fail_to_the_first_line(approval_framework, agent_forks):
    # Seed 0 runs racing-resumers first (random.Random(0) shuffles 5 lines to [2, 1, 0, 4, 3]); the record's first
    # line, approve-elsewhere, still holds the FAIL, so a record reads the same whatever the seed.
    from dataclasses import replace

    from plugpull.report.kernel import notebook

    target = replace(approval_framework("pauses-again"), scenario="resume-after-approval")
    results, _ = notebook.run_lines([target], list(POINTS), repeats=1, seed=0, timeout=30)
    first, *later = results
    assert first.point == "approve-elsewhere" and first.evidence["without_fault"] is True, first.message
    assert [r.evidence.get("moot") for r in later] == ["approve-elsewhere"] * 4


def test_a_later_point_alone_fails_without_any_fault_when_the_clean_approval_pauses_again(
    approval_framework, agent_forks
):
    result = run_point(approval_framework("pauses-again"), "killed-after-effect", SETTINGS, Runtime(forks=agent_forks))
    assert (result.verdict, result.message) == (
        Verdict.FAIL,
        "without any fault: a clean approval (start + approve, no fault): effect lost: the run paused again instead "
        "of running the approved tool (approve exited 5); the provider saw no effect",
    )
    assert result.evidence["without_fault"] is True and "moot" not in result.evidence
    assert "paused for approval again" in result.stderr  # the clean approval's


def test_a_recover_that_pauses_again_says_so_with_the_counts(approval_framework, judged):
    before = judged(approval_framework("recover-pauses-again"), "killed-before-effect")
    assert before.message == (
        "effect lost: the run paused again instead of running the approved tool (recover exited 5); "
        "the provider saw 0 refund (expected 1)"
    )
    after = judged(approval_framework("recover-pauses-again"), "killed-after-effect")
    assert after.message == (
        "the run paused again instead of finishing (recover exited 5); the provider saw exactly 1 refund"
    )
