"""LangGraph's functional API on real processes: real SIGKILL inside a @task, real SqliteSaver, invoke(None).

LangGraph docs (Functional API): a finished task is not run again on resume (its saved result is
used); the interrupted task runs again from its start.
"""

import signal

import pytest

pytest.importorskip("langgraph.func")

from plugpull import run_scenario  # noqa: E402
from plugpull.results import Verdict  # noqa: E402
from plugpull.targets import BUILT_INS  # noqa: E402


def variant(name: str, key: str):
    (target,) = [t for t in BUILT_INS[name].variants if t.options["key"] == key]
    return target


def test_without_a_key_the_killed_task_runs_again_and_refunds_twice_after_the_effect(forked):
    before, after = run_scenario(variant("langgraph-functional", "none"), settings=forked)
    assert before.verdict is Verdict.PASS, (before.message, before.stderr)
    assert after.evidence["start"]["returncode"] == -signal.SIGKILL
    assert after.evidence["resume"]["returncode"] == 0
    assert after.verdict is Verdict.FAIL
    assert after.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")


def test_a_key_drawn_in_the_finished_task_is_replayed_from_the_checkpoint_so_one_refund(forked):
    for result in run_scenario(variant("langgraph-functional", "checkpointed"), ["after-effect"], settings=forked):
        assert result.verdict is Verdict.PASS, (result.point, result.message, result.stderr)
        start, resume = result.evidence["calls"]
        # draft_refund draws a new request id each time it runs: the same key proves its saved
        # result was used, not a re-run.
        assert (start["phase"], resume["phase"]) == ("start", "resume")
        assert start["key"] == resume["key"] and start["key"].startswith("rf_")
