"""LangGraph: the client cancels a streamed run, then the next turn is sent on the same thread.

    python langgraph_cancel.py --point model-stream|tool-after-effect|after-final-answer [--durability sync|async|exit]
                               [--style task-cancel|keyboard-interrupt]

Needs langgraph and langgraph-checkpoint-sqlite (AsyncSqliteSaver needs aiosqlite). A StateGraph (model
node + ToolNode) with LangGraph's SQLite checkpointer in a temp dir; an offline model streams each word as
a chunk (``_stream``, streamed by ``stream_mode="messages"``), asks for ``refund`` once, then answers. The
run is held where the client cancels (a threading.Event inside the model at the 3rd chunk of its answer or
after its last chunk, or inside the tool right after its effect row), the consumer is cancelled (``task.cancel()`` on the
``astream`` consumer, or SIGINT to a sync ``stream`` consumer), the hold is let go, and then:
- the conversation LangGraph saved (``get_state(config).values["messages"]``) is compared with what the
  consumer had shown: streamed text of an AI message not in the thread is lost;
- a new user message is streamed on the same thread, and the history the model receives is checked the way
  OpenAI and Anthropic check one: every AI tool call must have its ToolMessage before the next message.

Exit 0 (PASS): nothing the user saw is lost and the next turn's history is valid; 1 (FAIL): either is not;
2 (ERROR): the cancel did not land.
"""

import argparse
import asyncio
import importlib.metadata
import json
import os
import signal
import sqlite3
import sys
import tempfile
import threading
import time
import uuid
from typing import Annotated, Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

NAME = "langgraph_cancel"
CONFIG = {"configurable": {"thread_id": "t1"}}
at_point, go_on = threading.Event(), threading.Event()
requests: list[list] = []
args: argparse.Namespace
# What the consumer has shown when the run is held at each point (the client cancels only after that).
WANT = {"model-stream": "Order A-1001", "tool-after-effect": "now.", "after-final-answer": "refunded."}


def dangling(messages: list) -> list[str]:
    """Tool call ids with no ToolMessage before the next non-tool message (or the end)."""
    out, waiting = [], []
    for m in messages:
        if isinstance(m, ToolMessage):
            waiting = [i for i in waiting if i != m.tool_call_id]
            continue
        out += waiting
        waiting = [c["id"] for c in m.tool_calls] if isinstance(m, AIMessage) else []
    return out + waiting


class Model(BaseChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> "Model":
        return self

    @property
    def _llm_type(self) -> str:
        return "witness"

    def _stream(self, messages, stop=None, run_manager=None, **kw):
        requests.append(list(messages))
        done = any(isinstance(m, ToolMessage) for m in messages)
        text = "Order A-1001 is refunded." if done else "I will refund order A-1001 now."
        for i, word in enumerate(text.split(" ")):
            if done and i == 2 and args.point == "model-stream" and not at_point.is_set():
                at_point.set()
                go_on.wait(30)
            yield ChatGenerationChunk(message=AIMessageChunk(content=word + " "))
        if done and args.point == "after-final-answer" and not at_point.is_set():
            # The whole answer has streamed; the model node has not returned yet.
            at_point.set()
            go_on.wait(30)
        if not done:
            call = {"name": "refund", "args": '{"order_id": "A-1001"}', "id": f"call_{uuid.uuid4().hex[:8]}"}
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[{**call, "index": 0}]))

    def _generate(self, messages, stop=None, run_manager=None, **kw):
        whole = None
        for chunk in self._stream(messages):
            whole = chunk.message if whole is None else whole + chunk.message
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content=whole.content, tool_calls=whole.tool_calls))]
        )


