"""resume-after-approval on the real frameworks at their default pins: real stores, real SIGKILL.

Built-in targets are forked from pre-imported servers (the framework import is paid once per pytest process,
tests/shared_forks.py), so the five boundaries of four targets fit the test budget.
"""

import signal

import pytest

import shared_forks
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.scenarios.resume_after_approval import POINTS, run_point
from plugpull.targets import BUILT_INS
from plugpull.targets.families.langgraph import LANGGRAPH_6663, LANGGRAPH_DOUBLE_TEXTING, LANGGRAPH_INTERRUPTS
from plugpull.targets.families.openai_agents import OPENAI_AGENTS_HITL

SETTINGS = Settings(timeout=60)


def verdicts(name, forked, points=POINTS, option="durability"):
    if not BUILT_INS[name].installed():
        pytest.skip(f"{BUILT_INS[name].module} is not installed")
    return {
        (target.options.get(option), point): run_point(target, point, SETTINGS, forked)
        for target in BUILT_INS[name].variants
        for point in points
    }


@shared_forks.group_of_built_in("langgraph-approval")
def test_langgraph_lets_every_racing_approver_and_a_recovery_refund_again(forked):
    results = verdicts("langgraph-approval", forked)
    for durability in ("sync", "async"):
        line = {point: results[(durability, point)] for point in POINTS}
        assert line["approve-elsewhere"].verdict is Verdict.PASS, line["approve-elsewhere"].message
        # A second Command(resume=...) after the run finished runs nothing.
        assert line["double-resume"].message.startswith("the second approval was a no-op")
        racing = line["racing-resumers"]
        assert racing.evidence["gated"] == 5, racing.message
        # A race, one sample: released together at the gate, an approver that loads the checkpoint after another
        # finished its resume finds no pending interrupt and runs nothing (as double-resume does). Either outcome is
        # held to its shape; the claim's records say how often which (findings/resume-after-approval).
        outcomes, refunds = racing.evidence["racer_outcomes"], racing.evidence["counts"]["refund"]
        assert outcomes.get("ran the tool", 0) == refunds, (outcomes, racing.message)
        if racing.verdict is Verdict.PASS:
            assert (refunds, outcomes) == (1, {"ran the tool": 1, "no-op": 4}), racing.message
            assert racing.notes == []
        else:
            assert racing.verdict is Verdict.FAIL and refunds >= 2, racing.message
            assert set(outcomes) <= {"ran the tool", "no-op"}, outcomes
            assert racing.message.startswith(f"{refunds} of 5 approvers ran the approved tool"), racing.message
            assert [n["url"] for n in racing.notes] == [LANGGRAPH_INTERRUPTS, LANGGRAPH_DOUBLE_TEXTING, LANGGRAPH_6663]
        assert line["killed-before-effect"].verdict is Verdict.PASS, line["killed-before-effect"].message
        after = line["killed-after-effect"]
        assert after.evidence["approvals"][0]["outcome"]["returncode"] == -signal.SIGKILL
        assert after.message == "effect duplicated: the provider saw 2 refund (expected 1)"
        assert [n["text"] for n in after.notes] == [
            "the node that called interrupt() runs again from its start on resume"
        ]
        for point in ("approve-elsewhere", "double-resume", "killed-before-effect"):
            assert line[point].notes == [], (point, line[point].notes)


# Its tests are in the Agents SDK's xdist group, all of them: another group's worker would run it again.
@pytest.fixture(scope="module")
def openai_agents(forked):
    return verdicts("openai-agents-approval", forked, option="design")


@shared_forks.group_of_built_in("openai-agents-approval")
def test_openai_agents_runs_the_approved_tool_for_every_restore_of_the_saved_state(openai_agents):
    line = {point: openai_agents[("plain", point)] for point in POINTS}
    assert line["approve-elsewhere"].verdict is Verdict.PASS, line["approve-elsewhere"].message
    assert line["double-resume"].message.startswith(
        "the second approval ran the approved tool again (exit code 0); effect duplicated: the provider saw 2 refund"
    )
    assert line["racing-resumers"].message.startswith("5 of 5 approvers ran the approved tool")
    assert line["killed-before-effect"].verdict is Verdict.PASS, line["killed-before-effect"].message
    assert line["killed-after-effect"].message.startswith("effect duplicated: the provider saw 2 refund")
    for point in ("double-resume", "racing-resumers", "killed-after-effect"):
        assert [n["url"] for n in line[point].notes] == [OPENAI_AGENTS_HITL], point
    for point in ("approve-elsewhere", "killed-before-effect"):
        assert line[point].notes == [], point


@shared_forks.group_of_built_in("fastaiagent")
def test_fastaiagent_refuses_a_second_approval_but_a_killed_approval_leaves_the_run_stuck(forked):
    results = verdicts("fastaiagent", forked)
    line = {point: results[(None, point)] for point in POINTS}
    assert line["approve-elsewhere"].verdict is Verdict.PASS, line["approve-elsewhere"].message
    assert line["double-resume"].message.startswith("the second approval was refused (exit 3)")
    racing = line["racing-resumers"].evidence
    # The claim holds: one approver runs the tool. A loser may see AlreadyResumed or, while
    # another holds SQLite's write lock, "database is locked" (a crash, so the verdict varies).
    assert sorted(a["effect_calls"] for a in racing["approvals"]) == [0, 0, 0, 0, 1]
    assert racing["counts"] == {"refund": 1}
    for approval in racing["approvals"]:
        assert approval["outcome"]["returncode"] in (0, 1, 3)
    # A loser's "database is locked" crash is a FAIL the claim note does not explain.
    assert line["racing-resumers"].notes == []
    for point, effects in (
        ("killed-before-effect", "effect lost: the provider saw 0 refund"),
        ("killed-after-effect", "the provider saw exactly 1 refund"),
    ):
        result = line[point]
        assert result.verdict is Verdict.FAIL
        assert result.message.startswith(
            "stuck: the run can no longer be finished: recover exit code 4: "
            "fastaiagent_approval: ChainCheckpointError without Resume; "
            "AlreadyResumed with Resume(approved=True)"
        ), result.message
        assert effects in result.message
        assert [n["condition"] for n in result.notes] == [
            "recover exited 4 saying 'ChainCheckpointError without Resume; AlreadyResumed with Resume(approved=True)'"
        ]
        assert "claim" not in result.message


@shared_forks.group_of_built_in("openai-agents-approval")
def test_an_agents_sdk_app_that_claims_the_stored_pause_and_keys_the_refund_refunds_once_at_every_point(openai_agents):
    # the plain design's FAILs are the app's; the SDK allows this one (an atomic claim of the
    # stored pause, ToolContext.tool_call_id as the refund's key, kept in the saved RunState).
    line = {point: openai_agents[("claim-and-key", point)] for point in POINTS}
    for point, result in line.items():
        assert result.verdict is Verdict.PASS, (point, result.message)
        assert result.evidence["counts"] == {"refund": 1}, point
    assert line["double-resume"].message.startswith("the second approval was refused (exit 3)")
    assert line["racing-resumers"].message.startswith("1 of 5 approvers ran the approved tool, 4 refused (exit 3)")
    # Killed after the refund, recover runs the tool again with the same key: the provider dedupes it.
    after = line["killed-after-effect"].evidence
    assert after["approvals"][0]["outcome"]["returncode"] == -signal.SIGKILL
