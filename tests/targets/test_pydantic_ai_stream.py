"""Pydantic AI's streamed run cancelled by its client, on real processes: agent.iter streamed node by node with a
FunctionModel, a CancellationToken or the driving task cancelled while plugpull holds the run at its point, then
the next turn with the history the app saved (src/plugpull/targets/pydantic_ai_stream.py)."""

from installed import requires
from plugpull import run_scenario
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.targets import BUILT_INS

pytestmark = requires("pydantic_ai")

SETTINGS = Settings(timeout=60)


def variant(cancel: str, save: str):
    (target,) = [t for t in BUILT_INS["pydantic-ai-stream"].variants if t.options == {"cancel": cancel, "save": save}]
    return target


def test_runcancelled_keeps_the_streamed_text_and_closes_the_dangling_call_before_the_next_request(forked):
    points = ["model-stream", "tool-after-effect"]
    stream, tool = run_scenario(variant("token", "on-cancel"), points=points, settings=SETTINGS, runtime=forked)
    # RunCancelled.all_messages() holds the partial answer the user saw.
    assert stream.verdict is Verdict.PASS, stream.message
    # Cancelled after the refund: the saved history ends with the tool call and no result...
    saved = tool.evidence["conversation"]
    assert saved[-1]["role"] == "assistant" and saved[-1]["tool_calls"]
    # ...which Pydantic AI closes with an "interrupted" return before the next request: no provider rejects it,
    # but the model is told the call did not finish, asks again, and the provider refunds twice.
    assert not any(r["rejected"] for r in tool.evidence["requests"])
    assert tool.verdict is Verdict.FAIL
    assert tool.message == "effect duplicated: the provider saw 2 refund (expected 1)"


def test_an_app_that_saves_only_finished_runs_loses_the_cancelled_turn(forked):
    (stream,) = run_scenario(variant("token", "end"), points=["model-stream"], settings=SETTINGS, runtime=forked)
    assert stream.verdict is Verdict.FAIL
    assert "the thread lost what the user saw before the cancel: streamed text of 2 of 2 message(s)" in stream.message
    assert stream.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")
