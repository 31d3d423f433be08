"""LangGraph runs a tool again when its process was SIGKILLed after the tool's side effect.

A StateGraph (model node + ToolNode, SqliteSaver) with a scripted offline model that makes a new tool call
id each time it runs. The refund tool inserts a row into a sqlite table (keyed by the tool call id with
--key tool-call-id, so a re-run with the same id adds none) and start SIGKILLs itself right before or after
it. A new process resumes with invoke(None, config) (the input again if the thread has no checkpoint); one
row is PASS. --model-step aims the kill at the background writes of durability="async": "unsaved" blocks
the step-0 put until the kill (later puts wait for it; the model task's pending writes point at it),
"writes-saved" blocks the step-1 put once both pending writes (input, model task) are saved, "saved" waits
for the step-1 put. --start-python starts (and kills) the run under another release's interpreter. --fork
imports LangGraph once and forks each phase from this process (the start stays cold under --start-python).
"""

import argparse
import contextlib
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
import traceback
import uuid
from typing import Annotated

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
)


def child(args):
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import InjectedToolCallId, tool
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    start = args.phase == "start"
    block_step = {"unsaved": 0, "writes-saved": 1}.get(args.model_step) if start else None
    seen, changed = [], threading.Condition()  # what the writer did: ("blocked", step), ("put", step), "writes"

    def note(what):
        with changed:
            seen.append(what)
            changed.notify_all()

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

    class Saver(SqliteSaver):
        def put(self, config, checkpoint, metadata, new_versions):
            step = metadata.get("step")
            if step == block_step:
                note(("blocked", step))
                threading.Event().wait()  # held until the SIGKILL
            out = super().put(config, checkpoint, metadata, new_versions)
            note(("put", step))
            return out

        def put_writes(self, config, writes, task_id, task_path=""):
            out = super().put_writes(config, writes, task_id, task_path)
            note("writes")
            return out

    def aimed():
        return {
            "raced": True,
            "unsaved": ("blocked", 0) in seen,
            "writes-saved": ("blocked", 1) in seen and seen.count("writes") >= 2,
            "saved": ("put", 1) in seen,
        }[args.model_step]

    @tool
    def refund(order_id: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Refund an order at the payment provider."""
        if start:
            with changed:
                if not changed.wait_for(aimed, timeout=60):
                    print(f"the writes never stood as --model-step {args.model_step} asks", file=sys.stderr)
                    os._exit(3)
            if args.point == "before-effect":
                os.kill(os.getpid(), signal.SIGKILL)
        payments = sqlite3.connect(os.path.join(args.workdir, "payments.sqlite"))
        key = tool_call_id if args.key == "tool-call-id" else None
        payments.execute("INSERT OR IGNORE INTO refunds (key) VALUES (?)", (key,))
        payments.commit()
        if start:
            os.kill(os.getpid(), signal.SIGKILL)
        return f"refunded order {order_id}"

    model = Model()
    builder = StateGraph(MessagesState)
    builder.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode([refund]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    saver = Saver(sqlite3.connect(os.path.join(args.workdir, "checkpoints.sqlite"), check_same_thread=False))
    graph = builder.compile(checkpointer=saver)
    request = {"messages": [HumanMessage("Please refund order A-1001.")]}
    payload = request if start or saver.get_tuple(CONFIG) is None else None
    print(graph.invoke(payload, CONFIG, durability=args.durability)["messages"][-1].content)


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
    parser.add_argument("--durability", choices=("sync", "async"), default="sync")
    parser.add_argument("--key", choices=("none", "tool-call-id"), default="none")
    parser.add_argument("--point", choices=("before-effect", "after-effect"), default="after-effect")
    parser.add_argument("--model-step", choices=("raced", "unsaved", "writes-saved", "saved"), default="raced")
    parser.add_argument("--start-python", default=sys.executable, help="interpreter of the release that starts")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="import LangGraph once and fork each phase from this process (default: each phase a new "
        "interpreter, as the records ran)",
    )
    parser.add_argument("--phase", choices=("start", "resume"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fork and sys.platform != "linux":
        parser.error("--fork: needs Linux (os.fork, os.pidfd_open)")
    if args.phase:
        return child(args)
    out = {"witness": "kill_mid_tool", "framework": "langgraph", "version": importlib.metadata.version("langgraph")}
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
            db.execute("CREATE TABLE refunds (id INTEGER PRIMARY KEY, key TEXT UNIQUE)")
            db.commit()
        how = ["--durability", args.durability, "--key", args.key, "--point", args.point]
        phase_args = [*how, "--model-step", args.model_step, "--workdir", workdir, "--phase"]

        def phase(python, name):
            if args.fork and python == sys.executable:
                return run_forked([*phase_args, name], timeout=240)
            return subprocess.run([python, __file__, *phase_args, name], capture_output=True, text=True, timeout=240)

        if args.start_python != sys.executable:
            version = "import importlib.metadata as m; print(m.version('langgraph'))"
            out["start_version"] = subprocess.run(
                [args.start_python, "-c", version], capture_output=True, text=True
            ).stdout.strip()
        start = phase(args.start_python, "start")
        if start.returncode != -signal.SIGKILL:
            why = (start.stderr.strip().splitlines() or ["no output"])[-1]
            out.update(
                verdict="ERROR", counts={}, did=f"start was not killed in the tool (exit {start.returncode}: {why})"
            )
            return finish(out, 2)
        resume = phase(sys.executable, "resume")
        with contextlib.closing(sqlite3.connect(payments)) as db:
            refunds = db.execute("SELECT COUNT(*) FROM refunds").fetchone()[0]
        did = (
            f"killed {args.point.split('-')[0]} the refund (durability={args.durability}, key={args.key}, "
            f"model step {args.model_step}), resumed with invoke(None): {refunds} refund(s)"
        )
        if resume.returncode != 0:
            did += f"; resume crashed: {(resume.stderr.strip().splitlines() or ['no output'])[-1]}"
        verdict = "PASS" if refunds == 1 and resume.returncode == 0 else "FAIL"
        out.update(verdict=verdict, counts={"refund": refunds}, did=did)
        return finish(out, 0 if verdict == "PASS" else 1)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def finish(out, code):
    print(json.dumps(out))
    return code


if __name__ == "__main__":
    sys.exit(main())
