"""Google ADK: a process SIGKILLed inside a tool, then the invocation resumed in a new process (no plugpull).

    python adk_killed_tool.py [--point before-effect|after-effect] [--confirmation] [--session sqlite|database]
                              [--db-url URL] [--fork]

A resumable App (ResumabilityConfig(is_resumable=True)) whose LlmAgent calls one refund tool; a scripted
BaseLlm stands in for the model (no key, no network). The session store is SqliteSessionService, or
DatabaseSessionService on sqlite+aiosqlite. Each phase is its own process:
  ``run``     run_async(new_message=...); with --confirmation the tool is
              FunctionTool(refund, require_confirmation=True), the invocation pauses and an ``approve``
              process sends FunctionResponse({"confirmed": true}) with run_async(invocation_id=...);
  the process that runs the tool SIGKILLs itself inside it, right before or right after the refund row;
  ``resume``  reads the session, takes its last event's invocation id and run_async(invocation_id=...),
              ADK's documented way to resume an invocation that failed midway.
The refund tool counts its runs in a SQLite table and passes no idempotency key.
With --fork (Linux) the script imports ADK once and forks each phase from itself instead of starting a new
interpreter per phase (the default, as the records ran): the same phase code and argv, a fresh process each time.
Exit 0: one refund and the resumed run finished; 1: otherwise; 2: the kill did not land as designed.
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
# --fork: what the phases import, imported once before forking them: the modules runner() and child() name (the
# session store's by --session), then what ADK imports only once a run starts (workflow engine, LLM flows, the Gemini
# model class: python -X importtime). A module another ADK release lacks is skipped: its phases import it if needed.
PHASE_IMPORTS = (
    "google.adk.agents",
    "google.adk.agents.llm_agent",
    "google.adk.apps",
    "google.adk.models.base_llm",
    "google.adk.models.llm_response",
    "google.adk.runners",
    "google.adk.tools",
    "google.genai.types",
    "google.adk.workflow._workflow",
    "google.adk.workflow._llm_agent_wrapper",
    "google.adk.flows.llm_flows.auto_flow",
    "google.adk.flows.llm_flows.single_flow",
    "google.adk.flows.llm_flows.tools._functions",
    "google.adk.models.google_llm",
    "google.adk.tools.agent_tool",
)
STORE_IMPORTS = {
    "sqlite": ("google.adk.sessions.sqlite_session_service",),
    "database": ("google.adk.sessions.database_session_service", "sqlalchemy.dialects.sqlite.aiosqlite"),
}


def refund(order_id: str, cents: int) -> dict:
    """Refund an order at the payment provider: one row per run. The killed phase dies inside it."""
    kill = os.environ.get("WITNESS_KILL")
    if kill == "before-effect":
        os.kill(os.getpid(), signal.SIGKILL)
    with sqlite3.connect(os.environ["WITNESS_COUNTER"], timeout=30) as db:
        db.execute("INSERT INTO refunds (pid) VALUES (?)", (os.getpid(),))
    if kill == "after-effect":
        os.kill(os.getpid(), signal.SIGKILL)
    return {"status": f"refunded {cents} cents on order {order_id}"}


def runner(args):
    # ADK is imported here, in the phases' processes only: the parent that runs them needs none of it.
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

        # --db-url: another database, e.g. postgresql+asyncpg://... (../../postgresql-stores/witness/on_postgres.py).
        sessions = DatabaseSessionService(args.db_url or f"sqlite+aiosqlite:///{args.workdir}/sessions.db")
    tool = FunctionTool(refund, require_confirmation=True) if args.confirmation else refund
    agent = LlmAgent(name="refund_agent", model=ScriptedLlm(), instruction="Refund the order.", tools=[tool])
    app = App(name=APP, root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=True))
    return Runner(app=app, session_service=sessions)


async def child(args) -> int:
    from google.genai import types

    r = runner(args)
    kwargs: dict = {}
    if args.phase == "run":
        await r.session_service.create_session(app_name=APP, user_id=USER, session_id=SESSION)
        kwargs["new_message"] = types.Content(role="user", parts=[types.Part(text="Please refund order A-1001.")])
    else:
        session = await r.session_service.get_session(app_name=APP, user_id=USER, session_id=SESSION)
        if args.phase == "approve":
            event = [e for e in session.events if any(c.name == CONFIRM for c in e.get_function_calls())][-1]
            call = next(c for c in event.get_function_calls() if c.name == CONFIRM)
            answer = types.FunctionResponse(id=call.id, name=CONFIRM, response={"confirmed": True})
            kwargs["new_message"] = types.Content(role="user", parts=[types.Part(function_response=answer)])
            kwargs["invocation_id"] = event.invocation_id
        else:
            kwargs["invocation_id"] = session.events[-1].invocation_id
    final = None
    async for event in r.run_async(user_id=USER, session_id=SESSION, **kwargs):
        if event.content and event.content.parts and event.content.parts[0].text:
            final = event.content.parts[0].text
    print(json.dumps({"final": final}))
    return 0


def run(args) -> dict:
    counter = os.path.join(args.workdir, "counter.sqlite")
    with sqlite3.connect(counter) as db:
        db.execute("CREATE TABLE refunds (pid INTEGER)")
    db.close()  # no open connection is copied into a forked phase
    me = [sys.executable, os.path.abspath(__file__), "--session", args.session, "--workdir", args.workdir]
    me += ["--confirmation"] if args.confirmation else []
    me += ["--db-url", args.db_url] if args.db_url else []
    phases = ["run", "approve", "resume"] if args.confirmation else ["run", "resume"]
    killed, done = phases[-2], {}
    for phase in phases:
        env = {**os.environ, "WITNESS_COUNTER": counter, **({"WITNESS_KILL": args.point} if phase == killed else {})}
        argv = [*me, "--phase", phase]
        if args.fork:
            done[phase] = run_forked(argv, env, timeout=240)
        else:
            done[phase] = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240)
        code = done[phase].returncode
        if phase == killed and code != -signal.SIGKILL:
            return {"verdict": "ERROR", "did": f"{phase} was not SIGKILLed inside the tool (exit {code})"}
        if phase == "run" != killed and code != 0:
            return {"verdict": "ERROR", "did": f"run did not pause for the confirmation (exit {code})"}
    with sqlite3.connect(counter) as db:
        refunds = db.execute("SELECT count(*) FROM refunds").fetchone()[0]
    resumed = done[phases[-1]]
    ok = refunds == 1 and resumed.returncode == 0
    did = (
        f"{phases[-2]} was SIGKILLed inside the {'confirmed ' if args.confirmation else ''}refund tool "
        f"{args.point.replace('-effect', '')} its refund ({args.session}); resume with run_async(invocation_id=...) "
        f"exited {resumed.returncode}; the refund ran {refunds} time(s) in all"
    )
    return {"verdict": "PASS" if ok else "FAIL", "counts": {"refund": refunds}, "did": did}


def run_forked(argv: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    """--fork: what subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout) gives, the phase
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
        return f"--fork: {threading.active_count()} threads after importing ADK; a forked phase would have only one"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=("before-effect", "after-effect"), default="after-effect")
    parser.add_argument("--confirmation", action="store_true", help="the tool needs a confirmation first")
    parser.add_argument("--session", choices=("sqlite", "database"), default="sqlite")
    parser.add_argument("--db-url", help="DatabaseSessionService URL (default: sqlite+aiosqlite in a temp dir)")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork each phase from this process after one ADK import (Linux; default: "
        "each phase is a new interpreter, as the records ran)",
    )
    parser.add_argument("--phase", choices=("run", "approve", "resume"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        return asyncio.run(child(args))
    if args.fork and sys.platform != "linux":
        parser.error("--fork needs Linux")
    problem = prefork(PHASE_IMPORTS + STORE_IMPORTS[args.session]) if args.fork else None
    if problem:
        result = {"verdict": "ERROR", "did": problem}
    else:
        with tempfile.TemporaryDirectory() as args.workdir:
            result = run(args)
    version = importlib.metadata.version("google-adk")
    print(json.dumps({"witness": "adk_killed_tool", "framework": "google-adk", "version": version, **result}))
    return {"PASS": 0, "FAIL": 1}.get(result["verdict"], 2)


if __name__ == "__main__":
    sys.exit(main())
