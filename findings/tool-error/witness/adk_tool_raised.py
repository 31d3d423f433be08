"""Google ADK: a function tool raises (a reset connection), then the invocation is resumed in a new process (no plugpull).

    python adk_tool_raised.py [--point before-effect|after-effect]

A resumable App (ResumabilityConfig(is_resumable=True)) on a SqliteSessionService whose LlmAgent calls one refund
tool; a scripted BaseLlm stands in for the model (no key, no network): it asks for the refund until it reads the
tool's response, then answers. The tool's first call raises ConnectionError, right before (``before-effect``) or
right after (``after-effect``) it writes its refund row; later calls refund and return. Each phase is its own process:
  ``run``     run_async(new_message=...): the tool's error ends it (run_async raises);
  ``resume``  reads the session, takes its last event's invocation id and run_async(invocation_id=...), ADK's
              documented way to resume an invocation that failed midway.
Prints one JSON line: the refunds, the tool's runs per phase, whether the session holds a response to the refund
call the model made, and the resumed run's final text.
Exit 0: the resumed invocation ran the tool again or answered the call (one refund, a response in the session);
1: it ended with the call unanswered; 2: the error did not happen as designed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import warnings

APP, USER, SESSION = "refunds", "customer-1", "refund-A-1001"
warnings.filterwarnings("ignore", message=r".*EXPERIMENTAL.*")


def db(folder: str) -> sqlite3.Connection:
    conn = sqlite3.connect(os.path.join(folder, "provider.sqlite"))
    conn.execute("create table if not exists refunds (phase text)")
    conn.execute("create table if not exists runs (phase text)")
    return conn


def runner(folder: str, phase: str, point: str):
    from google.adk.agents import LlmAgent
    from google.adk.apps import App, ResumabilityConfig
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions.sqlite_session_service import SqliteSessionService
    from google.genai import types

    class ScriptedLlm(BaseLlm):
        model: str = "scripted"

        async def generate_content_async(self, llm_request, stream: bool = False):
            answered = any(p.function_response is not None for c in llm_request.contents or [] for p in c.parts or [])
            if answered:
                part = types.Part(text="Refund for order A-1001 is done.")
            else:
                part = types.Part(function_call=types.FunctionCall(name="refund", args={"order_id": "A-1001"}))
            yield LlmResponse(content=types.Content(role="model", parts=[part]))

    def refund(order_id: str) -> dict:
        """Refund an order at the payment provider."""
        conn = db(folder)
        first = conn.execute("select count(*) from runs").fetchone()[0] == 0
        conn.execute("insert into runs values (?)", (phase,))
        conn.commit()
        if first and point == "before-effect":
            raise ConnectionError("connection reset by peer")
        conn.execute("insert into refunds values (?)", (phase,))
        conn.commit()
        if first:
            raise ConnectionError("connection reset by peer")  # the refund happened; the reply was lost
        return {"status": f"refunded order {order_id}"}

    agent = LlmAgent(name="refund_agent", model=ScriptedLlm(), instruction="Refund the order.", tools=[refund])
    app = App(name=APP, root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=True))
    sessions = SqliteSessionService(os.path.join(folder, "sessions.sqlite"))
    return Runner(app=app, session_service=sessions), sessions, types


async def child(folder: str, phase: str, point: str) -> int:
    run, sessions, types = runner(folder, phase, point)
    final = None
    if phase == "run":
        await sessions.create_session(app_name=APP, user_id=USER, session_id=SESSION)
        kwargs = {"new_message": types.Content(role="user", parts=[types.Part(text="Please refund order A-1001.")])}
    else:
        session = await sessions.get_session(app_name=APP, user_id=USER, session_id=SESSION)
        kwargs = {"invocation_id": session.events[-1].invocation_id}
    async for event in run.run_async(user_id=USER, session_id=SESSION, **kwargs):
        if event.content and event.content.parts and event.content.parts[0].text:
            final = event.content.parts[0].text
    session = await sessions.get_session(app_name=APP, user_id=USER, session_id=SESSION)
    calls = [c.id for e in session.events for c in e.get_function_calls()]
    answered = {r.id for e in session.events for r in e.get_function_responses()}
    print(json.dumps({"final": final, "calls": calls, "unanswered": [c for c in calls if c not in answered]}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=("before-effect", "after-effect"), default="before-effect")
    parser.add_argument("--phase", choices=("run", "resume"), help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        return asyncio.run(child(args.folder, args.phase, args.point))
    with tempfile.TemporaryDirectory() as folder:
        phases = {}
        for phase in ("run", "resume"):
            argv = [sys.executable, __file__, "--point", args.point, "--phase", phase, "--folder", folder]
            phases[phase] = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        conn = db(folder)
        refunds = conn.execute("select count(*) from refunds").fetchone()[0]
        runs = [r[0] for r in conn.execute("select phase from runs")]
    started, resumed = phases["run"], phases["resume"]
    if started.returncode == 0 or "ConnectionError" not in started.stderr or runs[:1] != ["run"]:
        did = f"the tool's error did not end the first run (exit {started.returncode})"
        print(json.dumps({"verdict": "ERROR", "did": did}))
        return 2
    seen = json.loads(resumed.stdout.strip().splitlines()[-1]) if resumed.returncode == 0 and resumed.stdout else {}
    unanswered = seen.get("unanswered", ["?"])
    did = (
        f"google-adk {importlib.metadata.version('google-adk')}: the tool raised {args.point.replace('-', ' ')}; "
        f"the resumed invocation (exit {resumed.returncode}) ran the tool {runs.count('resume')} more time(s), "
        f"refunds {refunds}, unanswered calls {len(unanswered)}, final text {seen.get('final')!r}"
    )
    verdict = "PASS" if resumed.returncode == 0 and not unanswered and refunds == 1 else "FAIL"
    print(
        json.dumps(
            {"verdict": verdict, "counts": {"refund": refunds}, "did": did, "runs": runs, "unanswered": unanswered}
        )
    )
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
