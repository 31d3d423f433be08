"""A streaming OpenAI Agents SDK chat agent whose client walks away: the `openai-agents-stream` target.

    python -m plugpull.targets.openai_agents_stream cancel|cancel-after-turn|task-cancel|aclose start|resume

Written as a user would write it (docs "Streaming" and "Sessions"): ``Runner.run_streamed(agent, text,
session=SQLiteSession(...))`` with the Session file in $PLUGPULL_WORKDIR, a scripted offline Model that
streams (``stream_response``: the text of each answer in word chunks, then the completed response) and asks
for the refund tool first. The tool is keyed by the tool call id the SDK hands it (``ToolContext``).

How the client cancels (a watcher thread waits for plugpull's word, ``wait_for_cancel``):
- ``cancel``: ``result.cancel()``, mode "immediate" (agents/result.py: "Stop immediately, cancel all tasks,
  clear queues"), the consumer reads on until the stream ends, as the docstring asks;
- ``cancel-after-turn``: ``result.cancel(mode="after_turn")`` ("Complete current turn gracefully before
  stopping ... Saves session state properly"); the consumer reads on until the stream ends;
- ``task-cancel``: the asyncio task consuming ``stream_events()`` is cancelled, as an ASGI server cancels a
  streaming response's task when the client disconnects;
- ``aclose``: the consumer races each ``__anext__`` against a disconnect event; on the disconnect it cancels
  the pending ``__anext__`` and closes the stream with ``aclose()``.

start: the first turn, streamed. resume: the next turn: the Session's items are reported, then a new user
message is streamed with the same Session, as a chat UI sends after a stop.
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

from agents.tool_context import ToolContext
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
)

from agents import Agent, Model, ModelResponse, Runner, SQLiteSession, function_tool, set_tracing_disabled
from plugpull.client import (  # plugpull
    announce,
    check_model_request,
    mark_boundary,
    record_cancel,
    record_conversation,
    record_effect,
    record_result,
    wait_for_cancel,
)
from plugpull.targets.openai_agents_support import plugpull_prefork  # noqa: F401 (--fork-server's hook)

SESSION_ID = "refund-A-1001"
FIRST = "Please refund order A-1001."
NEXT = "Is my refund done?"
PREAMBLE = "I will refund order A-1001 now."
ANSWER = "Order A-1001 is refunded."
STYLES = ("cancel", "cancel-after-turn", "task-cancel", "aclose")


def field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def text_of(item: Any) -> str:
    content = field(item, "content")
    if isinstance(content, str):
        return content
    return "".join(field(part, "text") or "" for part in content or [])


def neutral(items: list[Any]) -> list[dict[str, Any]]:
    """Session items (Responses API input items) as plugpull's neutral conversation.

    A ``function_call`` joins the assistant message just before it (one model response: its text, then its
    calls), or opens an assistant message of its own.
    """
    out: list[dict[str, Any]] = []
    for item in items:
        kind, role = field(item, "type"), field(item, "role")
        if kind == "function_call":
            call = {"id": field(item, "call_id"), "name": field(item, "name")}
            if out and out[-1]["role"] == "assistant":
                out[-1]["tool_calls"].append(call)
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            out.append({"role": "tool", "content": str(field(item, "output")), "tool_call_id": field(item, "call_id")})
        elif role == "assistant":
            out.append({"role": "assistant", "content": text_of(item), "tool_calls": []})
        elif role in ("user", "system", "developer"):
            out.append({"role": "user" if role == "user" else "system", "content": text_of(item)})
    return out


async def mark(name: str, edge: str) -> None:
    # In a thread: a held mark must not block the event loop, or the client's cancel could not land.
    await asyncio.to_thread(mark_boundary, name, edge)


def response(output: list[Any]) -> Response:
    return Response(
        id=f"resp_{uuid.uuid4().hex[:12]}",
        created_at=0,
        model="plugpull-scripted-streaming",
        object="response",
        output=output,
        tool_choice="auto",
        tools=[],
        top_p=None,
        parallel_tool_calls=False,
        status="completed",
    )


class StreamingScriptedModel(Model):
    """An offline model that streams, decides from the conversation, and is strict as a provider is.

    It refuses (``check_model_request`` raises a 400) a history a real provider API refuses; it asks for the
    refund until the conversation holds a result that says "refunded"; each tool call gets a new id.
    """

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        raise NotImplementedError("this app streams (Runner.run_streamed)")

    async def stream_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        await mark("model-call", "before")  # plugpull
        await asyncio.to_thread(check_model_request, neutral(items))  # plugpull: a strict provider (HTTP 400)
        done = any(
            field(i, "type") == "function_call_output" and str(field(i, "output")).startswith("refunded") for i in items
        )
        text = ANSWER if done else PREAMBLE
        message_id = f"msg_{uuid.uuid4().hex[:12]}"
        yield ResponseCreatedEvent(type="response.created", response=response([]), sequence_number=0)
        started = ResponseOutputMessage(
            id=message_id, type="message", role="assistant", status="in_progress", content=[]
        )
        yield ResponseOutputItemAddedEvent(
            type="response.output_item.added", item=started, output_index=0, sequence_number=1
        )
        words = text.split(" ")
        for n, word in enumerate(words):
            await mark("model-chunk", "before")  # plugpull: a cancel point after each chunk
            yield ResponseTextDeltaEvent(
                type="response.output_text.delta",
                item_id=message_id,
                output_index=0,
                content_index=0,
                delta=word + " ",
                logprobs=[],
                sequence_number=2 + n,
            )
        output: list[Any] = [
            ResponseOutputMessage(
                id=message_id,
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
            )
        ]
        if not done:
            output.append(
                ResponseFunctionToolCall(
                    type="function_call",
                    id=f"fc_{uuid.uuid4().hex[:12]}",
                    call_id=f"call_{uuid.uuid4().hex[:16]}",
                    name="refund",
                    arguments=json.dumps({"order_id": "A-1001", "cents": 1999}),
                    status="completed",
                )
            )
        seq = 2 + len(words)
        for index, item in enumerate(output):
            yield ResponseOutputItemDoneEvent(
                type="response.output_item.done", item=item, output_index=index, sequence_number=seq + index
            )
        yield ResponseCompletedEvent(
            type="response.completed", response=response(output), sequence_number=seq + len(output)
        )
        await mark("model-call", "after")  # plugpull


@function_tool
async def refund(ctx: ToolContext, order_id: str, cents: int) -> str:
    """Refund an order at the payment provider."""
    await asyncio.to_thread(record_effect, "refund", key=ctx.tool_call_id)  # plugpull
    return f"refunded {cents} cents on order {order_id}"


def build_agent() -> Agent:
    return Agent(name="refunds", instructions="Refund orders.", model=StreamingScriptedModel(), tools=[refund])


class Screen:
    """What the user saw: the streamed text of each assistant message, and the tool calls and results shown."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.tool_calls: list[str] = []
        self.tool_results: list[str] = []
        self.last = ""

    async def show(self, event: Any) -> None:
        if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
            item = event.data.item_id
            self.texts[item] = self.texts.get(item, "") + event.data.delta
            self.last = self.texts[item]
            await mark("chunk-shown", "before")  # plugpull: the chunk is on screen
        elif event.type == "run_item_stream_event" and event.name == "tool_called":
            self.tool_calls.append(field(event.item.raw_item, "call_id"))
        elif event.type == "run_item_stream_event" and event.name == "tool_output":
            self.tool_results.append(field(event.item.raw_item, "call_id"))

    def seen(self) -> dict[str, Any]:
        return {"text": list(self.texts.values()), "tool_calls": self.tool_calls, "tool_results": self.tool_results}


