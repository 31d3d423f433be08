"""A streaming LangGraph chat agent whose client walks away: the `langgraph-stream` target (cancel-mid-stream).

    python -m plugpull.targets.langgraph_stream task-cancel|aclose|keyboard-interrupt [--durability D] start|resume

Written as a user would write it; run it through plugpull as your own agent:
    plugpull --agent "python src/plugpull/targets/langgraph_stream.py task-cancel" --scenario cancel-mid-stream

A real StateGraph (model node + ToolNode) with LangGraph's own SQLite checkpointer in $PLUGPULL_WORKDIR
(AsyncSqliteSaver for ``astream``, SqliteSaver for ``stream``) and an offline scripted chat model that
streams its answer token by token (``_stream``; LangGraph streams it with ``stream_mode="messages"``). The
model first streams a sentence and asks for the refund tool, then streams the answer. The tool is keyed
by the tool call id LangGraph injects.

How the client cancels (a watcher thread waits for plugpull's word, ``wait_for_cancel``):
- ``task-cancel``: ``graph.astream(...)`` consumed in an asyncio task; the task is cancelled, as an ASGI
  server cancels a streaming response's task when the client disconnects;
- ``aclose``: the consumer races each ``__anext__`` against a disconnect event; on the disconnect it
  cancels the pending ``__anext__`` and closes the stream with ``aclose()``;
- ``keyboard-interrupt``: ``graph.stream(...)`` in a sync consumer; SIGINT to the process (Ctrl-C), caught
  as KeyboardInterrupt around the loop.
LangGraph's open-source library has no run-cancel API of its own (the Agent Server's ``runs.cancel`` is a
server feature), so there is no "framework's own cancel" style here.

start: the first turn, streamed. resume: the next turn: the conversation LangGraph saved
(``get_state(config).values["messages"]``) is reported, then a new user message is streamed on the same
thread, as a chat UI sends after a stop. With ``--next-turn finish-first`` the app first finishes a run the
cancel stopped between steps (``get_state(config).next`` not empty): ``stream(None, config)``, LangGraph's
way to continue a thread from its last checkpoint, then sends the new message.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import signal
import sqlite3
import sys
import threading
import uuid
from pathlib import Path
from typing import Annotated, Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from plugpull.client import (  # plugpull
    announce,
    boundary,
    check_model_request,
    mark_boundary,
    record_cancel,
    record_conversation,
    record_effect,
    record_result,
    wait_for_cancel,
)

THREAD = {"configurable": {"thread_id": "refund-A-1001"}}
FIRST = "Please refund order A-1001."
NEXT = "Is my refund done?"
PREAMBLE = "I will refund order A-1001 now."
ANSWER = "Order A-1001 is refunded."
STYLES = ("task-cancel", "aclose", "keyboard-interrupt")


def neutral(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as plugpull's neutral conversation (docs/agent-protocol.md, cancel-mid-stream)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        content = m.content if isinstance(m.content, str) else json.dumps(m.content)
        if isinstance(m, ToolMessage):
            out.append({"role": "tool", "content": content, "tool_call_id": m.tool_call_id})
        elif isinstance(m, AIMessage):
            calls = [{"id": c["id"], "name": c["name"]} for c in m.tool_calls]
            out.append({"role": "assistant", "content": content, "tool_calls": calls})
        elif isinstance(m, HumanMessage):
            out.append({"role": "user", "content": content})
        else:
            out.append({"role": "system", "content": content})
    return out


class StreamingScriptedModel(BaseChatModel):
    """An offline model that streams, decides from the conversation, and is strict as a provider is.

    It refuses (``check_model_request`` raises a 400) a history a real provider API refuses; it asks for
    the refund until the conversation holds a result that says "refunded"; each tool call gets a new id.
    """

    def bind_tools(self, tools: Any, **kwargs: Any) -> StreamingScriptedModel:
        return self

    @property
    def _llm_type(self) -> str:
        return "plugpull-scripted-streaming"

    def _stream(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any):
        check_model_request(neutral(messages))  # plugpull: a strict provider refuses a bad history (HTTP 400)
        done = any(isinstance(m, ToolMessage) and str(m.content).startswith("refunded") for m in messages)
        text = ANSWER if done else PREAMBLE
        for word in text.split(" "):
            mark_boundary("model-chunk", "before")  # plugpull: a cancel point after each chunk
            chunk = AIMessageChunk(content=word + " ")
            if run_manager is not None:
                run_manager.on_llm_new_token(chunk.content, chunk=ChatGenerationChunk(message=chunk))
            yield ChatGenerationChunk(message=chunk)
        if not done:
            call = {"name": "refund", "args": json.dumps({"order_id": "A-1001", "cents": 1999})}
            tail = AIMessageChunk(
                content="", tool_call_chunks=[{**call, "id": f"call_{uuid.uuid4().hex[:16]}", "index": 0}]
            )
            yield ChatGenerationChunk(message=tail)

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any):
        whole = None
        for chunk in self._stream(messages, stop, run_manager, **kw):
            whole = chunk.message if whole is None else whole + chunk.message
        message = AIMessage(content=str(whole.content).strip(), tool_calls=whole.tool_calls)
        return ChatResult(generations=[ChatGeneration(message=message)])


@tool
def refund(order_id: str, cents: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
    """Refund an order at the payment provider."""
    record_effect("refund", key=tool_call_id)  # plugpull
    return f"refunded {cents} cents on order {order_id}"


def build_graph(checkpointer: Any):
    model = StreamingScriptedModel()

    def call_model(state: MessagesState) -> dict:
        with boundary("model-call"):  # plugpull
            return {"messages": [model.bind_tools([refund]).invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode([refund]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=checkpointer)


class Screen:
    """What the user saw: the streamed text of each AI message, and the tool calls and results shown."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.tool_calls: list[str] = []
        self.tool_results: list[str] = []
        self.last = ""

    def show(self, mode: str, data: Any) -> None:
        if mode != "messages":
            return
        message, _meta = data
        if isinstance(message, AIMessageChunk):
            if message.content:
                self.texts[message.id] = self.texts.get(message.id, "") + str(message.content)
                self.last = self.texts[message.id]
                mark_boundary("chunk-shown", "before")  # plugpull: the chunk is on screen
            self.tool_calls += [c["id"] for c in message.tool_call_chunks if c.get("id")]
        elif isinstance(message, ToolMessage):
            self.tool_results.append(message.tool_call_id)

    def seen(self) -> dict[str, Any]:
        return {"text": list(self.texts.values()), "tool_calls": self.tool_calls, "tool_results": self.tool_results}


