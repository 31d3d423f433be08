"""FastAIAgent on SQLite: approvers racing in separate processes; one refunds, a loser may crash.

    python fastaiagent_racing_approvers.py [--racers 5] [--db-url postgresql://...] [--fork]

Needs only fastaiagent. An Agent with SQLiteCheckpointer (one local.db) and an offline FunctionModel
pauses on interrupt() inside its refund tool (child process 1). Then --racers processes each build the
agent, wait at a start line (a file the parent creates once all are ready) and call
agent.resume(id, resume_value=Resume(approved=True)). The docs promise one winner: "Exactly one caller
gets the row back; everyone else gets None and raises AlreadyResumed" (docs/durability/concepts.md),
and say SQLite coordinates processes only through its file lock ("not for distributed use"). With --db-url
the store is FastAIAgent's PostgresCheckpointer on that database instead (its claim is one DELETE ... RETURNING;
../../postgresql-stores/witness/on_postgres.py starts a throwaway server and passes it). --fork imports
FastAIAgent once and forks each child process from this one.

Exit 0: one approver refunded, every other one got AlreadyResumed; 1: a loser crashed with another
error (e.g. sqlite3.OperationalError: database is locked) or the refund count is not 1; 2: the run did
not go as designed (no pause, an approver timed out).
"""

from __future__ import annotations

import argparse
import collections
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
import time
import traceback
from pathlib import Path
from typing import IO

NAME = "fastaiagent_racing_approvers"
# What child() imports (it points FASTAIAGENT_LOCAL_DB at the run's local.db first): with --fork, imported once
# before the first fork. The import reads no configuration (get_config() is an lru_cache filled on first use, in
# the phase), writes nothing and starts no thread.
PHASE_IMPORTS = ("fastaiagent", "fastaiagent._internal.errors", "fastaiagent.checkpointers", "fastaiagent.testing")


def effects() -> int:
    with sqlite3.connect("effects.db") as db:
        db.execute("create table if not exists effects (name text)")
        return db.execute("select count(*) from effects where name = 'refund'").fetchone()[0]


def child(phase: str, racer: int, db_url: str | None) -> int:
    os.environ["FASTAIAGENT_LOCAL_DB"] = os.path.abspath("local.db")
    from fastaiagent import Agent, AlreadyResumed, Resume, SQLiteCheckpointer, interrupt, tool
    from fastaiagent.testing import FunctionModel

    def reply(messages):
        if any(str(getattr(m, "role", "")).endswith("tool") for m in messages):
            return "Refund for order A-1001 is done."
        return "", [{"name": "refund", "arguments": {"order_id": "A-1001"}}]

    @tool
    def refund(order_id: str) -> str:
        """Refund an order once a human approves."""
        interrupt("refund needs approval", {"order_id": order_id})
        with sqlite3.connect("effects.db", timeout=30) as db:
            db.execute("insert into effects values ('refund')")
        return f"refunded order {order_id}"

    if db_url:
        from fastaiagent.checkpointers import PostgresCheckpointer

        store = PostgresCheckpointer(db_url)
    else:
        store = SQLiteCheckpointer()
    agent = Agent(name="refunds", llm=FunctionModel(reply), tools=[refund], checkpointer=store)
    if phase == "start":
        result = agent.run("Please refund order A-1001.")
        Path("execution_id").write_text(result.execution_id)
        return 0 if result.status == "paused" else 2
    execution_id = Path("execution_id").read_text()
    open(f"ready-{racer}", "w").close()
    while not os.path.exists("go"):
        time.sleep(0.002)
    try:
        result = agent.resume(execution_id, resume_value=Resume(approved=True))
    except AlreadyResumed:
        print(json.dumps({"outcome": "refused"}))
        return 3
    except Exception as exc:  # a loser that crashes instead of being refused
        print(json.dumps({"outcome": "crashed", "error": f"{type(exc).__name__}: {exc}"}))
        return 1
    print(json.dumps({"outcome": "ran", "status": result.status}))
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


class ForkedApprover:
    """subprocess.Popen([sys.executable, __file__, *argv], stdout=PIPE, text=True) as main() uses it, the approver
    forked from this process (--fork): its stdout on a file, its stderr this process's."""

    def __init__(self, argv: list[str]) -> None:
        self.cmd, self.returncode = [sys.executable, __file__, *argv], None
        self.out = tempfile.TemporaryFile()  # noqa: SIM115 (read and closed by communicate())
        self.pid = fork_phase(argv, self.out, sys.stderr)

    def poll(self) -> object:  # None while it runs; it is reaped by communicate()
        return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)

    def communicate(self, timeout: float) -> tuple[str, None]:
        self.returncode = wait_phase(self.pid, timeout, self.cmd)
        with self.out:
            self.out.seek(0)
            return self.out.read().decode(), None


