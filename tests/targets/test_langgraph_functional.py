"""LangGraph's functional API on real processes: real SIGKILL inside a @task, real SqliteSaver, invoke(None).

LangGraph docs (Functional API): a finished task is not run again on resume (its saved result is
used); the interrupted task runs again from its start. A finished task's result is saved by a
background put_writes while the next task runs (langgraph/pregel/_loop.py), so a key drawn in the
finished task survives the kill only when that write landed first: the tests aim the kill at it
(the ``draft`` option, kill-mid-tool's --save) instead of racing it.
"""

import signal

from installed import requires
from plugpull import run_scenario
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.targets import BUILT_INS

pytestmark = requires("langgraph.func")

SETTINGS = Settings(timeout=90)


def variant(name: str, **options: str):
    (target,) = [t for t in BUILT_INS[name].variants if all(t.options.get(k) == v for k, v in options.items())]
    return target


def test_without_a_key_the_killed_task_runs_again_and_refunds_twice_after_the_effect(forked):
    before, after = run_scenario(variant("langgraph-functional", key="none"), settings=SETTINGS, runtime=forked)
    assert before.verdict is Verdict.PASS, (before.message, before.stderr)
    assert after.evidence["start"]["returncode"] == -signal.SIGKILL
    assert after.evidence["resume"]["returncode"] == 0
    assert after.verdict is Verdict.FAIL
    assert after.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")


def test_a_key_drawn_in_the_finished_task_is_replayed_from_the_checkpoint_so_one_refund(forked):
    # The kill waits for the draft's background write to land (draft=saved): without that wait the
    # line races it, and a busy machine once killed the refund first.
    target = variant("langgraph-functional", key="checkpointed", draft="saved")
    for result in run_scenario(target, ["after-effect"], settings=SETTINGS, runtime=forked):
        assert result.verdict is Verdict.PASS, (result.point, result.message, result.stderr)
        start, resume = result.evidence["calls"]
        # draft_refund draws a new request id each time it runs: the same key proves its saved
        # result was used, not a re-run.
        assert (start["phase"], resume["phase"]) == ("start", "resume")
        assert start["key"] == resume["key"] and start["key"].startswith("rf_")
        assert result.evidence["saves"][0]["ready"]


def test_a_finished_task_whose_write_is_held_back_runs_again_with_a_new_key_so_two_refunds(forked):
    target = variant("langgraph-functional", key="checkpointed", draft="unsaved")
    (result,) = run_scenario(target, ["after-effect"], settings=SETTINGS, runtime=forked)
    assert result.verdict is Verdict.FAIL, (result.message, result.stderr)
    assert result.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")
    start, resume = result.evidence["calls"]
    assert start["key"] != resume["key"]
    (save,) = result.evidence["saves"]
    # The write was held in a background thread while the refund task ran and was killed.
    assert save["open"] and save["mark"]["main_thread"] is False


def test_the_functional_target_does_not_import_the_prebuilt_agents():
    # langgraph-prebuilt resolved with newer siblings cannot be imported by an older langgraph (1.0.10 with
    # prebuilt 1.0.13: ImportError ExecutionInfo), and a functional-API app has no use for it.
    import subprocess
    import sys

    code = "import sys, plugpull.targets.langgraph_functional; print('langgraph.prebuilt' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
