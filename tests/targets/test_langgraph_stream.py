"""LangGraph's streamed run cancelled by its client, on real processes: a real StateGraph, LangGraph's own SQLite
checkpointer, an asyncio task cancelled (or SIGINT to a sync consumer) while plugpull holds the run at its point,
then the next turn streamed on the same thread (src/plugpull/targets/langgraph_stream.py)."""

from installed import requires
from plugpull import run_scenario
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.targets import BUILT_INS

pytestmark = requires("langgraph.checkpoint.sqlite.aio")

SETTINGS = Settings(timeout=60)


def variant(**options: str):
    (target,) = [t for t in BUILT_INS["langgraph-stream"].variants if t.options == options]
    return target


def test_a_cancelled_task_loses_the_answer_it_streamed_and_leaves_the_tool_call_without_a_result(forked):
    target = variant(cancel="task-cancel", durability="sync", next_turn="new-message")
    points = ["model-stream", "tool-after-effect", "between-tool-and-model"]
    stream, tool, between = run_scenario(target, points=points, settings=SETTINGS, runtime=forked)
    # langgraph#5672: the tokens of a model step that did not finish were shown, never saved.
    assert (stream.verdict, stream.message) == (
        Verdict.FAIL,
        "the thread lost what the user saw before the cancel: streamed text of 1 of 2 message(s) (13 characters)",
    )
    assert (stream.evidence["chunks_emitted"], stream.evidence["chunks_shown"]) == (8, 8)
    assert [n["url"] for n in stream.notes] == ["https://github.com/langchain-ai/langgraph/issues/5672"]
    # The AI message with the tool call is in the thread, its ToolMessage is not: a provider refuses the next turn.
    assert tool.verdict is Verdict.FAIL
    assert tool.message.startswith("next turn rejected: message 2's tool call refund (call_")
    assert tool.evidence["conversation"][-1]["role"] == "assistant"
    assert between.verdict is Verdict.PASS, between.message
    for result in (stream, tool, between):
        assert result.evidence["cancel"]["style"] == "task-cancel" and not result.evidence["deferred"]


def test_ctrl_c_in_a_sync_consumer_takes_effect_only_once_the_running_step_finished(forked):
    # LangGraph's sync stream runs its steps on worker threads and, leaving, waits for them
    # (langgraph/pregel/_executor.py, BackgroundExecutor.__exit__): the KeyboardInterrupt comes after the step.
    (stream,) = run_scenario(
        variant(cancel="keyboard-interrupt", durability="sync", next_turn="new-message"),
        points=["model-stream"],
        settings=SETTINGS,
        runtime=forked,
    )
    assert stream.evidence["deferred"] is True
    assert stream.evidence["start"]["returncode"] == 130
    assert stream.verdict is Verdict.PASS, stream.message
    assert "the cancel took effect only once the held step finished" in stream.message


def test_an_app_that_finishes_the_cancelled_run_before_the_next_message_keeps_the_tool_result(forked):
    # stream(None, config) continues from the last checkpoint: the refund runs again with the same tool call id
    # (the provider's key), its ToolMessage is saved, and the next turn's history is valid.
    target = variant(cancel="task-cancel", durability="sync", next_turn="finish-first")
    (tool,) = run_scenario(target, points=["tool-after-effect"], settings=SETTINGS, runtime=forked)
    assert tool.verdict is Verdict.PASS, tool.message
    assert [m["role"] for m in tool.evidence["conversation"]] == ["user", "assistant", "tool", "assistant"]
    assert tool.evidence["counts"] == {"refund": 1}
