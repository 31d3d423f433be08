"""A streaming Pydantic AI chat agent whose client walks away: the `pydantic-ai-stream` target (cancel-mid-stream).

    python -m plugpull.targets.pydantic_ai_stream token|task-cancel [--save on-cancel|end] start|resume

Written as a user would write it. Pydantic AI keeps no conversation of its own: ``message_history`` is the
app's (its ``ConversationStore`` ships an in-memory store only), so this app keeps the history as
``ModelMessagesTypeAdapter`` JSON in $PLUGPULL_WORKDIR/history.json. The run is ``agent.iter(...)`` driven node
by node with ``node.stream(ctx)`` (the docs' way to stream every event); the model is a ``FunctionModel`` with a
stream function (offline, scripted) that streams a sentence and asks for the refund tool, then streams the
answer. The tool is keyed by the tool call id Pydantic AI hands it (``RunContext.tool_call_id``).

How the client cancels (a watcher thread waits for plugpull's word, ``wait_for_cancel``):
- ``token``: ``CancellationToken.cancel()`` (``agent.iter(..., cancellation_token=token)``); the run raises
  ``RunCancelled``, whose ``all_messages()`` its docstring offers "as message_history to a new run";
- ``task-cancel``: the asyncio task driving the run is cancelled, as an ASGI server cancels a streaming
  response's task when the client disconnects; the app saves ``AgentRun.all_messages()``.
What the app saves (``--save``): ``on-cancel`` the history at the end of a run and on a cancel (above); ``end``
only at the end of a run (new messages appended), as the docs' chat app does.

start: the first turn, streamed. resume: the next turn: the saved history is reported, then a new user message
is streamed with it as ``message_history``, as a chat UI sends after a stop.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, CancellationToken, RunContext
from pydantic_ai.exceptions import RunCancelled
from pydantic_ai.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    PartDeltaEvent,
    PartStartEvent,
    SystemPromptPart,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from plugpull.client import (  # plugpull
    announce,
    check_model_request,
    import_present,
    mark_boundary,
    record_cancel,
    record_conversation,
    record_effect,
    record_result,
    wait_for_cancel,
)

FIRST = "Please refund order A-1001."
NEXT = "Is my refund done?"
PREAMBLE = "I will refund order A-1001 now."
ANSWER = "Order A-1001 is refunded."
STYLES = ("token", "task-cancel")
#: What a streamed run imports only once it runs: the price data Pydantic AI reads for a response's cost
#: (pydantic_ai/_genai_prices.py), the asyncio backend anyio loads on its first call, and asyncio's default
#: executor: measured in forked phases of pydantic-ai-slim 2.68.
RUN_IMPORTS = ("genai_prices.data", "anyio._backends._asyncio", "concurrent.futures.thread")


def neutral(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """Pydantic AI messages as plugpull's neutral conversation (docs/agent-protocol.md, cancel-mid-stream)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    out.append({"role": "tool", "content": str(part.content), "tool_call_id": part.tool_call_id})
                elif isinstance(part, UserPromptPart):
                    out.append({"role": "user", "content": str(part.content)})
                elif isinstance(part, SystemPromptPart):
                    out.append({"role": "system", "content": part.content})
        else:
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            calls = [{"id": p.tool_call_id, "name": p.tool_name} for p in message.parts if isinstance(p, ToolCallPart)]
            out.append({"role": "assistant", "content": text, "tool_calls": calls})
    return out


async def mark(name: str, edge: str) -> None:
    # In a thread: a held mark must not block the event loop, or the client's cancel could not land.
    await asyncio.to_thread(mark_boundary, name, edge)


async def stream(messages: list[ModelMessage], info: AgentInfo) -> Any:
    """An offline model that streams, decides from the conversation, and is strict as a provider is."""
    await mark("model-call", "before")  # plugpull
    await asyncio.to_thread(check_model_request, neutral(messages))  # plugpull: a strict provider (HTTP 400)
    done = any(
        isinstance(p, ToolReturnPart) and str(p.content).startswith("refunded")
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
    )
    for word in (ANSWER if done else PREAMBLE).split(" "):
        await mark("model-chunk", "before")  # plugpull: a cancel point after each chunk
        yield word + " "
    if not done:
        args = json.dumps({"order_id": "A-1001", "cents": 1999})
        yield {1: DeltaToolCall(name="refund", json_args=args, tool_call_id=f"call_{uuid.uuid4().hex[:16]}")}
    await mark("model-call", "after")  # plugpull


