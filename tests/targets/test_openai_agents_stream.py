"""The OpenAI Agents SDK's streamed run cancelled by its client, on real processes: Runner.run_streamed with a real
SQLiteSession, result.cancel() or the consumer's task cancelled while plugpull holds the run at its point, then
the next turn streamed with the same Session (src/plugpull/targets/openai_agents_stream.py)."""

from installed import requires
from plugpull import run_scenario
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.targets import BUILT_INS

pytestmark = requires("agents")

SETTINGS = Settings(timeout=60)


def variant(cancel: str):
    (target,) = [t for t in BUILT_INS["openai-agents-stream"].variants if t.options == {"cancel": cancel}]
    return target


def test_an_immediate_cancel_keeps_the_session_valid_but_drops_the_turn_the_user_saw(forked):
    points = ["model-stream", "tool-after-effect", "between-tool-and-model"]
    stream, tool, between = run_scenario(variant("cancel"), points=points, settings=SETTINGS, runtime=forked)
    # The SDK saves a turn's items when the turn ends: the streamed answer of the cancelled turn is gone.
    assert stream.verdict is Verdict.FAIL
    assert stream.message == (
        "the thread lost what the user saw before the cancel: streamed text of 1 of 2 message(s) (13 characters)"
    )
    # Cancelled inside the tool after its effect: the Session holds the user message only (no dangling call),
    # so the next turn is accepted, asks for the refund again, and the provider refunds twice.
    assert tool.verdict is Verdict.FAIL
    assert tool.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")
    assert [m["role"] for m in tool.evidence["conversation"]] == ["user"]
    assert not any(r["rejected"] for r in tool.evidence["requests"])
    # Between the tool's end and the next model call the turn with the call and its result is saved.
    assert between.verdict is Verdict.PASS, between.message
    for result in (stream, tool, between):
        assert result.evidence["cancel"]["style"] == "cancel"


def test_a_cancel_after_the_turn_finishes_the_turn_and_keeps_what_the_user_saw(forked):
    (tool,) = run_scenario(
        variant("cancel-after-turn"), points=["tool-after-effect"], settings=SETTINGS, runtime=forked
    )
    assert tool.verdict is Verdict.PASS, tool.message
    # The turn is the model response and its tool run; the run stops before the next model call, so the
    # Session ends with the tool's result and the next turn's model call answers.
    assert [m["role"] for m in tool.evidence["conversation"]] == ["user", "assistant", "tool"]
