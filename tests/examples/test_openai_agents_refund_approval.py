"""The Agents SDK approval example under resume-after-approval: real RunState saved and restored, real SIGKILL."""

import pytest

import shared_forks
from installed import requires
from plugpull.rendering import summary_of
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.scenarios.resume_after_approval import run_point
from plugpull.targets import Target, python_module

pytestmark = [requires("agents"), shared_forks.group("agents")]

SETTINGS = Settings(timeout=90)


AGENT = Target(
    name="agent",
    argv=python_module("plugpull.examples.openai_agents_refund_approval"),
    scenario="resume-after-approval",
)


def test_a_second_approval_runs_the_tool_again_and_the_tool_call_id_keeps_one_refund(forked):
    result = run_point(AGENT, "double-resume", SETTINGS, forked)
    assert result.verdict is Verdict.FAIL, (result.message, result.stderr)
    assert (
        result.message
        == "the second approval ran the approved tool again (exit code 0); the provider saw exactly 1 refund"
    )
    assert (
        summary_of(result)
        == "the second approve called refund once (1 with a key already recorded, so not counted again)"
    )
    assert result.framework == "openai-agents" and result.version


@pytest.mark.parametrize("point", ["killed-before-effect", "killed-after-effect"])
def test_recovering_the_saved_approved_state_refunds_once(point, forked):
    result = run_point(AGENT, point, SETTINGS, forked)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    # The restored RunState carries the model's call, so recover asks with the same tool call id.
    keys = {c["key"] for c in result.evidence["calls"] if c["name"] == "refund"}
    assert len(keys) == 1 and next(iter(keys)).startswith("call_")