@tool
def refund(order_id: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
    """Refund an order."""
    with sqlite3.connect("effects.db") as db:
        db.execute("create table if not exists effects (name text, key text unique)")
        db.execute("insert or ignore into effects values ('refund', ?)", (tool_call_id,))
    if args.point == "tool-after-effect" and not at_point.is_set():
        at_point.set()
        go_on.wait(30)
    return f"refunded order {order_id}"


def graph(saver):
    model = Model()
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_node("tools", ToolNode([refund]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=saver)


def show(seen: dict, mode: str, data: Any) -> None:
    if mode == "messages" and isinstance(data[0], AIMessageChunk) and data[0].content:
        seen[data[0].id] = seen.get(data[0].id, "") + data[0].content


async def turn_async(text: str, cancel: bool) -> tuple[dict, bool]:
    seen: dict = {}
    async with AsyncSqliteSaver.from_conn_string("checkpoints.sqlite") as saver:
        g = graph(saver)

        async def consume():
            async for mode, data in g.astream(
                {"messages": [HumanMessage(text)]},
                CONFIG,
                stream_mode=["messages", "updates"],
                durability=args.durability,
            ):
                show(seen, mode, data)

        task = asyncio.ensure_future(consume())
        if cancel:
            await asyncio.to_thread(at_point.wait, 30)
            # The user has seen what was streamed before the hold: wait until the consumer has shown it.
            want = WANT[args.point]
            while not any(want in t for t in seen.values()) and not task.done():
                await asyncio.sleep(0.01)
            task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            go_on.set()
            return seen, True
    return seen, False


def turn_sync(text: str, cancel: bool) -> tuple[dict, bool]:
    seen: dict = {}
    with sqlite3.connect("checkpoints.sqlite", check_same_thread=False) as conn:
        g = graph(SqliteSaver(conn))

        def interrupt():
            if at_point.wait(30):
                want = WANT[args.point]
                for _ in range(3000):  # until the consumer has shown what was streamed before the hold
                    if any(want in t for t in list(seen.values())):
                        break
                    time.sleep(0.01)
                os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C
                go_on.set()  # a sync stream waits for its running step before it stops

        if cancel:
            threading.Thread(target=interrupt, daemon=True).start()
        try:
            for mode, data in g.stream(
                {"messages": [HumanMessage(text)]},
                CONFIG,
                stream_mode=["messages", "updates"],
                durability=args.durability,
            ):
                show(seen, mode, data)
        except KeyboardInterrupt:
            return seen, True
    return seen, False


async def saved_async() -> list:
    async with AsyncSqliteSaver.from_conn_string("checkpoints.sqlite") as saver:
        return (await graph(saver).aget_state(CONFIG)).values.get("messages", [])


def saved_sync() -> list:
    with sqlite3.connect("checkpoints.sqlite", check_same_thread=False) as conn:
        return graph(SqliteSaver(conn)).get_state(CONFIG).values.get("messages", [])


def main() -> int:
    global args
    parser = argparse.ArgumentParser()
    parser.add_argument("--point", choices=tuple(WANT), required=True)
    parser.add_argument("--durability", choices=("sync", "async", "exit"), default="sync")
    parser.add_argument("--style", choices=("task-cancel", "keyboard-interrupt"), default="task-cancel")
    args = parser.parse_args()
    os.chdir(tempfile.mkdtemp(prefix="witness-"))
    sync = args.style == "keyboard-interrupt"
    seen, cancelled = (
        turn_sync("Please refund order A-1001.", True)
        if sync
        else asyncio.run(turn_async("Please refund order A-1001.", True))
    )
    saved = saved_sync() if sync else asyncio.run(saved_async())
    kept = " ".join(str(m.content) for m in saved if isinstance(m, AIMessage))
    lost = [t for t in seen.values() if t.strip() and t.strip() not in kept]
    requests.clear()
    try:
        turn_sync("Is my refund done?", False) if sync else asyncio.run(turn_async("Is my refund done?", False))
        crashed = None
    except Exception as exc:  # noqa: BLE001 - the next turn's own failure is the evidence
        crashed = f"{type(exc).__name__}: {exc}"
    bad = dangling(requests[0]) if requests else []
    with sqlite3.connect("effects.db") as db:
        db.execute("create table if not exists effects (name text, key text unique)")
        refunds = db.execute("select count(*) from effects").fetchone()[0]
    verdict = "ERROR" if not cancelled else ("FAIL" if lost or bad or crashed else "PASS")
    did = (
        f"cancelled ({args.style}, durability={args.durability}) at {args.point}; saved {len(saved)} messages; "
        f"streamed text lost from the thread: {len(lost)} message(s) ({sum(len(t) for t in lost)} characters); "
        f"next turn's first model request: {len(bad)} tool call(s) without a result"
        + (f"; next turn crashed: {crashed}" if crashed else "")
    )
    print(did, file=sys.stderr)
    print(
        json.dumps(
            {
                "witness": NAME,
                "framework": "langgraph",
                "version": importlib.metadata.version("langgraph"),
                "verdict": verdict,
                "counts": {"refund": refunds},
                "did": did,
            }
        )
    )
    return {"PASS": 0, "FAIL": 1, "ERROR": 2}[verdict]


if __name__ == "__main__":
    sys.exit(main())
