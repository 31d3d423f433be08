"""Pydantic AI's DBOSAgent on real processes: real SIGKILL inside a function tool, DBOS on SQLite.

DBOSAgent's docstring says model requests and tool calls are offloaded to DBOS steps; the model
request is (the resumed run asks for the same tool call id), the function tool is not: it runs
again on recovery.
"""

import signal

from installed import requires
from plugpull import run_scenario
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.targets import BUILT_INS

pytestmark = requires("pydantic_ai", "dbos")

SETTINGS = Settings(timeout=90)


def variant(key: str):
    (target,) = [t for t in BUILT_INS["pydantic-ai"].variants if t.options["key"] == key]
    return target


def test_without_a_key_the_recovered_workflow_runs_the_tool_again_and_refunds_twice(forked):
    before, after = run_scenario(variant("none"), settings=SETTINGS, runtime=forked)
    assert before.verdict is Verdict.PASS, (before.message, before.stderr)
    assert after.evidence["start"]["returncode"] == -signal.SIGKILL
    assert after.evidence["resume"]["returncode"] == 0
    assert after.verdict is Verdict.FAIL
    assert after.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")


def test_the_model_request_is_replayed_so_the_tool_call_id_keys_one_refund(forked):
    for result in run_scenario(variant("tool-call-id"), ["after-effect"], settings=SETTINGS, runtime=forked):
        assert result.verdict is Verdict.PASS, (result.point, result.message, result.stderr)
        start, resume = result.evidence["calls"]
        assert (start["phase"], resume["phase"]) == ("start", "resume")
        assert start["key"] == resume["key"] and start["key"].startswith("call_")
