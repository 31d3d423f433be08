"""Google ADK tool confirmation: several processes confirm one pending call at once (no plugpull).

    python adk_racing_approvers.py [--session sqlite|database] [--db-url URL] [--approvers 5] [--fork]

A resumable App whose LlmAgent calls FunctionTool(refund, require_confirmation=True); a scripted
BaseLlm stands in for the model (no key, no network). The session store is SqliteSessionService, or
DatabaseSessionService (sqlite+aiosqlite, or --db-url). Each step is its own process, as behind a
load-balanced API: ``start`` runs until the invocation pauses on adk_request_confirmation; then N
``approve`` processes load the session, wait at a file barrier until all N are there, and send
FunctionResponse({"confirmed": true}) with run_async(invocation_id=..., new_message=...). The tool
counts its runs in a SQLite table. An approver whose append fails the store's stale-session check
(StaleSessionError; on 1.x a ValueError from the same check) exits 3: it was told no.
With --fork (Linux) the script imports ADK once and forks the start and approver processes from itself instead of
starting a new interpreter for each (the default, as the records ran): the same phase code and argv, fresh processes.
Exit 0: one approver ran the tool and finished, every other was told no or ran nothing; 1: otherwise
(more than one ran the tool, or the one that ran it did not finish); 2: the race did not happen.
"""

from __future__ import annotations

import argparse
import asyncio
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
import warnings

APP, USER, SESSION, CONFIRM = "refunds", "customer-1", "refund-A-1001", "adk_request_confirmation"
warnings.filterwarnings("ignore", message=r".*EXPERIMENTAL.*")
# --fork: what the start and approver processes import before the barrier, imported once before forking them: the
# modules runner() and child() name, the session store's by --session. Not what ADK imports only once a run starts
# (its workflow engine and LLM flows, ~0.75 CPU-s): a cold approver imports those after the barrier, and that
# spreads the approvers' arrival at the stale-session check. With them imported ahead, 7 of 10 forked runs
# (5 approvers, SQLite) had two or three approvers run the tool, against 0 of 6 cold in the same sitting; without,
# 1 of 10, as the records' cold runs (1 of 10). So a forked approver does after the barrier what a cold one does.
PHASE_IMPORTS = (
    "google.adk.agents",
    "google.adk.agents.llm_agent",
    "google.adk.apps",
    "google.adk.models.base_llm",
    "google.adk.models.llm_response",
    "google.adk.runners",
    "google.adk.tools",
    "google.genai.types",
)
STORE_IMPORTS = {
    "sqlite": ("google.adk.sessions.sqlite_session_service",),
    "database": ("google.adk.sessions.database_session_service", "sqlalchemy.dialects.sqlite.aiosqlite"),
}


def refund(order_id: str, cents: int) -> dict:
    """Refund an order at the payment provider: one row per run."""
    with sqlite3.connect(os.environ["WITNESS_COUNTER"], timeout=30) as db:
        db.execute("INSERT INTO refunds (pid) VALUES (?)", (os.getpid(),))
    return {"status": f"refunded {cents} cents on order {order_id}"}


def runner(args):
    # ADK is imported here, in the start and approver processes only: the parent that races them needs none of it.
    from google.adk.agents import LlmAgent
    from google.adk.apps import App, ResumabilityConfig
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.tools import FunctionTool
    from google.genai import types

    class ScriptedLlm(BaseLlm):
        """Asks for the refund until the conversation holds its result, then answers in text."""

        model: str = "scripted"

        async def generate_content_async(self, llm_request, stream=False):
            parts = [p for c in llm_request.contents or [] for p in c.parts or []]
            if any(p.function_response and p.function_response.name == "refund" for p in parts):
                part = types.Part(text="Refund for order A-1001 is done.")
            else:
                part = types.Part(
                    function_call=types.FunctionCall(name="refund", args={"order_id": "A-1001", "cents": 1999})
                )
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    if args.session == "sqlite":
        from google.adk.sessions.sqlite_session_service import SqliteSessionService

        sessions = SqliteSessionService(os.path.join(args.workdir, "sessions.sqlite"))
    else:
        from google.adk.sessions import DatabaseSessionService

        sessions = DatabaseSessionService(args.db_url or f"sqlite+aiosqlite:///{args.workdir}/sessions.db")
    tool = FunctionTool(refund, require_confirmation=True)
    agent = LlmAgent(name="refund_agent", model=ScriptedLlm(), instruction="Refund the order.", tools=[tool])
    app = App(name=APP, root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=True))
    return Runner(app=app, session_service=sessions)


