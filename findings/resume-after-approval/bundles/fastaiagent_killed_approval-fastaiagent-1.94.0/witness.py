"""FastAIAgent: a process SIGKILLed inside the approved tool leaves a run no public call can finish.

    python fastaiagent_killed_approval.py --point before-effect|after-effect|before-save [--fork]

Needs only fastaiagent. An Agent with SQLiteCheckpointer and an offline FunctionModel asks for a
refund; the refund tool calls interrupt() first, so the run pauses (child process 1). Child 2 approves
with agent.resume(id, resume_value=Resume(approved=True)) and SIGKILLs itself inside the approved tool,
before or after the refund (a row in effects.db), or after the tool returned, in the checkpointer's
next put() (before-save). Child 3 recovers as the docs say (docs/agents/durability.md, "Tool-boundary
crash": "A plain agent.resume(execution_id) re-invokes the saved tool"), and, refused, resumes with
the approval again. --fork imports FastAIAgent once and forks each child process from this one.

Exit 0: recovery finished the run with one refund; 1: it could not (the claim taken by the killed
approver is never given back); 2: the kill did not land as designed.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import IO

NAME = "fastaiagent_killed_approval"
# What child() imports (it points FASTAIAGENT_LOCAL_DB at the run's local.db first): with --fork, imported once
# before the first fork. The import reads no configuration (get_config() is an lru_cache filled on first use, in
# the phase), writes nothing and starts no thread.
PHASE_IMPORTS = ("fastaiagent", "fastaiagent._internal.errors", "fastaiagent.checkpointers", "fastaiagent.testing")


def effects() -> int:
    with sqlite3.connect("effects.db") as db:
        db.execute("create table if not exists effects (name text)")
        return db.execute("select count(*) from effects where name = 'refund'").fetchone()[0]


def child(phase: str, point: str, db_url: str | None) -> int:
    os.environ["FASTAIAGENT_LOCAL_DB"] = os.path.abspath("local.db")
    from fastaiagent import Agent, AlreadyResumed, Resume, SQLiteCheckpointer, interrupt, tool
    from fastaiagent._internal.errors import ChainCheckpointError
    from fastaiagent.testing import FunctionModel

    def reply(messages):
        if any(str(getattr(m, "role", "")).endswith("tool") for m in messages):
            return "Refund for order A-1001 is done."
        return "", [{"name": "refund", "arguments": {"order_id": "A-1001"}}]

    @tool
    def refund(order_id: str) -> str:
        """Refund an order once a human approves."""
        interrupt("refund needs approval", {"order_id": order_id})  # returns the Resume when approved
        if phase == "approve" and point == "before-effect":
            os.kill(os.getpid(), signal.SIGKILL)
        with sqlite3.connect("effects.db") as db:
            db.execute("create table if not exists effects (name text)")
            db.execute("insert into effects values ('refund')")
        if phase == "approve" and point == "after-effect":
            os.kill(os.getpid(), signal.SIGKILL)
        return f"refunded order {order_id}"

    if db_url:  # FastAIAgent's PostgresCheckpointer (../../postgresql-stores/witness/on_postgres.py passes it)
        from fastaiagent.checkpointers import PostgresCheckpointer

        base, store_args = PostgresCheckpointer, (db_url,)
    else:
        base, store_args = SQLiteCheckpointer, ()

    class Store(base):
        def put(self, checkpoint):
            # before-save: the approved tool has returned; die before the run's next checkpoint.
            if phase == "approve" and point == "before-save":
                os.kill(os.getpid(), signal.SIGKILL)
            return super().put(checkpoint)

    agent = Agent(name="refunds", llm=FunctionModel(reply), tools=[refund], checkpointer=Store(*store_args))
    if phase == "start":
        result = agent.run("Please refund order A-1001.")
        Path("execution_id").write_text(result.execution_id)
        return 0 if result.status == "paused" else 2
    execution_id = Path("execution_id").read_text()
    if phase == "approve":
        agent.resume(execution_id, resume_value=Resume(approved=True))
        return 0
    said = []
    store = agent._checkpointer
    newest = store.get_last(execution_id)
    said.append(f"newest row {newest.node_id} status={newest.status}")
    try:
        result = agent.resume(execution_id)
    except ChainCheckpointError as plain:
        said.append(f"resume(id): ChainCheckpointError: {plain}")
        try:
            result = agent.resume(execution_id, resume_value=Resume(approved=True))
        except AlreadyResumed as again:
            said.append(f"resume(id, Resume(approved=True)): AlreadyResumed: {again}")
            print(json.dumps({"finished": False, "said": said}))
            return 0
    print(json.dumps({"finished": result.status == "completed", "said": said + [f"resumed: {result.status}"]}))
    return 0


def fork_phase(argv: list[str], out: IO, err: IO) -> int:
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


def wait_phase(pid: int, timeout: float, cmd: list[str]) -> int:
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


def run_forked(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    """What subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True, timeout=timeout)
    returns, with the phase forked from this process."""
    cmd = [sys.executable, __file__, *argv]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        code = wait_phase(fork_phase(argv, out, err), timeout, cmd)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(cmd, code, out.read().decode(), err.read().decode())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=("before-effect", "after-effect", "before-save"), default="after-effect")
    parser.add_argument("--phase", choices=("start", "approve", "recover"), help=argparse.SUPPRESS)
    parser.add_argument("--db-url", help="PostgresCheckpointer's database (default: SQLiteCheckpointer, local.db)")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="import FastAIAgent once and fork each phase from this process (default: each phase a new "
        "interpreter, as the records ran)",
    )
    args = parser.parse_args(argv)
    if args.fork and sys.platform != "linux":
        parser.error("--fork: needs Linux (os.fork, os.pidfd_open)")
    if args.phase:
        return child(args.phase, args.point, args.db_url)

    def run(phase: str) -> subprocess.CompletedProcess:
        phase_args = ["--point", args.point, "--phase", phase]
        phase_args += ["--db-url", args.db_url] if args.db_url else []
        if args.fork:
            return run_forked(phase_args, timeout=240)
        return subprocess.run([sys.executable, __file__, *phase_args], capture_output=True, text=True, timeout=240)

    version = importlib.metadata.version("fastaiagent")
    out = {"witness": NAME, "framework": "fastaiagent", "version": version}
    if args.fork:
        for name in PHASE_IMPORTS:
            importlib.import_module(name)
        if threading.active_count() != 1:
            did = f"--fork: {threading.active_count()} threads after the imports; fork() copies only this one"
            print(json.dumps(out | {"verdict": "ERROR", "counts": {}, "did": did}))
            return 2
    for stale in ("effects.db", "dbos.sqlite", "local.db", "flow_states.db", "execution_id", "go"):
        if os.path.exists(stale):  # a run starts from nothing: no counts or state of an earlier one
            os.remove(stale)
    effects()
    start = run("start")
    approve = run("approve") if start.returncode == 0 else None
    if approve is None or approve.returncode != -signal.SIGKILL:
        what = start.stderr[-300:] if approve is None else f"approve exit {approve.returncode}: {approve.stderr[-300:]}"
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"the approver was not SIGKILLed: {what}")
        print(json.dumps(out))
        return 2
    recover = run("recover")
    lines = recover.stdout.strip().splitlines()
    if recover.returncode != 0 or not lines:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"recover crashed: {recover.stderr[-300:]}")
        print(json.dumps(out))
        return 2
    seen = json.loads(lines[-1])
    refunds = effects()
    ok = seen["finished"] and refunds == 1
    out.update(
        verdict="PASS" if ok else "FAIL",
        counts={"refund": refunds},
        did=(
            f"paused on interrupt(), approved in a new process that was SIGKILLed at {args.point}; "
            f"recovery {'finished the run' if seen['finished'] else 'could not finish the run'}, "
            f"{refunds} refund(s)"
        ),
        detail={"recover": seen["said"]},
    )
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
