"""LangGraph: one of two tool calls of a turn raises, and the ToolNode's rerun sends the answered one again (no plugpull).

    python langgraph_toolnode_sibling.py [--handling raise|retry-policy] [--point before-effect|after-effect]

A StateGraph (model node + ToolNode, tools_condition) with a SqliteSaver; a scripted chat model stands in for the
model (no key, no network): its first turn asks for two tools at once, send_email (the mail API takes no key) and
refund (keyed by its tool call id, the same on every rerun of that call); then it answers. The ToolNode runs both
calls inside one node. refund's first call raises ConnectionError, right before (``before-effect``) or right after
(``after-effect``) it writes its refund row; send_email always succeeds. With ``--handling raise`` (ToolNode's
default handling: anything but a ToolInvocationError propagates) the error ends the first process and a second
process resumes the thread with ``invoke(None)``, LangGraph's own resume; with ``retry-policy`` the tools node has
``RetryPolicy(initial_interval=0.05)``, which retries a ConnectionError in the same process.
Prints one JSON line: the emails sent, the refunds (distinct keys), and the tool runs per phase.
Exit 0: the answered send_email was not sent again (one email, one refund); 1: the rerun of the node sent it again;
2: the error did not happen as designed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from typing import Annotated

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import RetryPolicy

THREAD = {"configurable": {"thread_id": "refund-A-1001"}}


def db(folder: str) -> sqlite3.Connection:
    conn = sqlite3.connect(os.path.join(folder, "provider.sqlite"))
    conn.execute("create table if not exists emails (phase text)")
    conn.execute("create table if not exists refunds (key text, phase text)")
    conn.execute("create table if not exists runs (tool text, phase text)")
    return conn


def graph(folder: str, phase: str, point: str, handling: str):
    class ScriptedChatModel(BaseChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def _generate(self, messages, stop=None, run_manager=None, **kw):
            if any(isinstance(m, ToolMessage) for m in messages):
                reply = AIMessage(content="Refund for order A-1001 is done.")
            else:
                calls = [
                    {"name": "send_email", "args": {"order_id": "A-1001"}, "id": "call_email_1"},
                    {"name": "refund", "args": {"order_id": "A-1001"}, "id": "call_refund_1"},
                ]
                reply = AIMessage(content="", tool_calls=calls)
            return ChatResult(generations=[ChatGeneration(message=reply)])

    @tool
    def send_email(order_id: str) -> str:
        """Tell the customer the order is being refunded."""
        conn = db(folder)
        conn.execute("insert into runs values ('send_email', ?)", (phase,))
        conn.execute("insert into emails values (?)", (phase,))
        conn.commit()
        return f"emailed the customer of order {order_id}"

    @tool
    def refund(order_id: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Refund an order at the payment provider."""
        conn = db(folder)
        first = conn.execute("select count(*) from runs where tool = 'refund'").fetchone()[0] == 0
        conn.execute("insert into runs values ('refund', ?)", (phase,))
        conn.commit()
        if first and point == "before-effect":
            raise ConnectionError("connection reset by peer")
        conn.execute("insert into refunds values (?, ?)", (tool_call_id, phase))
        conn.commit()
        if first:
            raise ConnectionError("connection reset by peer")  # the refund happened; the reply was lost
        return f"refunded order {order_id}"

    model = ScriptedChatModel()
    tools = [send_email, refund]
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    if handling == "retry-policy":
        builder.add_node("tools", ToolNode(tools), retry_policy=RetryPolicy(initial_interval=0.05))
    else:
        builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    conn = sqlite3.connect(os.path.join(folder, "checkpoints.sqlite"), check_same_thread=False)
    return builder.compile(checkpointer=SqliteSaver(conn))


def child(folder: str, phase: str, point: str, handling: str) -> int:
    app = graph(folder, phase, point, handling)
    payload = {"messages": [HumanMessage("Please refund order A-1001.")]} if phase == "run" else None
    final = app.invoke(payload, THREAD, durability="sync")
    print(json.dumps({"final": final["messages"][-1].content}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--handling", choices=("raise", "retry-policy"), default="raise")
    parser.add_argument("--point", choices=("before-effect", "after-effect"), default="before-effect")
    parser.add_argument("--phase", choices=("run", "resume"), help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        return child(args.folder, args.phase, args.point, args.handling)
    with tempfile.TemporaryDirectory() as folder:
        phases = {}
        for phase in ("run", "resume") if args.handling == "raise" else ("run",):
            argv = [sys.executable, __file__, "--handling", args.handling, "--point", args.point]
            argv += ["--phase", phase, "--folder", folder]
            phases[phase] = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        conn = db(folder)
        emails = conn.execute("select count(*) from emails").fetchone()[0]
        refunds = conn.execute("select count(distinct key) from refunds").fetchone()[0]
        runs = [f"{tool}:{phase}" for tool, phase in conn.execute("select tool, phase from runs")]
    started = phases["run"]
    raised = started.returncode != 0 and "ConnectionError" in started.stderr
    if (args.handling == "raise" and not raised) or (args.handling == "retry-policy" and started.returncode != 0):
        did = f"the tool's error did not run as designed (first process exit {started.returncode})"
        print(json.dumps({"verdict": "ERROR", "did": did}))
        return 2
    last = phases.get("resume", started)
    if last.returncode != 0:
        print(json.dumps({"verdict": "ERROR", "did": f"the run did not finish (exit {last.returncode})"}))
        return 2
    how = "resumed with invoke(None)" if args.handling == "raise" else "retried by the node's RetryPolicy"
    did = (
        f"langgraph {importlib.metadata.version('langgraph')}: refund raised {args.point.replace('-', ' ')} beside an "
        f"answered send_email in one ToolNode; {how}: emails {emails}, refunds {refunds}, tool runs {runs}"
    )
    verdict = "PASS" if emails == 1 and refunds == 1 else "FAIL"
    print(json.dumps({"verdict": verdict, "counts": {"send_email": emails, "refund": refunds}, "did": did}))
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
