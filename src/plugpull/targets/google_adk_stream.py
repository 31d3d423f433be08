"""A streaming Google ADK chat agent whose client walks away: the `google-adk-stream` target (cancel-mid-stream).

    python -m plugpull.targets.google_adk_stream abort|task-cancel start|resume

Written as a user would write it: an ``LlmAgent`` with one refund tool in an ``App``, its sessions in
``SqliteSessionService`` in $PLUGPULL_WORKDIR, ``Runner.run_async(..., run_config=RunConfig(streaming_mode=
StreamingMode.SSE))``, and a scripted offline ``BaseLlm`` that streams as Gemini's SSE stream does: partial
``LlmResponse``s (``partial=True``) with the text chunks, then the whole response. It streams a sentence and asks
for the refund tool, then streams the answer. The tool is keyed by the function call id ADK assigns
(``ToolContext.function_call_id``).

How the client cancels (a watcher thread waits for plugpull's word, ``wait_for_cancel``):
- ``abort``: the ``abort_signal`` event given to ``run_async`` is set (runners.py: "Optional asyncio.Event to
  cancel the invocation"); the consumer reads on until the stream ends;
- ``task-cancel``: the asyncio task consuming ``run_async`` is cancelled, as an ASGI server cancels a streaming
  response's task when the client disconnects.

start: the first turn, streamed. resume: the next turn: the session's events are reported, then a new user
message is streamed on the same session, as a chat UI sends after a stop.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools.tool_context import ToolContext
from google.genai import types

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
from plugpull.targets.google_adk_support import preimport

APP_NAME, USER_ID, SESSION_ID = "refunds", "customer-1", "refund-A-1001"
FIRST = "Please refund order A-1001."
NEXT = "Is my refund done?"
PREAMBLE = "I will refund order A-1001 now."
ANSWER = "Order A-1001 is refunded."
STYLES = ("abort", "task-cancel")
# ADK warns that App and some options are experimental; the warnings are not this app's output.
warnings.filterwarnings("ignore")


def neutral(contents: list[types.Content | None]) -> list[dict[str, Any]]:
    """ADK contents (a request's, or the session events') as plugpull's neutral conversation.

    ADK takes its own ``adk-`` function call ids out of a model request (Gemini pairs a call with its response
    by name and order), so a call or response without an id is named ``<name>#<k>``: the k-th of its name.
    """
    out: list[dict[str, Any]] = []
    calls_seen: dict[str, int] = {}
    results_seen: dict[str, int] = {}

    def ref(kind: dict[str, int], name: str, given: str | None) -> str:
        kind[name] = kind.get(name, 0) + 1
        return given or f"{name}#{kind[name]}"

    for content in contents:
        if content is None:
            continue
        parts = content.parts or []
        text = "".join(p.text for p in parts if p.text and not p.thought)
        calls = [
            {"id": ref(calls_seen, p.function_call.name, p.function_call.id), "name": p.function_call.name}
            for p in parts
            if p.function_call
        ]
        for p in parts:
            if p.function_response:
                result = p.function_response
                call_id = ref(results_seen, result.name, result.id)
                out.append({"role": "tool", "content": str(result.response), "tool_call_id": call_id})
        if content.role == "model" and (text or calls):
            out.append({"role": "assistant", "content": text, "tool_calls": calls})
        elif content.role == "user" and text:
            out.append({"role": "user", "content": text})
    return out


async def mark(name: str, edge: str) -> None:
    # In a thread: a held mark must not block the event loop, or the client's cancel could not land.
    await asyncio.to_thread(mark_boundary, name, edge)


class StreamingScriptedLlm(BaseLlm):
    """An offline model that streams, decides from the conversation, and is strict as a provider is."""

    model: str = "plugpull-scripted-streaming"

    async def generate_content_async(self, llm_request: Any, stream: bool = False):
        contents = list(llm_request.contents or [])
        await mark("model-call", "before")  # plugpull
        await asyncio.to_thread(check_model_request, neutral(contents))  # plugpull: a strict provider (HTTP 400)
        done = any(
            p.function_response and str(p.function_response.response).find("refunded") >= 0
            for c in contents
            for p in c.parts or []
        )
        text = ANSWER if done else PREAMBLE
        for word in text.split(" "):
            await mark("model-chunk", "before")  # plugpull: a cancel point after each chunk
            chunk = types.Content(role="model", parts=[types.Part(text=word + " ")])
            yield LlmResponse(content=chunk, partial=True)
        parts = [types.Part(text=text)]
        if not done:
            call = types.FunctionCall(name="refund", args={"order_id": "A-1001", "cents": 1999})
            parts.append(types.Part(function_call=call))
        yield LlmResponse(content=types.Content(role="model", parts=parts), partial=False)
        await mark("model-call", "after")  # plugpull


async def refund(order_id: str, cents: int, tool_context: ToolContext) -> dict:
    """Refund an order at the payment provider."""
    await asyncio.to_thread(record_effect, "refund", key=tool_context.function_call_id)  # plugpull
    return {"result": f"refunded {cents} cents on order {order_id}"}


def build_runner(workdir: Path) -> Runner:
    agent = LlmAgent(name="refunds", model=StreamingScriptedLlm(), instruction="Refund orders.", tools=[refund])
    return Runner(app=App(name=APP_NAME, root_agent=agent), session_service=SqliteSessionService(str(workdir / "s.db")))


class Screen:
    """What the user saw: the streamed text of each model message, and the function calls and responses shown."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.tool_calls: list[str] = []
        self.tool_results: list[str] = []
        self.new_message = True

    async def show(self, event: Any) -> None:
        if event.partial and event.content and event.content.parts and event.content.parts[0].text:
            if self.new_message:
                self.texts.append("")
                self.new_message = False
            self.texts[-1] += event.content.parts[0].text
            await mark("chunk-shown", "before")  # plugpull: the chunk is on screen
        elif not event.partial:
            self.new_message = True
            self.tool_calls += [c.id for c in event.get_function_calls()]
            self.tool_results += [r.id for r in event.get_function_responses()]

    def seen(self) -> dict[str, Any]:
        return {"text": list(self.texts), "tool_calls": self.tool_calls, "tool_results": self.tool_results}


