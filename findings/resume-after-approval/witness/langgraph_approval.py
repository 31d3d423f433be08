"""LangGraph runs an approved tool again: racing approvers each resume the interrupt; a kill after it re-runs.

A StateGraph (model node + ToolNode, SqliteSaver) whose refund tool calls interrupt() and, once approved,
inserts a row into a sqlite table (no idempotency key). start runs to the interrupt. racing-resumers: N
processes each invoke(Command(resume=...)) on the thread at once (released together from a file barrier
once all have imported LangGraph). killed-after-effect: one approver SIGKILLs itself right after the
insert; a new process recovers as an app would (an interrupt still pending: resume it again; a node next:
invoke(None)). One row is PASS.
"""

import argparse
import importlib.metadata
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid

CONFIG = {"configurable": {"thread_id": "refund-A-1001"}}


def child(args):
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    from langgraph.types import Command, interrupt

    class Model(BaseChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

        @property
        def _llm_type(self):
            return "scripted"

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            if any(isinstance(m, ToolMessage) for m in messages):
                reply = AIMessage(content="Refund for order A-1001 is done.")
            else:
                call = {"name": "refund", "args": {"order_id": "A-1001"}, "id": f"call_{uuid.uuid4().hex[:16]}"}
                reply = AIMessage(content="", tool_calls=[call])
            return ChatResult(generations=[ChatGeneration(message=reply)])

    @tool
    def refund(order_id: str) -> str:
        """Refund an order at the payment provider, once a human approves."""
        if not interrupt({"action": "refund", "order_id": order_id}).get("approved"):
            return "rejected"
        payments = sqlite3.connect(os.path.join(args.workdir, "payments.sqlite"), timeout=30)
        payments.execute("INSERT INTO refunds (key) VALUES (NULL)")
        payments.commit()
        if args.phase == "approve" and args.point == "killed-after-effect":
            os.kill(os.getpid(), signal.SIGKILL)
        return f"refunded order {order_id}"

    model = Model()
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode([refund]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    conn = sqlite3.connect(os.path.join(args.workdir, "checkpoints.sqlite"), check_same_thread=False, timeout=30)
    graph = builder.compile(checkpointer=SqliteSaver(conn))

    def run(payload):
        return graph.invoke(payload, CONFIG, durability=args.durability)

    if args.phase == "start":
        run({"messages": [HumanMessage("Please refund order A-1001.")]})
        return 0 if graph.get_state(CONFIG).interrupts else 3
    if args.phase == "approve":
        open(os.path.join(args.workdir, f"ready-{os.getpid()}"), "w").close()
        while not os.path.exists(os.path.join(args.workdir, "go")):
            time.sleep(0.005)
        run(Command(resume={"approved": True}))
        return 0
    state = graph.get_state(CONFIG)  # recover
    if state.interrupts:
        run(Command(resume={"approved": True}))
    elif state.next:
        run(None)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=("racing-resumers", "killed-after-effect"), default="racing-resumers")
    parser.add_argument("--durability", choices=("sync", "async"), default="sync")
    parser.add_argument("--racers", type=int, default=5)
    parser.add_argument("--phase", choices=("start", "approve", "recover"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        return child(args)
    out = {
        "witness": "langgraph_approval",
        "framework": "langgraph",
        "version": importlib.metadata.version("langgraph"),
    }
    workdir = tempfile.mkdtemp(prefix="witness-")
    try:
        db = sqlite3.connect(os.path.join(workdir, "payments.sqlite"))
        db.execute("CREATE TABLE refunds (id INTEGER PRIMARY KEY, key TEXT)")
        db.commit()
        base = [sys.executable, __file__, "--point", args.point, "--durability", args.durability, "--workdir", workdir]
        start = subprocess.run([*base, "--phase", "start"], capture_output=True, text=True, timeout=240)
        if start.returncode != 0:
            out.update(verdict="ERROR", counts={}, did=f"start did not pause for approval (exit {start.returncode})")
            return finish(out, 2)
        racers = args.racers if args.point == "racing-resumers" else 1
        approvers = [subprocess.Popen([*base, "--phase", "approve"], stderr=subprocess.PIPE) for _ in range(racers)]
        deadline = time.monotonic() + 120
        while sum(f.startswith("ready-") for f in os.listdir(workdir)) < racers and time.monotonic() < deadline:
            time.sleep(0.01)
        open(os.path.join(workdir, "go"), "w").close()
        codes = [p.wait(timeout=240) for p in approvers]
        if args.point == "racing-resumers":
            did = f"{racers} approvers resumed the interrupt at once (exit codes {codes})"
        elif codes != [-signal.SIGKILL]:
            out.update(verdict="ERROR", counts={}, did=f"the approver was not killed after the refund (exit {codes})")
            return finish(out, 2)
        else:
            recover = subprocess.run([*base, "--phase", "recover"], capture_output=True, text=True, timeout=240)
            did = f"the approver was killed after the refund; recover resumed the thread (exit {recover.returncode})"
        refunds = db.execute("SELECT COUNT(*) FROM refunds").fetchone()[0]
        verdict = "PASS" if refunds == 1 else "FAIL"
        out.update(
            verdict=verdict, counts={"refund": refunds}, did=f"{did}: {refunds} refund(s), durability={args.durability}"
        )
        return finish(out, 0 if verdict == "PASS" else 1)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def finish(out, code):
    print(json.dumps(out))
    return code


if __name__ == "__main__":
    sys.exit(main())