def without_repeat(argv: list[str]) -> list[str]:
    """``argv`` without its ``--repeat N`` (or ``--repeat=N``): the arguments of one run."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--repeat":
            skip = True
        elif not arg.startswith("--repeat="):
            out.append(arg)
    return out


def repeated(argv: list[str], n: int) -> int:
    """--repeat N: this script N times with ``argv``, each run a new process as a run without --repeat is; one line
    per run, then the count and rate of FAIL runs as the last line (JSON). Exit 1 if any run failed, 0 if all
    passed, 2 otherwise. A race fails in some runs only: one run is one sample of a rate."""
    tally = {"PASS": 0, "FAIL": 0, "ERROR": 0}
    last: dict = {}
    for i in range(n):
        done = subprocess.run([sys.executable, os.path.abspath(__file__), *argv], capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.strip()]
        try:
            out = json.loads(lines[-1]) if lines else {}
        except ValueError:
            out = {}
        out = out if isinstance(out, dict) else {}
        verdict = out.get("verdict") if out.get("verdict") in ("PASS", "FAIL") else "ERROR"
        tally[verdict] += 1
        last = out or last
        why = f": {str(out.get('did') or done.stderr.strip()[-300:])[:300]}" if verdict == "ERROR" else ""
        print(
            f"run {i + 1}/{n}: {verdict} {json.dumps(out.get('counts') or {})} (exit {done.returncode}){why}",
            flush=True,
        )
    failed, finished = tally["FAIL"], tally["PASS"] + tally["FAIL"]
    rate = f"{100 * failed / finished:.0f} %" if finished else "no run finished"
    verdict = "FAIL" if failed else "PASS" if tally["PASS"] == n else "ERROR"
    summary = {
        "witness": last.get("witness"),
        "framework": last.get("framework"),
        "version": last.get("version"),
        "verdict": verdict,
        "repeat": {"runs": n, **tally},
        "did": f"FAIL in {failed} of {finished} finished runs ({rate}); {tally['ERROR']} did not run as designed",
    }
    print(json.dumps(summary))
    return {"PASS": 0, "FAIL": 1}.get(verdict, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--racers", type=int, default=5)
    parser.add_argument("--phase", choices=("start", "approve"), help=argparse.SUPPRESS)
    parser.add_argument("--racer", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--db-url", help="PostgresCheckpointer's database (default: SQLiteCheckpointer, local.db)")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="import FastAIAgent once and fork each phase from this process (default: each phase a new "
        "interpreter, as the records ran)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run it N times (each a new process, as one run) and print how many failed: it races, one run is one sample",
    )
    args = parser.parse_args(argv)
    if args.fork and sys.platform != "linux":
        parser.error("--fork: needs Linux (os.fork, os.pidfd_open)")
    if args.phase:
        return child(args.phase, args.racer, args.db_url)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.repeat > 1:
        return repeated(without_repeat(sys.argv[1:] if argv is None else argv), args.repeat)
    store = ["--db-url", args.db_url] if args.db_url else []
    me = [sys.executable, __file__, *store]
    out = {"witness": NAME, "framework": "fastaiagent", "version": importlib.metadata.version("fastaiagent")}
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
    if args.fork:
        start = run_forked([*store, "--phase", "start"], timeout=240)
    else:
        start = subprocess.run(me + ["--phase", "start"], capture_output=True, text=True, timeout=240)
    if start.returncode != 0:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"start did not pause: {start.stderr[-300:]}")
        print(json.dumps(out))
        return 2
    racers = [
        ForkedApprover([*store, "--phase", "approve", "--racer", str(i)])
        if args.fork
        else subprocess.Popen(me + ["--phase", "approve", "--racer", str(i)], stdout=subprocess.PIPE, text=True)
        for i in range(args.racers)
    ]
    deadline = time.monotonic() + 240
    while sum(os.path.exists(f"ready-{i}") for i in range(args.racers)) < args.racers:
        if time.monotonic() > deadline or any(p.poll() is not None for p in racers):
            for p in racers:
                p.kill()
            out.update(
                verdict="ERROR", counts={"refund": effects()}, did="an approver died or hung before the start line"
            )
            print(json.dumps(out))
            return 2
        time.sleep(0.01)
    open("go", "w").close()  # release every approver at once
    outcomes, errors = collections.Counter(), []
    for p in racers:
        stdout, _ = p.communicate(timeout=240)
        lines = stdout.strip().splitlines()
        seen = json.loads(lines[-1]) if lines else {"outcome": "crashed", "error": f"exit {p.returncode}, no output"}
        outcomes[seen["outcome"]] += 1
        if "error" in seen:
            errors.append(seen["error"][:200])
    refunds = effects()
    ok = outcomes["ran"] == 1 and outcomes["refused"] == args.racers - 1 and refunds == 1
    out.update(
        verdict="PASS" if ok else "FAIL",
        counts={"refund": refunds},
        did=(
            f"{args.racers} approvers released together on one {'PostgreSQL' if args.db_url else 'SQLite'} store: "
            f"{outcomes['ran']} ran the tool, "
            f"{outcomes['refused']} got AlreadyResumed, {outcomes['crashed']} crashed; {refunds} refund(s)"
        ),
        detail={"errors": errors},
    )
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