def pending(session) -> tuple[str, str] | None:
    answered = {r.id for e in session.events for r in e.get_function_responses() if r.name == CONFIRM}
    calls = [(c.id, e.invocation_id) for e in session.events for c in e.get_function_calls() if c.name == CONFIRM]
    return next((c for c in reversed(calls) if c[0] not in answered), None)


async def child(args) -> int:
    from google.genai import types

    r = runner(args)
    if args.phase == "start":
        await r.session_service.create_session(app_name=APP, user_id=USER, session_id=SESSION)
        message = types.Content(role="user", parts=[types.Part(text="Please refund order A-1001.")])
        async for _ in r.run_async(user_id=USER, session_id=SESSION, new_message=message):
            pass
        session = await r.session_service.get_session(app_name=APP, user_id=USER, session_id=SESSION)
        return 0 if pending(session) else 2
    session = await r.session_service.get_session(app_name=APP, user_id=USER, session_id=SESSION)
    call_id, invocation_id = pending(session)
    open(os.path.join(args.workdir, f"ready-{os.getpid()}"), "w").close()
    while not os.path.exists(os.path.join(args.workdir, "go")):  # the barrier: all N confirm at once
        time.sleep(0.002)
    answer = types.FunctionResponse(id=call_id, name=CONFIRM, response={"confirmed": True})
    message = types.Content(role="user", parts=[types.Part(function_response=answer)])
    try:
        async for _ in r.run_async(user_id=USER, session_id=SESSION, invocation_id=invocation_id, new_message=message):
            pass
    except ValueError as e:  # 2.x: StaleSessionError(ValueError); 1.x: ValueError from the same check
        if type(e).__name__ == "StaleSessionError" or "stale session" in str(e) or "modified in storage" in str(e):
            print(f"{type(e).__name__}: {e}", file=sys.stderr)
            return 3
        raise
    return 0


def race(args) -> dict:
    counter = os.path.join(args.workdir, "counter.sqlite")
    with sqlite3.connect(counter) as db:
        db.execute("CREATE TABLE refunds (pid INTEGER)")
    db.close()  # no open connection is copied into a forked phase
    env = {**os.environ, "WITNESS_COUNTER": counter}
    me = [sys.executable, os.path.abspath(__file__), "--session", args.session, "--workdir", args.workdir]
    me += ["--db-url", args.db_url] if args.db_url else []
    if args.fork:
        start = Forked([*me, "--phase", "start"], env).run(timeout=120)
    else:
        start = subprocess.run([*me, "--phase", "start"], env=env, capture_output=True, text=True, timeout=120)
    if start.returncode != 0:
        return {"verdict": "ERROR", "did": f"start exited {start.returncode}: {start.stderr.strip()[-300:]}"}
    approve = [*me, "--phase", "approve"]
    if args.fork:
        procs = [Forked(approve, env, stdout=False) for _ in range(args.approvers)]
    else:
        procs = [subprocess.Popen(approve, env=env, stderr=subprocess.PIPE, text=True) for _ in range(args.approvers)]
    deadline = time.monotonic() + 120
    while sum(f.startswith("ready-") for f in os.listdir(args.workdir)) < args.approvers:
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            for p in procs:
                p.kill()
            return {"verdict": "ERROR", "did": "not every approver reached the barrier"}
        time.sleep(0.01)
    open(os.path.join(args.workdir, "go"), "w").close()
    errors = [p.communicate(timeout=120)[1].strip().splitlines() or [""] for p in procs]
    with sqlite3.connect(counter) as db:
        ran = [pid for (pid,) in db.execute("SELECT pid FROM refunds")]
    session = asyncio.run(runner(args).session_service.get_session(app_name=APP, user_id=USER, session_id=SESSION))
    stored = sum(r.name == CONFIRM for e in session.events for r in e.get_function_responses())
    approvers = [
        {"exit": p.returncode, "ran_tool": p.pid in ran, "error": err[-1][:200] if p.returncode else ""}
        for p, err in zip(procs, errors, strict=True)
    ]
    finished = [a for a in approvers if a["ran_tool"] and a["exit"] == 0]
    refused = [a for a in approvers if not a["ran_tool"] and a["exit"] == 3]
    told_no = [a for a in approvers if not a["ran_tool"] and a["exit"] in (0, 3)]
    ok = len(ran) == 1 and len(finished) == 1 and len(told_no) == args.approvers - 1
    did = (
        f"{args.approvers} processes confirmed one pending refund at once ({args.session}): the tool ran "
        f"{len(ran)} time(s) and {len(finished)} approver(s) finished; the session stored {stored} answer(s) "
        f"to the one confirmation; {len(refused)} approver(s) got the stale-session error before the tool"
    )
    verdict = "PASS" if ok else "FAIL"
    return {
        "verdict": verdict,
        "counts": {"refund": len(ran)},
        "did": did,
        "detail": {"answers_stored": stored, "approvers": approvers},
    }


