"""Google ADK: a client cancels a streamed run, then the next turn continues the session (no plugpull).

    python adk_cancel_stream.py [--point POINT] [--how HOW] [--chunks K] [--kill] [--session sqlite|database] [--fork]

An ``LlmAgent`` with one ``refund`` tool (it appends a line to a file: the effect) in an ``App``, sessions in
``SqliteSessionService`` (or ``DatabaseSessionService`` on sqlite+aiosqlite), a scripted ``BaseLlm`` that
streams (no key, no network): with ``RunConfig(streaming_mode=StreamingMode.SSE)`` it yields partial
``LlmResponse``s, then the whole answer, as Gemini's stream does. Turn 1 ("refund order A-1001",
``run_async(new_message=...)``) calls the tool, then streams the answer. The client cancels at POINT:
  ``streaming``     after K partial text events reached the client;
  ``tool-before``   inside the tool, before its effect;
  ``tool-after``    inside the tool, after its effect;
  ``after-tool``    after the tool returned, when the next model call starts (before its first chunk);
  ``after-answer``  after the last chunk of the answer streamed, before the run returns;
the way HOW says:
  ``abort``         set the ``abort_signal`` event given to ``run_async`` (runners.py: "Optional asyncio.Event
                    to cancel the invocation");
  ``task``          cancel the asyncio task that consumes ``run_async`` (an SSE disconnect in a server);
  ``aclose``        leave the ``async for`` over ``run_async`` and ``aclose()`` it (at the event after the
                    point, for the points inside the run);
with --kill the process SIGKILLs itself right after the cancel. Turn 2, a new process, sends the next
message to the same session; the scripted model is strict the way provider APIs are: it rejects a request
with a function call without its response, a response without its call, or two model turns in a row.

Prints one JSON line. Exit 0 (PASS): the next turn was accepted; 1 (FAIL): rejected; 2 (ERROR): the cancel
did not land as designed.
With --fork (Linux) each turn's process is forked from the witness, ADK imported once, instead of a new
interpreter (the default): the same turn code and argv, a fresh process each time.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types

APP, USER, SESSION = "refunds", "customer-1", "conversation"
REQUEST, FOLLOW_UP = "refund order A-1001", "thanks, anything else?"
ANSWER = "Refund of order A-1001 is done; the money is back on your card in three to five days."
POINTS = ("streaming", "tool-before", "tool-after", "after-tool", "after-answer")
HOWS = ("abort", "task", "aclose")
# --fork: what the turns import on first use, imported once before forking them: the session store --session names.
PHASE_IMPORTS = {
    "sqlite": ("google.adk.sessions.sqlite_session_service",),
    "database": ("google.adk.sessions.database_session_service", "sqlalchemy.dialects.sqlite.aiosqlite"),
}
HOLD, CHUNK_GAP = 0.3, 0.02
warnings.filterwarnings("ignore")


class Rejected(Exception):
    """What a provider answers (HTTP 400) to a history it does not accept."""


def problems(history: list[tuple[str, str]]) -> list[str]:
    """Why a provider would reject ``history`` (("user"|"assistant"|"call"|"result", id) in order): a tool call
    whose result does not follow before the next message, a result without its call, two assistant messages."""
    found, called, pending, last = [], set(), [], None
    for kind, ref in history:
        if kind == "call":
            called.add(ref)
            pending.append(ref)
        elif kind == "result":
            if ref not in called:
                found.append(f"tool result {ref} without its call")
            pending = [p for p in pending if p != ref]
        else:
            found += [f"tool call {p} without its result" for p in pending]
            pending = []
            if kind == "assistant" and last == "assistant":
                found.append("two assistant messages in a row")
        last = kind
    return found + [f"tool call {p} without its result" for p in pending]


def normalized(contents: list[types.Content | None]) -> list[tuple[str, str]]:
    out = []
    for content in contents:
        if content is None:
            continue
        text = "".join(p.text or "" for p in content.parts or [] if p.text and not p.thought)
        for part in content.parts or []:
            if part.function_call:
                out.append(("call", part.function_call.id or part.function_call.name))
            if part.function_response:
                out.append(("result", part.function_response.id or part.function_response.name))
        if text:
            out.append(("user" if content.role == "user" else "assistant", text))
    return out


class Points:
    def __init__(self, point: str) -> None:
        self.point, self.reached = point, asyncio.Event()

    async def at(self, name: str) -> None:
        if name == self.point:
            self.reached.set()
            await asyncio.sleep(HOLD)


POINT = Points("none")
SENT: list[list[tuple[str, str]]] = []


class StrictStreamingLlm(BaseLlm):
    model: str = "scripted"

    async def generate_content_async(self, llm_request: Any, stream: bool = False):
        history = normalized(list(llm_request.contents or []))
        SENT.append(history)
        why = problems(history)
        if why:
            raise Rejected("; ".join(why))
        last_kind, last_text = history[-1]
        if last_kind == "user" and last_text == REQUEST:
            call = types.FunctionCall(name="refund", args={"order": "A-1001"})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
            return
        answer = ANSWER if last_kind == "result" else "Nothing else is open on your account."
        if last_kind == "result":
            await POINT.at("after-tool")
        words = answer.split(" ")
        for n, word in enumerate(words):
            await asyncio.sleep(CHUNK_GAP)
            chunk = word if n == 0 else " " + word
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=chunk)]), partial=True)
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=answer)]), partial=False)
        if last_kind == "result":
            await POINT.at("after-answer")


async def refund(order: str) -> dict:
    """Refund an order."""
    await POINT.at("tool-before")
    with open(os.environ["WITNESS_EFFECTS"], "a") as effects:
        effects.write(f"refund {order}\n")
    await POINT.at("tool-after")
    return {"refunded": order}


def sessions(args: argparse.Namespace) -> Any:
    if args.session == "database":
        from google.adk.sessions.database_session_service import DatabaseSessionService

        return DatabaseSessionService(f"sqlite+aiosqlite:///{args.db}")
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    return SqliteSessionService(args.db)


def runner(args: argparse.Namespace) -> Runner:
    agent = LlmAgent(name="refunds", model=StrictStreamingLlm(), instruction="Refund orders.", tools=[refund])
    return Runner(app=App(name=APP, root_agent=agent), session_service=sessions(args))


def message(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def turn_one(args: argparse.Namespace) -> dict[str, Any]:
    global POINT
    POINT = Points(args.point)
    app = runner(args)
    await app.session_service.create_session(app_name=APP, user_id=USER, session_id=SESSION)
    abort = asyncio.Event()
    seen: dict[str, Any] = {"text": "", "chunks": 0, "tool_calls": [], "tool_outputs": 0, "cancelled": False}
    cancel_now = asyncio.Event()

    def cancel() -> None:
        seen["cancelled"] = True
        if args.how == "abort":
            abort.set()
        elif args.how == "task":
            consumer.cancel()
        if args.kill:
            os.kill(os.getpid(), signal.SIGKILL)

    async def consume() -> None:
        events = app.run_async(
            user_id=USER,
            session_id=SESSION,
            new_message=message(REQUEST),
            run_config=RunConfig(streaming_mode=StreamingMode.SSE),
            abort_signal=abort,
        )
        try:
            async for event in events:
                if event.partial and event.content and event.content.parts and event.content.parts[0].text:
                    seen["text"] += event.content.parts[0].text
                    seen["chunks"] += 1
                    if args.point == "streaming" and seen["chunks"] == args.chunks:
                        cancel_now.set()
                        await asyncio.sleep(0)
                seen["tool_calls"] += [c.id for c in event.get_function_calls()]
                seen["tool_outputs"] += len(event.get_function_responses())
                if args.how == "aclose" and not seen["cancelled"] and (POINT.reached.is_set() or cancel_now.is_set()):
                    seen["cancelled"] = True
                    if args.kill:
                        os.kill(os.getpid(), signal.SIGKILL)
                    break
        finally:
            await events.aclose()

    async def watch() -> None:
        waits = [asyncio.ensure_future(POINT.reached.wait()), asyncio.ensure_future(cancel_now.wait())]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        cancel()

    consumer = asyncio.ensure_future(consume())
    watcher = asyncio.ensure_future(watch()) if args.how != "aclose" else None
    try:
        await consumer
        seen["turn_one"] = "finished"
    except asyncio.CancelledError:
        seen["turn_one"] = "cancelled"
    except Exception as exc:
        seen["turn_one"] = f"raised {type(exc).__name__}: {exc}"
    if watcher:
        watcher.cancel()
    await asyncio.sleep(1.0)
    return seen


async def turn_two(args: argparse.Namespace) -> dict[str, Any]:
    app = runner(args)
    session = await app.session_service.get_session(app_name=APP, user_id=USER, session_id=SESSION)
    saved = normalized([e.content for e in session.events])
    out: dict[str, Any] = {"saved": saved, "problems": problems(saved), "events": len(session.events)}
    out["saved_errors"] = [e.error_code for e in session.events if e.error_code]
    try:
        async for _ in app.run_async(
            user_id=USER,
            session_id=SESSION,
            new_message=message(FOLLOW_UP),
            run_config=RunConfig(streaming_mode=StreamingMode.SSE),
        ):
            pass
        out["next_turn"] = "accepted"
    except Rejected as exc:
        out["next_turn"] = f"rejected: {exc}"
    except Exception as exc:
        out["next_turn"] = f"raised {type(exc).__name__}: {exc}"
    out["sent"] = SENT[0] if SENT else None
    return out


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
        return f"--fork: {threading.active_count()} threads after the imports; a forked phase would have only one"
    return None


def phase(args: argparse.Namespace, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """One turn's process: a new interpreter, or with --fork a process forked from this one."""
    if args.fork:
        return run_forked(argv, env, timeout=120)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def run(args: argparse.Namespace) -> dict[str, Any]:
    effects = os.path.join(args.workdir, "effects.txt")
    open(effects, "w").close()
    me = [sys.executable, os.path.abspath(__file__), "--point", args.point, "--how", args.how]
    me += ["--chunks", str(args.chunks), "--session", args.session, "--db", os.path.join(args.workdir, "s.sqlite")]
    env = {**os.environ, "WITNESS_EFFECTS": effects}
    kill = ["--kill"] if args.kill else []
    one = phase(args, [*me, *kill, "--phase", "one"], env)
    if args.kill and one.returncode != -signal.SIGKILL:
        return {"verdict": "ERROR", "did": f"turn one was not SIGKILLed after the cancel (exit {one.returncode})"}
    if not args.kill and one.returncode != 0:
        return {"verdict": "ERROR", "did": f"turn one exited {one.returncode}", "stderr": one.stderr[-800:]}
    seen = json.loads(one.stdout.strip().splitlines()[-1]) if one.stdout.strip() else {}
    if not args.kill and not seen.get("cancelled"):
        return {"verdict": "ERROR", "did": f"the cancel at {args.point} never fired", "seen": seen}
    two = phase(args, [*me, "--phase", "two"], env)
    if two.returncode != 0:
        return {"verdict": "ERROR", "did": f"turn two exited {two.returncode}", "stderr": two.stderr[-800:]}
    after = json.loads(two.stdout.strip().splitlines()[-1])
    with open(effects) as file:
        refunds = len(file.readlines())
    texts = [ref for kind, ref in after["saved"] if kind == "assistant"]
    saved_calls = {ref for kind, ref in after["saved"] if kind == "call"}
    lost = {
        "text_seen_not_saved": bool(seen.get("text")) and not any(seen["text"] in t for t in texts),
        "tool_calls_seen_not_saved": [c for c in seen.get("tool_calls", []) if c not in saved_calls],
    }
    accepted = after["next_turn"] == "accepted"
    did = (
        f"cancel ({args.how}{', then SIGKILL' if args.kill else ''}) at {args.point} ({args.session}): the session "
        f"held {[k for k, _ in after['saved']]}; the next turn was {after['next_turn']}; refunds {refunds}"
    )
    return {
        "verdict": "PASS" if accepted else "FAIL",
        "counts": {"refund": refunds},
        "did": did,
        "seen": seen,
        "lost": lost,
        **after,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=POINTS, default="streaming")
    parser.add_argument("--how", choices=HOWS, default="abort")
    parser.add_argument("--chunks", type=int, default=3, help="text chunks the client saw before a streaming cancel")
    parser.add_argument("--kill", action="store_true", help="SIGKILL the process right after the cancel")
    parser.add_argument("--session", choices=("sqlite", "database"), default="sqlite")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork each turn's process from this one, ADK imported once (Linux; default: each turn is a new "
        "interpreter)",
    )
    parser.add_argument("--phase", choices=("one", "two"), help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        print(json.dumps(asyncio.run((turn_one if args.phase == "one" else turn_two)(args))))
        return 0
    if args.fork and sys.platform != "linux":
        parser.error("--fork needs Linux")
    problem = prefork(PHASE_IMPORTS[args.session]) if args.fork else None
    if problem:
        result: dict[str, Any] = {"verdict": "ERROR", "did": problem}
    else:
        with tempfile.TemporaryDirectory() as args.workdir:
            result = run(args)
    version = importlib.metadata.version("google-adk")
    print(json.dumps({"witness": "adk_cancel_stream", "framework": "google-adk", "version": version, **result}))
    return {"PASS": 0, "FAIL": 1}.get(result["verdict"], 2)


if __name__ == "__main__":
    sys.exit(main())
