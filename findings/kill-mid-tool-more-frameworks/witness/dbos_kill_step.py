"""DBOS: a workflow SIGKILLed inside a step, recovered by DBOS.launch() in a new process.

    python dbos_kill_step.py --point before-effect|after-effect [--app-version same|changed] [--db-url URL]
                             [--wait SECONDS] [--fork]

Needs only dbos (SQLite system database, no server; or --db-url postgresql://..., the system database on
PostgreSQL, as ../../postgresql-stores/witness/on_postgres.py passes it). A @DBOS.workflow runs two @DBOS.step()s:
draft_refund, then refund, whose side effect is a row in effects.db. Child process 1 runs the workflow
and SIGKILLs itself inside refund, before or after the row. Child 2 calls DBOS.launch(), which recovers
the pending workflow, and waits for its result (up to --wait seconds, 30 by default; detail "seconds":
how long after launch() returned it saw the workflow finish, or stopped watching). With --app-version
changed child 2 runs under another application_version, as after a deploy. DBOS docs: a workflow "resumes execution from
the last completed step" (steps run at least once, https://docs.dbos.dev/explanations/how-workflows-work),
and "DBOS does not attempt to recover workflows tagged with a different application version"
(https://docs.dbos.dev/self-hosting). With --fork (Linux) the script imports DBOS once and forks each child from
itself instead of starting a new interpreter (the default, as the records ran): the same child code and argv, a
fresh process each time, DBOS launched only in the children.

Exit 0: recovery finished the workflow with one refund; 1: two refunds, or the workflow never
finished; 2: the kill did not land as designed.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback

NAME = "dbos_kill_step"
WORKFLOW_ID = "refund-A-1001"
WAIT = 30.0  # the default: recovery of this workflow takes about a second after launch (detail "seconds")
# --fork: what the children import, imported once before forking them: dbos, then what DBOS.launch() imports on
# first use for the default SQLite system database. A module another release lacks is skipped.
PHASE_IMPORTS = ("dbos", "dbos._sys_db_sqlite", "sqlalchemy.dialects.sqlite")


def effects() -> int:
    with sqlite3.connect("effects.db") as db:
        db.execute("create table if not exists effects (name text)")
        return db.execute("select count(*) from effects where name = 'refund'").fetchone()[0]


def child(phase: str, point: str, app_version: str, db_url: str | None, wait: float) -> int:
    from dbos import DBOS, SetWorkflowID

    @DBOS.step()
    def draft_refund(order_id: str) -> dict:
        return {"order_id": order_id, "cents": 1999}

    @DBOS.step()
    def refund(draft: dict) -> str:
        if phase == "start" and point == "before-effect":
            os.kill(os.getpid(), signal.SIGKILL)
        with sqlite3.connect("effects.db") as db:
            db.execute("insert into effects values ('refund')")
        if phase == "start" and point == "after-effect":
            os.kill(os.getpid(), signal.SIGKILL)
        return f"refunded {draft['cents']} cents on order {draft['order_id']}"

    @DBOS.workflow()
    def refund_workflow(order_id: str) -> str:
        return refund(draft_refund(order_id))

    version = "refunds-2" if phase == "resume" and app_version == "changed" else "refunds-1"
    DBOS(
        config={
            "name": "witness-refunds",
            "system_database_url": db_url or f"sqlite:///{os.path.abspath('dbos.sqlite')}",
            "application_version": version,
        }
    )
    try:
        DBOS.launch()  # recovers this executor's PENDING workflows of this application version
        began = time.monotonic()
        if phase == "start":
            with SetWorkflowID(WORKFLOW_ID):
                refund_workflow("A-1001")
            return 0
        handle = DBOS.retrieve_workflow(WORKFLOW_ID)
        deadline = time.monotonic() + wait
        status = handle.get_status()
        while status.status in ("PENDING", "ENQUEUED") and time.monotonic() < deadline:
            time.sleep(0.05)
            status = handle.get_status()
        # seconds: from launch()'s return to the status read last (recovery's time, or how long it stayed PENDING)
        seen = {"status": status.status, "recorded_version": status.app_version, "ran_version": version}
        print(json.dumps({**seen, "seconds": round(time.monotonic() - began, 2)}))
        return 0
    finally:
        DBOS.destroy()


def run_forked(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    """--fork: what subprocess.run(argv, capture_output=True, text=True, timeout=timeout) gives, the phase
    (main(argv[2:])) running in a process forked from this one instead of a new interpreter (-9: SIGKILLed)."""
    assert threading.active_count() == 1, "a forked child would have only the forking thread"
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()  # nothing buffered here is written twice
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the phase; it never returns
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                code = main(argv[2:])
            except SystemExit as stop:  # as the interpreter takes it: None is 0, a message is printed and 1
                if stop.code is None or isinstance(stop.code, int):
                    code = stop.code or 0
                else:
                    print(stop.code, file=sys.stderr)
            except BaseException:
                traceback.print_exc()
            finally:  # os._exit: the parent's exit handlers (its temp dirs' removal) are not the phase's
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        deadline = time.monotonic() + timeout
        while not (done := os.waitpid(pid, os.WNOHANG))[0]:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired(argv, timeout)
            time.sleep(0.005)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            argv, os.waitstatus_to_exitcode(done[1]), out.read().decode(), err.read().decode()
        )


def prefork(modules: tuple[str, ...]) -> str | None:
    """--fork: import the phases' modules here, once; None, or why this process cannot fork the phases."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    if threading.active_count() != 1:
        return f"--fork: {threading.active_count()} threads after the imports; a forked phase would have only one"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=("before-effect", "after-effect"), default="after-effect")
    parser.add_argument("--app-version", choices=("same", "changed"), default="same")
    parser.add_argument("--db-url", help="the system database (default: SQLite in the current folder)")
    parser.add_argument("--wait", type=float, default=WAIT, help="seconds resume waits for the workflow (default 30)")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork each child from this process after one DBOS import (Linux; default: each child is a new "
        "interpreter, as the records ran)",
    )
    parser.add_argument("--phase", choices=("start", "resume"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.wait < 0:
        parser.error(f"--wait {args.wait:g}: seconds cannot be negative")
    if args.phase:
        return child(args.phase, args.point, args.app_version, args.db_url, args.wait)
    if args.fork and sys.platform != "linux":
        parser.error("--fork needs Linux")

    def run(phase: str) -> subprocess.CompletedProcess:
        argv = [sys.executable, __file__, "--point", args.point, "--app-version", args.app_version, "--phase", phase]
        argv += ["--wait", str(args.wait)]
        argv += ["--db-url", args.db_url] if args.db_url else []
        if args.fork:
            return run_forked(argv, timeout=240 + args.wait)
        return subprocess.run(argv, capture_output=True, text=True, timeout=240 + args.wait)

    out = {"witness": NAME, "framework": "dbos", "version": importlib.metadata.version("dbos")}
    for stale in ("effects.db", "dbos.sqlite", "local.db", "flow_states.db", "execution_id", "go"):
        if os.path.exists(stale):  # a run starts from nothing: no counts or state of an earlier one
            os.remove(stale)
    effects()
    problem = prefork(PHASE_IMPORTS) if args.fork else None
    if problem:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=problem)
        print(json.dumps(out))
        return 2
    start = run("start")
    if start.returncode != -signal.SIGKILL:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"start was not SIGKILLed: {start.stderr[-300:]}")
        print(json.dumps(out))
        return 2
    resume = run("resume")
    lines = resume.stdout.strip().splitlines()
    if resume.returncode != 0 or not lines:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"resume crashed: {resume.stderr[-300:]}")
        print(json.dumps(out))
        return 2
    seen = json.loads(lines[-1])
    refunds = effects()
    ok = seen["status"] == "SUCCESS" and refunds == 1
    out.update(
        verdict="PASS" if ok else "FAIL",
        counts={"refund": refunds},
        did=(
            f"workflow SIGKILLed inside its refund step ({args.point}); DBOS.launch() in a new process "
            f"(application_version {seen['ran_version']}, workflow recorded under {seen['recorded_version']}) "
            f"left it {seen['status']} ({seen['seconds']:g} s after launch); {refunds} refund(s)"
        ),
        detail=seen,
    )
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
