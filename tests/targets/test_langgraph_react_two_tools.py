"""The langgraph-siblings agent under kill-mid-tool: real create_react_agent, SqliteSaver, parallel tools, SIGKILL."""

import pytest

from installed import requires
from plugpull.aim import Aim
from plugpull.rendering import held_call
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.scenarios.kill_mid_tool import run_point
from plugpull.targets import Target, python_module

pytestmark = requires("langgraph.prebuilt")


AGENT = Target(name="agent", argv=python_module("plugpull.targets.langgraph_react_two_tools"))


@pytest.mark.parametrize("point", ["before-effect", "after-effect"])
def test_hold_charge_card_lands_the_kill_in_charge_card_whichever_tool_calls_first(point, forked):
    result = run_point(AGENT, point, Settings(timeout=60, aim=Aim(hold=("charge_card", 1))), forked)
    assert result.verdict is not Verdict.ERROR, (result.message, result.stderr)
    assert result.evidence["held_name"] == "charge_card"
    assert held_call(result.evidence["calls"]) == "charge_card#1"
    start = [c for c in result.evidence["calls"] if c["phase"] == "start"]
    assert {c["name"] for c in start} <= {"send_email", "charge_card"}
    # The model's turn with both calls is checkpointed before the tools run (sync durability), so
    # resume re-runs charge_card with the same tool call id and the key keeps it at one charge.
    assert result.evidence["counts"]["charge_card"] == 1
    assert len({c["key"] for c in result.evidence["calls"] if c["name"] == "charge_card"}) == 1
    # A FAIL can only be the unkeyed email: recorded before the kill, sent again by resume. Whether start
    # also got its answer is a race with the kill in the other tool's thread (a loaded run recorded it
    # and was killed before the answer); only an answered one is named "done before the kill"
    # (checks.kill_mid_tool.redone).
    if result.verdict is Verdict.FAIL:
        assert result.evidence["counts"]["send_email"] == 2
        emailed = [c for c in start if c["name"] == "send_email" and c["recorded"]]
        assert emailed, result.evidence["calls"]
        said = "send_email was done before the kill and again by resume" in result.message
        assert said == any(c["answered"] for c in emailed), result.message
    assert result.framework == "langgraph" and result.version


def test_without_hold_the_line_names_whichever_call_was_held(forked):
    result = run_point(AGENT, "after-effect", Settings(timeout=60), forked)
    assert result.verdict is not Verdict.ERROR, (result.message, result.stderr)
    assert held_call(result.evidence["calls"]) == f"{result.evidence['held_name']}#1"
    assert result.evidence["held_name"] in ("send_email", "charge_card")
