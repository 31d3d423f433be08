"""A LangGraph refund agent whose tool asks for approval: the built-in `langgraph-approval` target.

    python -m plugpull.targets.langgraph_approval [--durability sync|async|exit] start|approve|recover

A real StateGraph (model node + ToolNode) with a real SqliteSaver in $PLUGPULL_WORKDIR and the
scripted offline model of plugpull.targets.langgraph_refund. The refund tool calls
``interrupt()`` (LangGraph docs, "Human-in-the-loop": interrupt inside a tool pauses the graph
and ``Command(resume=...)`` continues it, re-running the node from its start) and only after an
approval calls ``record_effect("refund")`` with no key, so the framework's own behaviour shows.

start:   ``invoke(input)`` runs to the interrupt; exits 0 with the run paused.
approve: ``invoke(Command(resume={"approved": True}))`` in a new process, from the saver alone.
         LangGraph has no refusal of its own (no exception says "already resumed"), so this
         never exits 3: whatever LangGraph does with a second resume is what plugpull counts.
recover: what an app would do after a crash, with LangGraph's public API only: read
         ``get_state``; if an interrupt is still pending, resume it again with the approval
         the human gave; else if a node is next, ``invoke(None)``; else the run is finished.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sqlite3
import sys
from pathlib import Path
from typing import Annotated

from langchain_core.messages import HumanMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command, interrupt

from plugpull.client import PAUSED_AGAIN_EXIT, WORKDIR_ENV, announce, gate, record_effect, record_result
from plugpull.targets.langgraph_refund import THREAD, build_graph

APPROVED = {"approved": True}


@tool
def refund(order_id: str, cents: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
    """Refund an order at the payment provider, once a human approves."""
    answer = interrupt({"action": "refund", "order_id": order_id, "cents": cents})
    if not answer.get("approved"):
        return f"refund of {order_id} rejected"
    record_effect("refund")  # plugpull: the side effect, after the approval
    return f"refunded {cents} cents on order {order_id}"


def log(message: str) -> None:
    print(f"langgraph_approval: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--durability", choices=("sync", "async", "exit"), default="sync")
    parser.add_argument("phase", choices=("start", "approve", "recover"))
    args = parser.parse_args(argv)
    announce(framework="langgraph", version=importlib.metadata.version("langgraph"))
    workdir = Path(os.environ.get(WORKDIR_ENV, "."))
    conn = sqlite3.connect(workdir / "checkpoints.sqlite", check_same_thread=False)
    graph = build_graph(SqliteSaver(conn), refund)
    run = lambda payload: graph.invoke(payload, THREAD, durability=args.durability)  # noqa: E731

    if args.phase == "start":
        run({"messages": [HumanMessage("Please refund order A-1001.")]})
        state = graph.get_state(THREAD)
        if not state.interrupts:
            log(f"start did not pause for approval (next={state.next})")
            return 1
        log(f"paused for approval: {state.interrupts[0].value}")
        return 0
    if args.phase == "approve":
        gate()  # plugpull: racing approvers are released together here
        run(Command(resume=APPROVED))
    else:
        state = graph.get_state(THREAD)
        if state.interrupts:
            log("an approval is still pending: resuming it with the approval given")
            run(Command(resume=APPROVED))
        elif state.next:
            log(f"continuing from the last checkpoint (next={state.next})")
            run(None)
        else:
            log("the run is finished: nothing to recover")
    state = graph.get_state(THREAD)
    if state.interrupts:
        log(f"the run paused again: {state.interrupts[0].value}")
        return PAUSED_AGAIN_EXIT
    # The run's outcome as its checkpoint holds it (the same whichever process finished the run):
    # the model's final answer.
    messages = state.values.get("messages", [])
    answer = messages[-1].content if messages else None
    record_result({"answer": answer})  # plugpull
    log(f"done: {answer}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
