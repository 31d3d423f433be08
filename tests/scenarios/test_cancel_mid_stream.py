"""cancel-mid-stream against real agent processes: a watcher thread cancels the stream's asyncio task while
the provider holds the point's step, and the next turn runs in a new process (tests/agents/stream_agent.py)."""

import shlex
import signal
import sys
from pathlib import Path

import pytest

from plugpull import suite
from plugpull.results import Verdict
from plugpull.scenarios import Runtime, Settings
from plugpull.scenarios.cancel_mid_stream import NAME, aim_of
from plugpull.targets import agent

AGENTS = Path(__file__).parent.parent / "agents"
POINTS = ["model-stream", "tool-after-effect", "between-tool-and-model", "tool-before-effect-then-sigkill"]


def stream_agent(how: str):
    return agent(shlex.join([sys.executable, "-m", "stream_agent", how]), NAME)


def run(how: str, forks, points=POINTS):
    """Each run its own runtime (its own clean run); its phases fork from the module's server (tests/forked_agents.py),
    each its own process whose asyncio task the watcher thread cancels, the -then-sigkill points a real SIGKILL."""
    return suite.run_scenario(
        stream_agent(how), points=points, settings=Settings(timeout=30), runtime=Runtime(forks=forks)
    )


def test_a_framework_that_leaves_the_tool_call_dangling_is_caught_by_the_next_turn_check(agent_forks):
    results = {r.point: r for r in run("dangling", agent_forks)}
    assert results["tool-after-effect"].verdict is Verdict.FAIL
    assert results["tool-after-effect"].message.startswith("next turn rejected: message 2's tool call refund (call_")
    # Streamed text the framework never saved: the line says what was lost, with the counts.
    assert results["model-stream"].message == (
        "the thread lost what the user saw before the cancel: streamed text of 1 of 2 message(s) (13 characters)"
    )
    assert results["model-stream"].evidence["chunks_before"] == 2
    # A cancel after the tool's result was saved leaves a valid history.
    assert results["between-tool-and-model"].verdict is Verdict.PASS
    # Killed while draining, before the held refund went through: lost, and the history is still refused.
    killed = results["tool-before-effect-then-sigkill"]
    assert killed.evidence["start"]["returncode"] == -signal.SIGKILL
    assert killed.verdict is Verdict.FAIL and "effect lost: the provider saw 0 refund" in killed.message


def test_a_framework_that_closes_the_cancelled_turn_passes_every_point(agent_forks):
    results = run("closes-turn", agent_forks)
    assert [(r.point, r.verdict) for r in results] == [(p, Verdict.PASS) for p in POINTS]
    for result in results:
        assert result.evidence["cancel"]["style"] == "task-cancel"
        assert result.evidence["cancel"]["held_released"] is False  # reported while the run was held there


def test_a_framework_whose_store_drops_tool_results_fails_without_any_fault_on_the_clean_next_turn(agent_forks):
    """Its clean run's next turn (nothing cancelled) is refused and exits 1: FAIL with the refused request as
    evidence, not "could not run as designed"; the other point is moot."""
    first, other = run("drops-results", agent_forks, points=["tool-after-effect", "model-stream"])
    assert first.verdict is Verdict.FAIL and first.evidence["without_fault"] is True
    assert first.message.startswith("without any fault: next turn rejected: message 2's tool call refund (call_")
    assert first.message.endswith("(the clean run's next turn, nothing cancelled; exit code 1)")
    [request] = first.evidence["clean"]["next_turn_requests"]
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "assistant", "user"]
    assert request["rejected"] and first.evidence["held"] is None  # no cancel was aimed, none ran
    assert other.verdict is Verdict.FAIL and other.message.startswith("moot: ")


def test_an_agent_that_never_watches_for_the_cancel_is_an_error(agent_forks):
    # kill-mid-tool's fake framework streams nothing and waits for no cancel.
    target = agent(shlex.join([sys.executable, "-m", "fake_framework", "stable-key"]), NAME)
    (result,) = suite.run_scenario(
        target, points=["tool-after-effect"], settings=Settings(timeout=30), runtime=Runtime(forks=agent_forks)
    )
    assert result.verdict is Verdict.ERROR
    assert result.message.startswith("nothing waited for the cancel at tool-after-effect (effect charge 1, after it)")


@pytest.mark.parametrize(
    "point, aim",
    [
        ("tool-before-effect", {"kind": "effect", "name": "refund", "n": 1, "side": "before"}),
        ("between-tool-and-model", {"kind": "mark", "name": "model-call", "n": 2, "side": "before"}),
        ("after-final-answer-then-sigkill", {"kind": "mark", "name": "model-call", "n": 2, "side": "after"}),
        ("model-stream", {"kind": "mark", "name": "model-chunk", "n": 5, "side": "before"}),
    ],
)
def test_each_point_is_aimed_at_its_step_of_the_clean_trace(point, aim):
    trace = [{"seq": 1, "kind": "mark", "name": "model-call", "edge": "before"}]
    trace += [{"seq": 2 + i, "kind": "mark", "name": "model-chunk", "edge": "before"} for i in range(2)]
    trace += [{"seq": 4, "kind": "mark", "name": "model-call", "edge": "after"}, {"seq": 5, "name": "refund"}]
    trace += [{"seq": 6, "kind": "mark", "name": "model-call", "edge": "before"}]
    trace += [{"seq": 7 + i, "kind": "mark", "name": "model-chunk", "edge": "before"} for i in range(4)]
    trace += [{"seq": 11, "kind": "mark", "name": "model-call", "edge": "after"}]
    assert aim_of(point, trace)[0] == aim


def test_an_answer_streamed_in_one_chunk_cannot_be_cancelled_mid_stream():
    trace = [{"seq": 1, "kind": "mark", "name": "model-call", "edge": e} for e in ("before", "after")]
    aim, _, problem = aim_of("model-stream", trace)
    assert aim is None and problem.startswith("the final answer streamed 0 chunk(s) marked model-chunk")
