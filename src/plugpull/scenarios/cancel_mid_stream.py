"""cancel-mid-stream: the client walks away while the answer streams (langgraph#5672).

Clients cancel all the time: a closed tab, an SSE disconnect, a gateway timeout, a stop button.
https://github.com/langchain-ai/langgraph/issues/5672 says what the user already saw streamed can be
gone from the thread afterwards; other graph frameworks left an assistant tool call without its result,
which the next turn's provider request is refused for (HTTP 400).

One line, at one point:

1. A clean run, once per target: ``COMMAND start`` (one turn, streamed, nothing cancelled), then
   ``COMMAND resume`` (the next turn on the same conversation). Its effects over both turns are what a
   run owes; the next turn's result is the golden one; start's trace (effect calls and boundary marks)
   says where each point is.
2. ``COMMAND start`` with the provider holding the point's step (an effect call, or a boundary mark:
   ``model-chunk`` before each streamed chunk, ``model-call`` around each model call). While it is held,
   the harness answers the agent's cancel watcher (``client.wait_for_cancel``); the agent cancels its
   stream the way its client does and reports it (``client.record_cancel``, with what the user saw). The
   report arriving while the step is still held is the proof the cancel landed there. Then the held call
   is let go (the run drains: a tool thread the cancel did not stop completes its request) or, at a
   ``-then-sigkill`` point, start's process group is SIGKILLed at once (the server died while draining).
3. ``COMMAND resume``: the next turn, with the framework's own API, on the same conversation. It reports
   the conversation the framework saved (``client.record_conversation``) and each model request
   (``client.check_model_request``; refused as a strict provider would).

Gathers evidence only; the verdict is checks.judge_cancel_mid_stream's (docs/DECISIONS.md,
"cancel-mid-stream").
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from plugpull.channel import Channel
from plugpull.checks.cancel_mid_stream import check_clean_cancel_run, judge_cancel_mid_stream
from plugpull.checks.history import request_problem
from plugpull.client import BOUNDARIES_ENV
from plugpull.evidence import CancelEvidence, CancelRun, Outcome
from plugpull.process import reaping
from plugpull.results import Result
from plugpull.scenarios import Runtime, Settings, make_result, result_ignore, settle, steps, target_env, workdir
from plugpull.scenarios.contract import Recovery, Scenario
from plugpull.scenarios.faults import CHUNK, StreamCancel
from plugpull.targets import Target

NAME = "cancel-mid-stream"

#: Where the client cancels. model-stream: after K_CHUNKS chunks of the final answer (the last model
#: call's stream); tool-before-effect / tool-after-effect: while the first effect call is held, before
#: or after it is recorded; between-tool-and-model: at the first model call after that effect, before it
#: begins; after-final-answer: once the last model call has streamed everything, before its step returns.
CANCELS = ("model-stream", "tool-before-effect", "tool-after-effect", "between-tool-and-model", "after-final-answer")
#: The same points with start SIGKILLed right after the cancel landed: it dies while draining.
THEN_SIGKILL = "-then-sigkill"
POINTS = (*CANCELS, *(p + THEN_SIGKILL for p in CANCELS))

#: The boundary names a streaming agent marks (docs/agent-protocol.md, "cancel-mid-stream").
MODEL_CALL = "model-call"  # ``with boundary("model-call"):`` around each model call
# CHUNK ("model-chunk", before each streamed chunk) and SHOWN ("chunk-shown", after the consumer showed one) are
# the marks the cancel itself reads: plugpull.scenarios.faults.
#: model-stream cancels after this many chunks of the final answer; of an answer of K_CHUNKS chunks, one fewer,
#: so a chunk is still to stream (an answer of 1 chunk is ERROR).
K_CHUNKS = 2
POLL = 0.01


def aim_of(point: str, trace: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, int | None, str | None]:
    """The held step of ``point`` in a clean start's trace: (step, chunks streamed before it, problem).

    The step is ``{"kind", "name", "n", "side"}`` as ``Provider.arm_step`` takes it (n counts that
    name's calls, marks with that edge only). ``problem`` says why the trace has no such step.
    """
    base = point.removesuffix(THEN_SIGKILL)
    effects = [e for e in trace if e.get("kind", "effect") == "effect"]

    def marks(name: str, edge: str) -> list[dict[str, Any]]:
        return [e for e in trace if e.get("kind") == "mark" and e.get("name") == name and e.get("edge") == edge]

    if base in ("tool-before-effect", "tool-after-effect"):
        if not effects:
            return None, None, "the clean run made no record_effect call: no tool to cancel in"
        side = "before" if base == "tool-before-effect" else "after"
        return {"kind": "effect", "name": effects[0]["name"], "n": 1, "side": side}, None, None
    befores, afters = marks(MODEL_CALL, "before"), marks(MODEL_CALL, "after")
    if not befores or not afters:
        return (
            None,
            None,
            f"the clean run marked no {MODEL_CALL} boundary: wrap each model call in plugpull.boundary({MODEL_CALL!r})",
        )
    if base == "between-tool-and-model":
        if not effects:
            return None, None, "the clean run made no record_effect call: no tool to cancel after"
        later = [i for i, m in enumerate(befores, 1) if m["seq"] > effects[0]["seq"]]
        if not later:
            return None, None, f"the clean run made no model call after its first effect ({effects[0]['name']})"
        return {"kind": "mark", "name": MODEL_CALL, "n": later[0], "side": "before"}, None, None
    if base == "after-final-answer":
        return {"kind": "mark", "name": MODEL_CALL, "n": len(afters), "side": "after"}, None, None
    last = befores[-1]["seq"]
    chunks = marks(CHUNK, "before")
    answer = [i for i, c in enumerate(chunks, 1) if c["seq"] > last]
    if len(answer) < 2:
        return (
            None,
            None,
            f"the final answer streamed {len(answer)} chunk(s) marked {CHUNK}: model-stream needs 2 or more "
            f"(plugpull.client.mark_boundary({CHUNK!r}, 'before') before each chunk)",
        )
    before = min(K_CHUNKS, len(answer) - 1)
    return {"kind": "mark", "name": CHUNK, "n": answer[before], "side": "before"}, before, None


def clean_run(target: Target, settings: Settings, runtime: Runtime) -> CancelRun:
    """start, then the next turn, nothing cancelled (once per target and settings)."""
    key = ("cancel-clean", target.argv, settings.cwd, settings.timeout)
    return runtime.once(key, lambda: run_clean(target, settings, runtime))


def run_clean(target: Target, settings: Settings, runtime: Runtime) -> CancelRun:
    with workdir(replace(settings, keep_workdir=False)) as path, Channel() as channel, reaping() as spawned:
        channel.validate = request_problem
        env = target_env(channel, path)
        began = time.monotonic()
        marked = {**env, BOUNDARIES_ENV: "1"}
        start = steps.run_to_end(runtime, [*target.argv, "start"], "clean", channel, marked, settings, spawned)
        trace = [
            {**c.to_dict(), "kind": c.kind, "edge": c.edge, "t": round(c.at - began, 6)}
            for c in channel.provider.trace()
        ]
        run = CancelRun(start=start, trace=trace, start_results=channel.results_of("clean"))
        if start.returncode == 0 and not start.timed_out:
            run.resume = steps.run_to_end(
                runtime, [*target.argv, "resume"], "clean-resume", channel, env, settings, spawned
            )
            run.results = channel.results_of("clean-resume")
            said = [c["messages"] for c in channel.conversations if c["phase"] == "clean-resume"]
            run.conversation = said[-1] if said else None
            run.next_turn_requests = [
                {"messages": r["messages"], "rejected": r["rejected"]}
                for r in channel.model_requests
                if r["phase"] == "clean-resume"
            ]
        run.counts = channel.provider.counts()
        run.announced = list(channel.announced)
        run.rejected = [r["rejected"] for r in channel.model_requests if r["rejected"]]
        return run


def run_point(target: Target, point: str, settings: Settings, runtime: Runtime) -> Result:
    if point not in POINTS:
        raise ValueError(f"unknown point {point!r}; known: {', '.join(POINTS)}")
    began = time.monotonic()
    ev = CancelEvidence(point=point, timeout=settings.timeout, sigkill=point.endswith(THEN_SIGKILL))
    ev.clean = clean_run(target, settings, runtime)
    ev.golden = list(ev.clean.results)
    ev.result_ignore = result_ignore(target, ev.clean.announced)
    announced, kept = list(ev.clean.announced), None
    if check_clean_cancel_run(ev.clean, settings.timeout) is None:
        ev.aim, ev.chunks_before, ev.aim_problem = aim_of(point, ev.clean.trace)
        if ev.aim is not None:
            announced, kept = run_cancelled(target, settings, runtime, ev)
    judgement = settle(
        judge_cancel_mid_stream(ev), runtime, (NAME, target.argv, settings.cwd, settings.timeout), point, target=target
    )
    return make_result(
        NAME, target, point, ev.to_dict(), judgement, announced, began, steps.shown_outcome(judgement, ev), kept
    )


def run_cancelled(
    target: Target, settings: Settings, runtime: Runtime, ev: CancelEvidence
) -> tuple[list[dict], Path | None]:
    """start held at the aimed step and cancelled there, then the next turn; fills ``ev``."""
    aim = ev.aim
    with workdir(settings) as path, Channel() as channel, reaping() as spawned:
        channel.validate = request_problem
        env = target_env(channel, path)
        fault = StreamCancel(aim["kind"], aim["name"], aim["n"], aim["side"], sigkill=ev.sigkill)
        fault.arm(channel.provider)
        marked = {**env, BOUNDARIES_ENV: "1"}
        started = steps.spawn_phase(runtime, [*target.argv, "start"], "start", channel, marked, settings, spawned)
        if isinstance(started, Outcome):
            ev.start = started
        else:
            fault.strike(channel, started, ev, settings.timeout)
        if fault.proven(ev) is None:
            channel.provider.arm(None)
            ev.resume = steps.run_to_end(runtime, [*target.argv, "resume"], "resume", channel, env, settings, spawned)
            ev.resumed = channel.results_of("resume")
            said = [c["messages"] for c in channel.conversations if c["phase"] == "resume"]
            ev.conversation = said[-1] if said else None
            ev.requests = [
                {"messages": r["messages"], "rejected": r["rejected"]}
                for r in channel.model_requests
                if r["phase"] == "resume"
            ]
        steps.count_effects(ev, channel)
        return list(channel.announced), (path if settings.keep_workdir else None)


class CancelMidStream(Scenario):
    name = NAME
    points = POINTS
    default_points = CANCELS
    fault = "the client cancels the streaming run at a held step (then, at -then-sigkill points, SIGKILL)"
    faults = (StreamCancel,)
    refuses = {"hold": "cancel-mid-stream holds the step its point names"}
    recovery = {"*": Recovery("resume", "the next turn")}
    evidence = CancelEvidence
    checks = (judge_cancel_mid_stream,)

    line = staticmethod(run_point)


SCENARIO = CancelMidStream()