def build_agent() -> Agent:
    agent = Agent(FunctionModel(stream_function=stream), instructions="Refund orders.")

    @agent.tool
    async def refund(ctx: RunContext, order_id: str, cents: int) -> str:
        """Refund an order at the payment provider."""
        await asyncio.to_thread(record_effect, "refund", key=ctx.tool_call_id)  # plugpull
        return f"refunded {cents} cents on order {order_id}"

    return agent


class Screen:
    """What the user saw: the streamed text of each assistant message, and the tool calls and results shown."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.tool_calls: list[str] = []
        self.tool_results: list[str] = []
        self.new_message = True

    async def show(self, event: Any) -> None:
        chunk = None
        if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
            chunk = event.part.content
        elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            chunk = event.delta.content_delta
        elif isinstance(event, FunctionToolCallEvent):
            self.tool_calls.append(event.part.tool_call_id)
            self.new_message = True
        elif isinstance(event, FunctionToolResultEvent):
            self.tool_results.append(event.tool_call_id)
        if chunk:
            if self.new_message:
                self.texts.append("")
                self.new_message = False
            self.texts[-1] += chunk
            await mark("chunk-shown", "before")  # plugpull: the chunk is on screen

    def seen(self) -> dict[str, Any]:
        return {"text": list(self.texts), "tool_calls": self.tool_calls, "tool_results": self.tool_results}


def watch(cancel: Any) -> None:
    """The client's disconnect: a thread waits for plugpull's word, then cancels the stream its way."""

    def run() -> None:
        if wait_for_cancel():  # plugpull
            cancel()

    threading.Thread(target=run, name="client-disconnect", daemon=True).start()


class History:
    """The app's conversation store: the history as Pydantic AI's own JSON, in one file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> list[ModelMessage]:
        return list(ModelMessagesTypeAdapter.validate_json(self.path.read_bytes())) if self.path.exists() else []

    def save(self, messages: list[ModelMessage]) -> None:
        self.path.write_bytes(ModelMessagesTypeAdapter.dump_json(messages))


async def converse(args: argparse.Namespace) -> int:
    history = History(args.workdir / "history.json")
    earlier = history.load()
    if args.phase == "resume":
        record_conversation(neutral(earlier))  # plugpull
    screen = Screen()
    token = CancellationToken()
    on_cancel = args.save == "on-cancel"

    async def drive() -> None:
        run = None
        try:
            async with build_agent().iter(
                FIRST if args.phase == "start" else NEXT, message_history=earlier, cancellation_token=token
            ) as run:
                async for node in run:
                    if Agent.is_model_request_node(node) or Agent.is_call_tools_node(node):
                        async with node.stream(run.ctx) as events:
                            async for event in events:
                                await screen.show(event)
            history.save(run.result.all_messages())
        except RunCancelled as cancelled:
            if on_cancel:
                history.save(cancelled.all_messages())
            raise
        except asyncio.CancelledError:
            if on_cancel and run is not None:
                history.save(run.all_messages())
            raise

    task = asyncio.ensure_future(drive())
    if args.phase == "start":
        loop = asyncio.get_running_loop()
        watch(token.cancel if args.style == "token" else lambda: loop.call_soon_threadsafe(task.cancel))
    try:
        await task
    except (RunCancelled, asyncio.CancelledError):
        record_cancel(args.style, screen.seen())  # plugpull
        return 0
    answer = screen.texts[-1].strip() if screen.texts else ""
    record_result({"answer": answer})  # plugpull
    print(answer)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("style", choices=STYLES)
    parser.add_argument("--save", choices=("on-cancel", "end"), default="on-cancel")
    parser.add_argument("phase", choices=("start", "resume"))
    args = parser.parse_args(argv)
    args.workdir = Path(os.environ.get("PLUGPULL_WORKDIR", "."))
    announce(framework="pydantic-ai-slim", version=importlib.metadata.version("pydantic-ai-slim"))  # plugpull
    return asyncio.run(converse(args))


def plugpull_prefork(argv: list[str]) -> None:  # plugpull (optional): what --fork-server imports once
    """Import ``RUN_IMPORTS`` in plugpull's fork server, once, instead of in every forked phase.

    Only imports (no price data is fetched, no thread started); a module a release does not have is skipped. Returns
    None: the forked phase runs this module as ``__main__`` (docs/DECISIONS.md, "Throughput").
    """
    import_present(*RUN_IMPORTS)


if __name__ == "__main__":
    sys.exit(main())
