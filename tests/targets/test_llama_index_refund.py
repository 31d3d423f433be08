"""LlamaIndex Workflows on real processes: real SIGKILL inside the refund step, the Context the app saved to a
file after the draft step restored with Context.from_dict, the run continued with workflow.run(ctx=...)."""

import signal

from installed import requires
from plugpull import run_scenario
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.targets import BUILT_INS

pytestmark = requires("workflows")

SETTINGS = Settings(timeout=90)


def variant(key: str):
    (target,) = [t for t in BUILT_INS["llama-index"].variants if t.options.get("key") == key]
    return target


def test_without_a_key_the_restored_context_runs_the_killed_step_again_and_refunds_twice(forked):
    before, after = run_scenario(variant("none"), settings=SETTINGS, runtime=forked)
    assert before.verdict is Verdict.PASS, (before.message, before.stderr)
    assert after.evidence["start"]["returncode"] == -signal.SIGKILL
    assert after.evidence["resume"]["returncode"] == 0
    assert after.verdict is Verdict.FAIL
    assert after.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")
    assert "resume: restored the saved Context" in after.stderr


def test_the_request_id_of_the_saved_input_event_keys_the_rerun_so_one_refund(forked):
    (result,) = run_scenario(variant("checkpointed"), ["after-effect"], settings=SETTINGS, runtime=forked)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    start, resume = result.evidence["calls"]
    assert (start["phase"], resume["phase"]) == ("start", "resume")
    assert start["key"] == resume["key"] and start["key"].startswith("rf_")
    # The kill waited for the Context save after draft (--save context-save:1:landed).
    assert result.evidence["save_specs"] == ["context-save:1:landed"]