def watch(cancel: Any) -> None:
    """The client's disconnect: a thread waits for plugpull's word, then cancels the stream its way."""

    def run() -> None:
        if wait_for_cancel():  # plugpull
            cancel()

    threading.Thread(target=run, name="client-disconnect", daemon=True).start()


async def converse(args: argparse.Namespace) -> int:
    runner = build_runner(args.workdir)
    sessions = runner.session_service
    session = await sessions.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=SESSION_ID)
    if args.phase == "resume":
        record_conversation(neutral([e.content for e in session.events] if session else []))  # plugpull
    if session is None:
        await sessions.create_session(app_name=APP_NAME, user_id=USER_ID, session_id=SESSION_ID)
    text = FIRST if args.phase == "start" else NEXT
    abort = asyncio.Event()
    screen = Screen()
    final: list[str] = []

    async def consume() -> None:
        async for event in runner.run_async(
            user_id=USER_ID,
            session_id=SESSION_ID,
            new_message=types.Content(role="user", parts=[types.Part(text=text)]),
            run_config=RunConfig(streaming_mode=StreamingMode.SSE),
            abort_signal=abort,
        ):
            await screen.show(event)
            if not event.partial and event.content and event.content.parts and event.content.parts[0].text:
                final.append(event.content.parts[0].text)

    task = asyncio.ensure_future(consume())
    if args.phase == "start":
        loop = asyncio.get_running_loop()
        if args.style == "abort":
            watch(lambda: loop.call_soon_threadsafe(abort.set))
        else:
            watch(lambda: loop.call_soon_threadsafe(task.cancel))
    try:
        await task
    except asyncio.CancelledError:
        record_cancel(args.style, screen.seen())  # plugpull
        return 0
    if abort.is_set():
        record_cancel(args.style, screen.seen())  # plugpull: the stream ended: the abort landed
        return 0
    answer = final[-1].strip() if final else ""
    record_result({"answer": answer})  # plugpull
    print(answer)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("style", choices=STYLES)
    parser.add_argument("phase", choices=("start", "resume"))
    args = parser.parse_args(argv)
    args.workdir = Path(os.environ.get("PLUGPULL_WORKDIR", "."))
    announce(framework="google-adk", version=importlib.metadata.version("google-adk"))  # plugpull
    return asyncio.run(converse(args))


def plugpull_prefork(argv: list[str]) -> None:  # plugpull (optional): what --fork-server imports once
    """Import what ADK imports only once a run starts, in plugpull's fork server (``google_adk_support.preimport``).

    Returns None: the forked phase runs this module as ``__main__``, as a cold one does (docs/DECISIONS.md,
    "Throughput").
    """
    preimport()
    return None


if __name__ == "__main__":
    sys.exit(main())
