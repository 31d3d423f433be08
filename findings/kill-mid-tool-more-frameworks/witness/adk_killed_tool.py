"""Google ADK: a process SIGKILLed inside a tool, then the invocation resumed in a new process (no plugpull).

    python adk_killed_tool.py [--point before-effect|after-effect] [--confirmation] [--session sqlite|database]
                              [--db-url URL]

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
Exit 0: one refund and the resumed run finished; 1: otherwise; 2: the kill did not land as designed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import warnings

APP, USER, SESSION, CONFIRM = "refunds", "customer-1", "refund-A-1001", "adk_request_confirmation"
warnings.filterwarnings("ignore", message=r".*EXPERIMENTAL.*")


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
    me = [sys.executable, os.path.abspath(__file__), "--session", args.session, "--workdir", args.workdir]
    me += ["--confirmation"] if args.confirmation else []
    me += ["--db-url", args.db_url] if args.db_url else []
    phases = ["run", "approve", "resume"] if args.confirmation else ["run", "resume"]
    killed, done = phases[-2], {}
    for phase in phases:
        env = {**os.environ, "WITNESS_COUNTER": counter, **({"WITNESS_KILL": args.point} if phase == killed else {})}
        done[phase] = subprocess.run([*me, "--phase", phase], env=env, capture_output=True, text=True, timeout=240)
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=("before-effect", "after-effect"), default="after-effect")
    parser.add_argument("--confirmation", action="store_true", help="the tool needs a confirmation first")
    parser.add_argument("--session", choices=("sqlite", "database"), default="sqlite")
    parser.add_argument("--db-url", help="DatabaseSessionService URL (default: sqlite+aiosqlite in a temp dir)")
    parser.add_argument("--phase", choices=("run", "approve", "resume"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        return asyncio.run(child(args))
    with tempfile.TemporaryDirectory() as args.workdir:
        result = run(args)
    version = importlib.metadata.version("google-adk")
    print(json.dumps({"witness": "adk_killed_tool", "framework": "google-adk", "version": version, **result}))
    return {"PASS": 0, "FAIL": 1}.get(result["verdict"], 2)


if __name__ == "__main__":
    sys.exit(main())