def watch(cancel: Any) -> None:
    """The client's disconnect: a thread waits for plugpull's word, then cancels the stream its way."""

    def run() -> None:
        if wait_for_cancel():  # plugpull
            cancel()

    threading.Thread(target=run, name="client-disconnect", daemon=True).start()


async def converse(args: argparse.Namespace) -> int:
    session = SQLiteSession(SESSION_ID, str(args.workdir / "session.sqlite"))
    if args.phase == "resume":
        record_conversation(neutral(await session.get_items()))  # plugpull
    result = Runner.run_streamed(build_agent(), FIRST if args.phase == "start" else NEXT, session=session)
    screen = Screen()
    loop = asyncio.get_running_loop()
    start = args.phase == "start"
    if args.style in ("cancel", "cancel-after-turn"):
        mode = "immediate" if args.style == "cancel" else "after_turn"
        asked = threading.Event()

        def cancel() -> None:
            asked.set()
            loop.call_soon_threadsafe(result.cancel, mode)
            if mode == "after_turn":
                # The turn goes on by design until its end (which the held step blocks): the cancel is asked.
                record_cancel(args.style, screen.seen())  # plugpull

        if start:
            watch(cancel)
        # After cancel() the docstring asks the consumer to read on until the stream ends.
        async for event in result.stream_events():
            await screen.show(event)
        if asked.is_set():
            if mode == "immediate":
                record_cancel(args.style, screen.seen())  # plugpull: the stream ended: the cancel landed
            return 0
    elif args.style == "task-cancel":

        async def consume() -> None:
            async for event in result.stream_events():
                await screen.show(event)

        task = asyncio.ensure_future(consume())
        if start:
            watch(lambda: loop.call_soon_threadsafe(task.cancel))
        try:
            await task
        except asyncio.CancelledError:
            record_cancel(args.style, screen.seen())  # plugpull
            return 0
    else:
        stream = result.stream_events()
        gone = asyncio.Event()
        if start:
            watch(lambda: loop.call_soon_threadsafe(gone.set))
        went = asyncio.ensure_future(gone.wait())
        while True:
            step = asyncio.ensure_future(stream.__anext__())
            await asyncio.wait({step, went}, return_when=asyncio.FIRST_COMPLETED)
            if gone.is_set():
                step.cancel()
                try:
                    await step
                except (asyncio.CancelledError, StopAsyncIteration):
                    pass
                await stream.aclose()
                record_cancel(args.style, screen.seen())  # plugpull
                return 0
            try:
                event = step.result()
            except StopAsyncIteration:
                break
            await screen.show(event)
        went.cancel()
    answer = str(result.final_output).strip()
    record_result({"answer": answer})  # plugpull
    print(answer)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("style", choices=STYLES)
    parser.add_argument("phase", choices=("start", "resume"))
    args = parser.parse_args(argv)
    args.workdir = Path(os.environ.get("PLUGPULL_WORKDIR", "."))
    set_tracing_disabled(True)
    announce(framework="openai-agents", version=importlib.metadata.version("openai-agents"))  # plugpull
    return asyncio.run(converse(args))


if __name__ == "__main__":
    sys.exit(main())
