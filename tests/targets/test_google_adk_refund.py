"""Google ADK on real processes: real SIGKILL inside a tool, SqliteSessionService, run_async(invocation_id=...).

ADK's ResumabilityConfig docstring (google/adk/apps/_configs.py): "Tool call to resume needs to be
idempotent because we only guarantee an at-least-once behavior once resumed." The function-call
event is saved before the tool runs, so the resumed invocation calls the tool with the same id.
"""

import signal

from installed import requires
from plugpull import run_scenario
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.targets import BUILT_INS

pytestmark = requires("google.adk")

SETTINGS = Settings(timeout=90)


def variant(key: str):
    (target,) = [t for t in BUILT_INS["google-adk"].variants if t.options["key"] == key]
    return target


def test_without_a_key_the_resumed_invocation_runs_the_tool_again_and_refunds_twice(forked):
    before, after = run_scenario(variant("none"), settings=SETTINGS, runtime=forked)
    assert before.verdict is Verdict.PASS, (before.message, before.stderr)
    assert after.evidence["start"]["returncode"] == -signal.SIGKILL
    assert after.evidence["resume"]["returncode"] == 0
    assert after.verdict is Verdict.FAIL
    assert after.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")


def test_the_function_call_id_is_the_same_on_resume_so_it_keys_one_refund(forked):
    for result in run_scenario(variant("function-call-id"), ["after-effect"], settings=SETTINGS, runtime=forked):
        assert result.verdict is Verdict.PASS, (result.point, result.message, result.stderr)
        start, resume = result.evidence["calls"]
        assert (start["phase"], resume["phase"]) == ("start", "resume")
        assert start["key"] == resume["key"] and start["key"].startswith("adk-")
