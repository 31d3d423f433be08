"""tool-error against real agent processes: the held effect call raises in the tool (plugpull.ToolFault), before or
after the provider recorded it, and what the run did next is counted and read from its result."""

import shlex
import sys
from pathlib import Path

import pytest

from plugpull import suite
from plugpull.aim import Aim
from plugpull.results import Verdict
from plugpull.scenarios import Runtime, Settings
from plugpull.targets import agent

AGENTS = Path(__file__).parent.parent / "agents"
TOOL_ERROR_AGENT = str(AGENTS / "tool_error_agent.py")


def lines(handling: str) -> list[tuple[str, Verdict, str]]:
    target = agent(shlex.join([sys.executable, TOOL_ERROR_AGENT, handling]), "tool-error")
    results = suite.run_scenario(target, settings=Settings(timeout=30), runtime=Runtime())
    return [(r.point, r.verdict, r.message) for r in results]


def verdicts(handling: str) -> list[Verdict]:
    return [v for _, v, _ in lines(handling)]


def test_a_retry_without_a_key_after_the_effect_doubles_it_and_with_the_call_id_as_key_does_not():
    assert verdicts("retry") == [Verdict.PASS, Verdict.FAIL, Verdict.FAIL]
    assert verdicts("retry-keyed") == [Verdict.PASS, Verdict.PASS, Verdict.PASS]
    (_, _, message) = lines("retry")[1]
    assert message == (
        "after refund raised ToolFault after its effect: effect duplicated: the provider saw 2 refund (expected 1); "
        "refund was done before the fault and again by start"
    )


def test_a_run_stopped_by_the_error_is_resumed_by_the_framework_and_judged_after_resume():
    got = lines("crash")
    assert [v for _, v, _ in got] == [Verdict.PASS, Verdict.FAIL, Verdict.FAIL]
    assert "effect duplicated: the provider saw 2 refund" in got[1][2]
    assert verdicts("crash-keyed") == [Verdict.PASS, Verdict.PASS, Verdict.PASS]


def test_a_run_that_says_a_refund_failed_is_believed_before_the_effect_and_caught_after_it():
    got = lines("report")
    assert [v for _, v, _ in got] == [Verdict.PASS, Verdict.FAIL, Verdict.FAIL]
    assert got[0][2] == "after refund raised ToolFault before its effect: refund not done, and the run says it failed"
    assert got[1][2] == (
        "after refund raised ToolFault after its effect: the history says refund failed; the provider saw it done "
        "(its user would retry a done refund)"
    )
    assert got[2][2].startswith("after refund raised ToolTimeout after its effect: the history says refund failed")


def test_a_history_that_claims_a_failed_call_succeeded_is_caught():
    got = lines("claims-done")
    assert got[0][1] is Verdict.FAIL
    assert got[0][2] == (
        "after refund raised ToolFault before its effect: the history claims refund succeeded; the provider saw none"
    )


def test_a_lost_effect_without_claims_is_an_error_not_a_pass():
    got = lines("no-claims")
    assert got[0][1] is Verdict.ERROR and "the result does not say whether the run claims it done" in got[0][2]


@pytest.mark.parametrize("handling", ["retry-keyed"])
def test_the_fault_is_on_the_held_call_and_a_later_call_is_answered(handling):
    target = agent(shlex.join([sys.executable, TOOL_ERROR_AGENT, handling]), "tool-error")
    (result,) = suite.run_scenario(target, ["raise-after-effect"], settings=Settings(timeout=30), runtime=Runtime())
    calls = [c for c in result.evidence["calls"] if c["phase"] == "start"]
    assert [(c["held_at"], c.get("faulted"), c["recorded"]) for c in calls] == [
        ("after-effect", "ToolFault", True),
        (None, None, False),  # the retry with the same key: answered, one effect
    ]


def test_a_finding_runs_parallel_one_raised_only_on_targets_with_two_calls_in_a_turn():
    from plugpull.report.kernel.notebook import _scenario_has
    from plugpull.targets import Target

    one = Target(name="one", argv=("a",), scenario="tool-error")
    two = Target(
        name="two", argv=("a",), scenario="tool-error", aim=Aim(hold=("refund", 1), sibling=("send_email", "finished"))
    )
    assert not _scenario_has("tool-error", "parallel-one-raised", one)
    assert _scenario_has("tool-error", "parallel-one-raised", two) and _scenario_has(
        "tool-error", "raise-after-effect", one
    )


def test_parallel_one_raised_asked_of_a_one_tool_agent_is_an_error_saying_why():
    target = agent(shlex.join([sys.executable, TOOL_ERROR_AGENT, "retry"]), "tool-error")
    (result,) = suite.run_scenario(target, ["parallel-one-raised"], settings=Settings(timeout=30), runtime=Runtime())
    assert result.verdict is Verdict.ERROR and result.message.startswith("parallel-one-raised needs two tool calls")


def test_a_kill_while_the_framework_handles_the_raise_is_recovered_by_resume_and_judged_on_its_effects():
    # slow-: the handler takes 2 s, so the SIGKILL sent when the client says it raises lands in the handling.
    point = "raise-after-effect-then-sigkill"
    unkeyed, keyed = (
        agent(shlex.join([sys.executable, TOOL_ERROR_AGENT, handling]), "tool-error")
        for handling in ("slow-report", "slow-crash-keyed")
    )
    (lost,) = suite.run_scenario(unkeyed, [point], settings=Settings(timeout=30), runtime=Runtime())
    assert lost.verdict is Verdict.FAIL
    assert lost.message == (
        "after refund raised ToolFault after its effect and start was SIGKILLed as it raised: effect duplicated: the "
        "provider saw 2 refund (expected 1); refund was done before the fault and again by resume"
    )
    assert lost.evidence["raised"] is True and lost.evidence["start"]["returncode"] == -9
    (kept,) = suite.run_scenario(keyed, [point], settings=Settings(timeout=30), runtime=Runtime())
    assert kept.verdict is Verdict.PASS and "SIGKILLed as it raised" in kept.message


def test_a_hung_call_answered_late_is_waited_for_without_a_timeout_and_doubled_by_one_that_gives_up():
    point = "hang-after-effect"

    def run(handling):
        target = agent(shlex.join([sys.executable, TOOL_ERROR_AGENT, handling]), "tool-error")
        (result,) = suite.run_scenario(target, [point], settings=Settings(timeout=30), runtime=Runtime())
        return result

    waited = run("retry")  # no timeout of its own: the reply comes at the hang limit and the tool goes on with it
    assert waited.verdict is Verdict.PASS, waited.message
    assert waited.evidence["hung_until"] == "the 5s limit" and waited.evidence["hung_for"] >= 5
    gave_up = run("timeout-retry")  # its own 0.5 s timeout: a new call while the first still waits
    assert gave_up.verdict is Verdict.FAIL
    assert gave_up.message.startswith("after refund's call hung after its effect (answered ")
    assert "at the next effect call): effect duplicated: the provider saw 2 refund (expected 1)" in gave_up.message
    assert gave_up.evidence["hung_for"] < 5
    keyed = run("timeout-retry-keyed")  # the same call's key on the retry: one refund
    assert keyed.verdict is Verdict.PASS, keyed.message
