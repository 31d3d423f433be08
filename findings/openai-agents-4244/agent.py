"""openai-agents-python#4244: an approval restored from a RunState is not honored when Runner.run gets a context.

    python agent.py start|approve|recover

https://github.com/openai/openai-agents-python/issues/4244: a tool with ``needs_approval=True`` pauses; the
app serializes the RunState, restores it in a new process, approves, and resumes with
``Runner.run(agent, state, context=...)``. Reported on 0.19.x: with any ``context=`` the resumed run pauses at
the approval again and the tool never runs; without ``context=`` it runs. This agent passes a plain dict
context on every run, as the report's app does.

What a user writes, following the SDK docs ("Human-in-the-loop", long-running approvals): the run
pauses on ``function_tool(needs_approval=True)``; the app saves ``result.to_state().to_json()`` and
exits; later another process restores it with ``await RunState.from_json(agent, saved)``, calls
``state.approve(...)`` and ``Runner.run(agent, state)``. The refund is keyed by the tool call id the
SDK hands the tool (``ToolContext.tool_call_id``), which is saved in the RunState, so running the
same saved state again asks for the same refund. The model is scripted and offline. The lines
marked ``# plugpull`` are all plugpull needs.

start:   run to the approval; save the paused RunState to $PLUGPULL_WORKDIR/paused.json; exit 0.
approve: restore paused.json, approve, save the approved RunState to approved.json (so a crash
         in the tool can be recovered), run to the end. The SDK has no "already resumed" error,
         so this never exits 3 (docs/agent-protocol.md: 3 means the framework refused).
recover: restore approved.json and run it (the SDK's way to continue an approved run).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any

from agents.run_state import RunState
from agents.tool_context import ToolContext
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from agents import Agent, Model, ModelResponse, Runner, function_tool, set_tracing_disabled
from plugpull.client import PAUSED_AGAIN_EXIT, announce, gate, import_present, record_effect, record_result  # plugpull

PAUSED, APPROVED = "paused.json", "approved.json"
#: The app's context: a plain dict, which needs no serialization (the upstream report's first case).
CONTEXT = {"user": "u-42"}


def log(message: str) -> None:
    print(f"refund-approval: {message}", file=sys.stderr, flush=True)


@function_tool(needs_approval=True)
def refund(ctx: ToolContext[Any], order: str) -> str:
    """Refund an order (a human approves first)."""
    record_effect("refund", key=ctx.tool_call_id)  # plugpull: keyed by the tool call id
    return f"refunded {order}"


class ScriptedModel(Model):
    """Asks for the refund until the conversation holds its result, then answers; no API key."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        items = [] if isinstance(input, str) else list(input)
        done = any(
            (i.get("type") if isinstance(i, dict) else getattr(i, "type", None)) == "function_call_output"
            for i in items
        )
        if done:
            text = ResponseOutputText(type="output_text", text="The refund is done.", annotations=[])
            output: list[Any] = [
                ResponseOutputMessage(
                    type="message",
                    id=f"msg_{secrets.token_hex(6)}",
                    role="assistant",
                    status="completed",
                    content=[text],
                )
            ]
        else:
            output = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"call_{secrets.token_hex(6)}",
                    name="refund",
                    arguments=json.dumps({"order": "C-3003"}),
                    status="completed",
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any):  # pragma: no cover - this agent never streams
        raise NotImplementedError


def build_agent() -> Agent:
    return Agent(name="Refunds", instructions="Refund the order the user names.", model=ScriptedModel(), tools=[refund])


async def start(agent: Agent, where: Path) -> int:
    result = await Runner.run(agent, "Refund order C-3003, please.", context=CONTEXT)
    if not result.interruptions:
        log("the run finished without asking for approval")
        return 1
    (where / PAUSED).write_text(json.dumps(result.to_state().to_json()))
    log(f"paused for approval of {result.interruptions[0].name}")
    return 0


async def approve(agent: Agent, where: Path) -> int:
    state = await RunState.from_json(agent, json.loads((where / PAUSED).read_text()))
    for item in state.get_interruptions():
        state.approve(item)
    (where / APPROVED).write_text(json.dumps(state.to_json()))
    gate()  # plugpull: racing approvers are released together here
    result = await Runner.run(agent, state, context=CONTEXT)
    if result.interruptions:  # the approval did not reach the tool: the run paused again
        log(f"paused again: {result.interruptions[0].name} needs approval")
        return PAUSED_AGAIN_EXIT  # plugpull: docs/agent-protocol.md
    log(f"approved and finished: {result.final_output}")
    record_result({"answer": result.final_output})  # plugpull: the run's outcome, compared with the clean run's
    return 0


async def recover(agent: Agent, where: Path) -> int:
    if not (where / APPROVED).exists():
        log(f"nothing to recover: no {APPROVED}")
        return 1
    state = await RunState.from_json(agent, json.loads((where / APPROVED).read_text()))
    result = await Runner.run(agent, state, context=CONTEXT)
    if result.interruptions:
        log(f"paused again: {result.interruptions[0].name} needs approval")
        return PAUSED_AGAIN_EXIT  # plugpull
    log(f"recovered: {result.final_output}")
    record_result({"answer": result.final_output})  # plugpull: the run's outcome
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    phases = {"start": start, "approve": approve, "recover": recover}
    if len(argv) != 1 or argv[0] not in phases:
        print("usage: agent.py {start,approve,recover}", file=sys.stderr)
        return 2
    set_tracing_disabled(True)
    announce(framework="openai-agents", version=importlib.metadata.version("openai-agents"))  # plugpull
    where = Path(os.environ.get("PLUGPULL_WORKDIR", "."))  # plugpull: the saved RunStates live here
    return asyncio.run(phases[argv[0]](build_agent(), where))


def plugpull_prefork(argv: list[str]) -> None:  # plugpull (optional): what `plugpull --fork-server` imports once
    """Import what every phase imports after this script's imports, in plugpull's fork server, once.

    ``set_tracing_disabled`` is the SDK's first use of its trace provider, which it builds then, with an HTTP client
    that imports its HTTP stack (httpcore2 and what it pulls in: h11, h2, truststore; openai-agents 0.22), and the
    SDK runs a sync tool on asyncio's default executor. Only imports: the provider itself is still built in each
    phase. Returns None, so each forked phase still runs this script as ``__main__``.
    """
    import_present("httpcore2", "concurrent.futures.thread")


if __name__ == "__main__":
    sys.exit(main())