class Forked:
    """--fork: a phase (main(argv[2:])) in a process forked from this one instead of a new interpreter, seen as
    subprocess.Popen(argv, env=env, stdout=PIPE or None, stderr=PIPE, text=True) is here: pid, poll(), kill(),
    communicate(timeout), returncode (-9: SIGKILLed). What it writes goes to files, read when it has exited."""

    def __init__(self, argv: list[str], env: dict[str, str], stdout: bool = True):
        assert threading.active_count() == 1, "a forked child would have only the forking thread"
        self.argv, self.returncode = argv, None
        # stdout (None: this process's, as Popen(stdout=None)), stderr; closed by communicate()
        self.files = [tempfile.TemporaryFile() if stdout else None, tempfile.TemporaryFile()]  # noqa: SIM115
        sys.stdout.flush()  # nothing buffered here is written twice
        sys.stderr.flush()
        self.pid = os.fork()
        if self.pid == 0:  # the phase; it never returns
            code = 1
            try:
                for fd, file in enumerate(self.files, start=1):
                    if file:
                        os.dup2(file.fileno(), fd)
                os.environ.clear()
                os.environ.update(env)
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

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)

    def communicate(self, timeout: float) -> tuple[str | None, str]:
        """Its stdout (None when not captured) and stderr once it exited; killed if it outlives ``timeout``."""
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                self.kill()
                self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
                raise subprocess.TimeoutExpired(self.argv, timeout)
            time.sleep(0.005)
        out, err = (self.read(file) for file in self.files)
        return out, err

    @staticmethod
    def read(file) -> str | None:
        if file is None:
            return None
        with file:
            file.seek(0)
            return file.read().decode()

    def run(self, timeout: float) -> subprocess.CompletedProcess:
        """What subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout) gives."""
        out, err = self.communicate(timeout)
        return subprocess.CompletedProcess(self.argv, self.returncode, out, err)


def prefork(modules: tuple[str, ...]) -> str | None:
    """--fork: import the phases' modules here, once; None, or why this process cannot fork the phases."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    if threading.active_count() != 1:
        return f"--fork: {threading.active_count()} threads after importing ADK; a forked phase would have only one"
    return None


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
    parser.add_argument("--session", choices=("sqlite", "database"), default="sqlite")
    parser.add_argument("--db-url", help="DatabaseSessionService URL (default: sqlite+aiosqlite in a temp dir)")
    parser.add_argument("--approvers", type=int, default=5)
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork the start and approver processes from this one after one ADK import (Linux; default: each is a "
        "new interpreter, as the records ran)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run it N times (each a new process, as one run) and print how many failed: it races, one run is one sample",
    )
    parser.add_argument("--phase", choices=("start", "approve"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        return asyncio.run(child(args))
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.repeat > 1:
        return repeated(without_repeat(sys.argv[1:] if argv is None else argv), args.repeat)
    if args.approvers < 2:
        parser.error("--approvers must be at least 2")
    if args.fork and sys.platform != "linux":
        parser.error("--fork needs Linux")
    problem = prefork(PHASE_IMPORTS + STORE_IMPORTS[args.session]) if args.fork else None
    if problem:
        result = {"verdict": "ERROR", "did": problem}
    else:
        with tempfile.TemporaryDirectory() as args.workdir:
            result = race(args)
    version = importlib.metadata.version("google-adk")
    print(json.dumps({"witness": "adk_racing_approvers", "framework": "google-adk", "version": version, **result}))
    return {"PASS": 0, "FAIL": 1}.get(result["verdict"], 2)


if __name__ == "__main__":
    sys.exit(main())
