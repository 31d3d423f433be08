"""Google ADK's streamed run cancelled by its client, on real processes: run_async with StreamingMode.SSE on a real
SqliteSessionService, the run's abort_signal set or the consumer's task cancelled while plugpull holds the run at
its point, then the next turn on the same session (src/plugpull/targets/google_adk_stream.py)."""

from installed import requires
from plugpull import run_scenario
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.targets import BUILT_INS

pytestmark = requires("google.adk")

SETTINGS = Settings(timeout=60)


def variant(cancel: str):
    (target,) = [t for t in BUILT_INS["google-adk-stream"].variants if t.options == {"cancel": cancel}]
    return target


def test_an_abort_seals_the_dangling_call_and_a_task_cancel_leaves_it_for_the_next_request_to_drop(forked):
    (aborted,) = run_scenario(variant("abort"), points=["tool-after-effect"], settings=SETTINGS, runtime=forked)
    (cancelled,) = run_scenario(variant("task-cancel"), points=["tool-after-effect"], settings=SETTINGS, runtime=forked)
    # abort_signal: ADK appends a synthetic response for the call (google/adk/events/_abort_events.py).
    assert aborted.evidence["conversation"][-1]["role"] == "tool"
    # A cancelled task appends nothing more: the session ends with the call and no response...
    assert cancelled.evidence["conversation"][-1]["role"] == "assistant"
    assert cancelled.evidence["conversation"][-1]["tool_calls"]
    for result in (aborted, cancelled):
        # ...and ADK drops such a call from the next request, so no provider rejects it; either way the model
        # never reads that the refund was done, asks again, and the provider refunds twice.
        assert not any(r["rejected"] for r in result.evidence["requests"])
        assert result.verdict is Verdict.FAIL
        assert result.message == "effect duplicated: the provider saw 2 refund (expected 1)"


def test_partial_events_are_not_saved_so_a_cancel_loses_the_streamed_answer(forked):
    (stream,) = run_scenario(variant("task-cancel"), points=["model-stream"], settings=SETTINGS, runtime=forked)
    assert stream.verdict is Verdict.FAIL
    assert stream.message == (
        "the thread lost what the user saw before the cancel: streamed text of 1 of 2 message(s) (13 characters)"
    )
