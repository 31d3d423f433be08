"""LangGraph runs an approved tool again: racing approvers each resume the interrupt; a kill after it re-runs.

A StateGraph (model node + ToolNode, SqliteSaver) whose refund tool calls interrupt() and, once approved,
inserts a row into a sqlite table (no idempotency key). start runs to the interrupt. racing-resumers: N
processes each invoke(Command(resume=...)) on the thread at once (released together from a file barrier
once all have imported LangGraph). killed-after-effect: one approver SIGKILLs itself right after the
insert; a new process recovers as an app would (an interrupt still pending: resume it again; a node next:
invoke(None)). One row is PASS. --fork imports LangGraph once and forks each phase from this process.
"""

import argparse
import contextlib
import functools
import importlib
import importlib.metadata
import json
import os
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid

CONFIG = {"configurable": {"thread_id": "refund-A-1001"}}
# What child() imports: with --fork, imported once before the first fork.
PHASE_IMPORTS = (
    "langchain_core.language_models.chat_models",
    "langchain_core.messages",
    "langchain_core.outputs",
    "langchain_core.tools",
    "langgraph.checkpoint.sqlite",
    "langgraph.graph",
    "langgraph.prebuilt",
    "langgraph.types",
)


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


def fork_phase(argv, out, err):
    """Run main(argv) in a child forked from this process, its stdout and stderr on the files out and err."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            sys.argv = [__file__, *argv]
            code = main(argv) or 0
        except SystemExit as stop:  # as the interpreter takes it: None is 0, a message is printed and 1
            if stop.code is None or isinstance(stop.code, int):
                code = stop.code or 0
            else:
                print(stop.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        finally:  # os._exit: the parent's exit handlers (its temp dir's removal) are not the child's
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    return pid


def wait_phase(pid, timeout, cmd):
    """The forked phase's exit code as subprocess gives it (-9 when SIGKILLed); SIGKILLed after timeout s and,
    as subprocess.run does, TimeoutExpired naming cmd, the phase's command line when cold."""
    pidfd = os.pidfd_open(pid)
    exited = select.select([pidfd], [], [], timeout)[0]
    os.close(pidfd)
    if not exited:
        os.kill(pid, signal.SIGKILL)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if not exited:
        raise subprocess.TimeoutExpired(cmd, timeout)
    return code


def run_forked(argv, timeout):
    """What subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True, timeout=timeout)
    returns, with the phase forked from this process."""
    cmd = [sys.executable, __file__, *argv]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        code = wait_phase(fork_phase(argv, out, err), timeout, cmd)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(cmd, code, out.read().decode(), err.read().decode())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=("racing-resumers", "killed-after-effect"), default="racing-resumers")
    parser.add_argument("--durability", choices=("sync", "async"), default="sync")
    parser.add_argument("--racers", type=int, default=5)
    parser.add_argument(
        "--fork",
        action="store_true",
        help="import LangGraph once and fork each phase from this process (default: each phase a new "
        "interpreter, as the records ran)",
    )
    parser.add_argument("--phase", choices=("start", "approve", "recover"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fork and sys.platform != "linux":
        parser.error("--fork: needs Linux (os.fork, os.pidfd_open)")
    if args.phase:
        return child(args)
    out = {
        "witness": "langgraph_approval",
        "framework": "langgraph",
        "version": importlib.metadata.version("langgraph"),
    }
    if args.fork:
        for name in PHASE_IMPORTS:
            importlib.import_module(name)
        if threading.active_count() != 1:
            did = f"--fork: {threading.active_count()} threads after the imports; fork() copies only this one"
            out.update(verdict="ERROR", counts={}, did=did)
            return finish(out, 2)
    workdir = tempfile.mkdtemp(prefix="witness-")
    try:
        payments = os.path.join(workdir, "payments.sqlite")
        with contextlib.closing(sqlite3.connect(payments)) as db:  # closed: no connection open across a fork
            db.execute("CREATE TABLE refunds (id INTEGER PRIMARY KEY, key TEXT)")
            db.commit()
        phase_args = ["--point", args.point, "--durability", args.durability, "--workdir", workdir, "--phase"]

        def run(phase):
            if args.fork:
                return run_forked([*phase_args, phase], timeout=240)
            return subprocess.run(
                [sys.executable, __file__, *phase_args, phase], capture_output=True, text=True, timeout=240
            )

        def approver():  # started now; returns what waits for its exit code (its stderr is never read)
            if args.fork:
                argv = [*phase_args, "approve"]
                with open(os.devnull, "w") as nowhere:
                    pid = fork_phase(argv, sys.stdout, nowhere)
                return functools.partial(wait_phase, pid, cmd=[sys.executable, __file__, *argv])
            return subprocess.Popen([sys.executable, __file__, *phase_args, "approve"], stderr=subprocess.PIPE).wait

        start = run("start")
        if start.returncode != 0:
            out.update(verdict="ERROR", counts={}, did=f"start did not pause for approval (exit {start.returncode})")
            return finish(out, 2)
        racers = args.racers if args.point == "racing-resumers" else 1
        approvers = [approver() for _ in range(racers)]
        deadline = time.monotonic() + 120
        while sum(f.startswith("ready-") for f in os.listdir(workdir)) < racers and time.monotonic() < deadline:
            time.sleep(0.01)
        open(os.path.join(workdir, "go"), "w").close()
        codes = [wait(timeout=240) for wait in approvers]
        if args.point == "racing-resumers":
            did = f"{racers} approvers resumed the interrupt at once (exit codes {codes})"
        elif codes != [-signal.SIGKILL]:
            out.update(verdict="ERROR", counts={}, did=f"the approver was not killed after the refund (exit {codes})")
            return finish(out, 2)
        else:
            recover = run("recover")
            did = f"the approver was killed after the refund; recover resumed the thread (exit {recover.returncode})"
        with contextlib.closing(sqlite3.connect(payments)) as db:
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