def watch(cancel: Any) -> None:
    """The client's disconnect: a thread waits for plugpull's word, then cancels the stream its way."""

    def run() -> None:
        if wait_for_cancel():  # plugpull
            cancel()

    threading.Thread(target=run, name="client-disconnect", daemon=True).start()


async def run_async(args: argparse.Namespace, payload: dict, screen: Screen) -> int:
    async with AsyncSqliteSaver.from_conn_string(str(args.workdir / "checkpoints.sqlite")) as saver:
        graph = build_graph(saver)
        if args.phase == "resume":
            state = await graph.aget_state(THREAD)
            if args.next_turn == "finish-first" and state.next:
                # The cancelled run stopped before its next step: finish it first, unseen, from its checkpoint.
                async for _ in graph.astream(None, THREAD, durability=args.durability):
                    pass
                state = await graph.aget_state(THREAD)
            record_conversation(neutral(state.values.get("messages", [])))  # plugpull
        stream = graph.astream(payload, THREAD, stream_mode=["messages", "updates"], durability=args.durability)
        loop = asyncio.get_running_loop()
        if args.style == "task-cancel":

            async def consume() -> None:
                async for mode, data in stream:
                    screen.show(mode, data)

            task = asyncio.ensure_future(consume())
            if args.phase == "start":
                watch(lambda: loop.call_soon_threadsafe(task.cancel))
            try:
                await task
            except asyncio.CancelledError:
                record_cancel(args.style, screen.seen())  # plugpull
                return 0
        else:
            gone = asyncio.Event()
            if args.phase == "start":
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
                    mode, data = step.result()
                except StopAsyncIteration:
                    break
                screen.show(mode, data)
            went.cancel()
    return finish(screen)


def run_sync(args: argparse.Namespace, payload: dict, screen: Screen) -> int:
    with sqlite3.connect(args.workdir / "checkpoints.sqlite", check_same_thread=False) as conn:
        graph = build_graph(SqliteSaver(conn))
        if args.phase == "resume":
            if args.next_turn == "finish-first" and graph.get_state(THREAD).next:
                for _ in graph.stream(None, THREAD, durability=args.durability):
                    pass
            record_conversation(neutral(graph.get_state(THREAD).values.get("messages", [])))  # plugpull
        if args.phase == "start":
            watch(lambda: os.kill(os.getpid(), signal.SIGINT))  # Ctrl-C
        try:
            for mode, data in graph.stream(
                payload, THREAD, stream_mode=["messages", "updates"], durability=args.durability
            ):
                screen.show(mode, data)
        except KeyboardInterrupt:
            record_cancel(args.style, screen.seen())  # plugpull
            return 130
    return finish(screen)


def finish(screen: Screen) -> int:
    answer = screen.last.strip()
    record_result({"answer": answer})  # plugpull
    print(answer)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("style", choices=STYLES)
    parser.add_argument("--durability", choices=("sync", "async", "exit"), default="sync")
    parser.add_argument(
        "--next-turn",
        choices=("new-message", "finish-first"),
        default="new-message",
        help="finish-first: when the thread's last run stopped before its next step (get_state().next), "
        "finish it with stream(None) before the new message",
    )
    parser.add_argument("phase", choices=("start", "resume"))
    args = parser.parse_args(argv)
    args.workdir = Path(os.environ.get("PLUGPULL_WORKDIR", "."))
    announce(framework="langgraph", version=importlib.metadata.version("langgraph"))  # plugpull
    payload = {"messages": [HumanMessage(FIRST if args.phase == "start" else NEXT)]}
    screen = Screen()
    if args.style == "keyboard-interrupt":
        return run_sync(args, payload, screen)
    return asyncio.run(run_async(args, payload, screen))


if __name__ == "__main__":
    sys.exit(main())
