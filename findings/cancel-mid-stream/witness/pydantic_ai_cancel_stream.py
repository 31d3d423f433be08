"""Pydantic AI: a client cancels a streamed run, then the next turn continues the saved history (no plugpull).

    python pydantic_ai_cancel_stream.py [--point POINT] [--how HOW] [--save end|always] [--chunks K] [--kill] [--fork]

Pydantic AI keeps no conversation of its own (``message_history`` is the app's; ``ConversationStore`` ships
only an in-memory store): the app keeps the history as ``ModelMessagesTypeAdapter`` JSON in a SQLite file, the
way the docs' chat app does. A ``FunctionModel`` with a stream function stands in for the model (no key, no
network). Turn 1 ("refund order A-1001") is ``agent.iter(...)`` driven node by node with ``node.stream(ctx)``
(the docs' "streaming all events" pattern): a streamed tool call, the ``refund`` tool (it appends a line to a
file: the effect), the answer streamed in chunks. The client cancels at POINT:
  ``streaming``     after K text chunks of the answer reached the client;
  ``tool-before``   inside the tool, before its effect;
  ``tool-after``    inside the tool, after its effect;
  ``after-tool``    after the tool returned, when the next model call starts (before its first chunk);
  ``after-answer``  after the last chunk of the answer streamed, before the run returns;
the way HOW says:
  ``token``         ``CancellationToken.cancel()`` (``cancellation_token=``; the run raises ``RunCancelled``);
  ``run-cancel``    ``AgentRun.cancel()``;
  ``task``          cancel the asyncio task that drives the run (an SSE disconnect in a server);
  ``aclose``        leave the ``async for`` over the run's nodes and the ``agent.iter`` block (at the event
                    after the point, for the points inside the run);
SAVE says what the app writes: ``end`` the new messages once the run finished (the chat app of the docs), or
``always`` also on a cancel: ``RunCancelled.all_messages()`` (its docstring: "pass it as message_history to a
new run ... to resume the conversation") or ``AgentRun.all_messages()`` on a task cancel or a close.
With --kill the process SIGKILLs itself right after the cancel. Turn 2, a new process, loads the history and
runs ``agent.run_stream_events(..., message_history=...)``; the scripted model is strict the way provider
APIs are: it rejects a tool call without its result, a result without its call, or two assistant messages in
a row.

Prints one JSON line. Exit 0 (PASS): the next turn was accepted; 1 (FAIL): rejected; 2 (ERROR): the cancel
did not land as designed.
With --fork (Linux) each turn's process is forked from the witness, Pydantic AI imported once, instead of a new
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
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from typing import Any

from pydantic_ai import Agent, CancellationToken
from pydantic_ai.exceptions import RunCancelled
from pydantic_ai.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

REQUEST, FOLLOW_UP = "refund order A-1001", "thanks, anything else?"
ANSWER = "Refund of order A-1001 is done; the money is back on your card in three to five days."
POINTS = ("streaming", "tool-before", "tool-after", "after-tool", "after-answer")
HOWS = ("token", "run-cancel", "task", "aclose")
# --fork: what the turns import before forking them beyond this module's own imports: nothing (a forked turn
# imports what it first uses itself, as a cold one does).
PHASE_IMPORTS: tuple[str, ...] = ()
HOLD, CHUNK_GAP = 0.3, 0.02


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


def normalized(messages: list[ModelMessage]) -> list[tuple[str, str]]:
    out = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    out.append(("result", part.tool_call_id))
                elif isinstance(part, UserPromptPart):
                    out.append(("user", str(part.content)))
                else:
                    out.append((part.part_kind, getattr(part, "tool_call_id", "")))
        else:
            texts = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            out += [("call", p.tool_call_id) for p in message.parts if isinstance(p, ToolCallPart)]
            if texts:
                out.append(("assistant", texts))
            if not message.parts:
                out.append(("assistant", ""))
    return out


def outcomes(messages: list[ModelMessage]) -> list[str]:
    """The outcome of every tool return and the state of every response, as the history holds them."""
    out = []
    for message in messages:
        if isinstance(message, ModelResponse):
            out.append(f"response:{getattr(message, 'state', '?')}")
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                out.append(f"return:{getattr(part, 'outcome', '?')}")
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
SENT_OUTCOMES: list[list[str]] = []


async def stream(messages: list[ModelMessage], info: AgentInfo) -> Any:
    history = normalized(messages)
    SENT.append(history)
    SENT_OUTCOMES.append(outcomes(messages))
    why = problems(history)
    if why:
        raise Rejected("; ".join(why))
    last_kind, last_text = history[-1]
    if last_kind == "user" and last_text == REQUEST:
        call_id = f"call_{os.urandom(4).hex()}"
        yield {0: DeltaToolCall(name="refund", json_args=json.dumps({"order": "A-1001"}), tool_call_id=call_id)}
        return
    answer = ANSWER if last_kind == "result" else "Nothing else is open on your account."
    if last_kind == "result":
        await POINT.at("after-tool")
    words = answer.split(" ")
    for n, word in enumerate(words):
        await asyncio.sleep(CHUNK_GAP)
        yield word if n == 0 else " " + word
    if last_kind == "result":
        await POINT.at("after-answer")


def agent() -> Agent:
    model = FunctionModel(stream_function=stream)
    refunds = Agent(model, instructions="Refund orders.")

    @refunds.tool_plain
    async def refund(order: str) -> str:
        """Refund an order."""
        await POINT.at("tool-before")
        with open(os.environ["WITNESS_EFFECTS"], "a") as effects:
            effects.write(f"refund {order}\n")
        await POINT.at("tool-after")
        return f"refunded {order}"

    return refunds


def load(db: str) -> list[ModelMessage]:
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS conversation (id TEXT PRIMARY KEY, messages BLOB)")
        row = conn.execute("SELECT messages FROM conversation WHERE id = 'c'").fetchone()
    return ModelMessagesTypeAdapter.validate_json(row[0]) if row else []


def save(db: str, messages: list[ModelMessage]) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS conversation (id TEXT PRIMARY KEY, messages BLOB)")
        conn.execute(
            "INSERT OR REPLACE INTO conversation VALUES ('c', ?)", (ModelMessagesTypeAdapter.dump_json(messages),)
        )


async def turn_one(args: argparse.Namespace) -> dict[str, Any]:
    global POINT
    POINT = Points(args.point)
    history = load(args.db)
    token = CancellationToken()
    seen: dict[str, Any] = {"text": "", "chunks": 0, "tool_calls": [], "tool_outputs": 0, "cancelled": False}
    holder: dict[str, Any] = {}
    cancel_now = asyncio.Event()

    def cancel() -> None:
        seen["cancelled"] = True
        if args.how == "token":
            token.cancel()
        elif args.how == "run-cancel":
            holder["run"].cancel()
        elif args.how == "task":
            driver.cancel()
        if args.kill:
            os.kill(os.getpid(), signal.SIGKILL)

    def closing() -> bool:
        if args.how == "aclose" and not seen["cancelled"] and (POINT.reached.is_set() or cancel_now.is_set()):
            seen["cancelled"] = True
            if args.kill:
                os.kill(os.getpid(), signal.SIGKILL)
            return True
        return False

    async def on_event(event: Any) -> None:
        if isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            seen["text"] += event.delta.content_delta
            seen["chunks"] += 1
        elif isinstance(event, PartStartEvent) and isinstance(event.part, TextPart) and event.part.content:
            seen["text"] += event.part.content
            seen["chunks"] += 1
        elif isinstance(event, FunctionToolCallEvent):
            seen["tool_calls"].append(event.part.tool_call_id)
        elif isinstance(event, FunctionToolResultEvent):
            seen["tool_outputs"] += 1
        if args.point == "streaming" and seen["chunks"] == args.chunks and not cancel_now.is_set():
            cancel_now.set()
            await asyncio.sleep(0)

    async def drive() -> None:
        run = None
        finished = False
        try:
            async with agent().iter(REQUEST, message_history=history, cancellation_token=token) as run:
                holder["run"] = run
                stop = False
                async for node in run:
                    if Agent.is_model_request_node(node) or Agent.is_call_tools_node(node):
                        async with node.stream(run.ctx) as events:
                            async for event in events:
                                await on_event(event)
                                if closing():
                                    stop = True
                                    break
                    if stop or closing():
                        break
                else:
                    finished = True
            if finished:
                save(args.db, run.result.all_messages())
                seen["saved_by"] = "end of run"
            elif args.save == "always":
                save(args.db, run.all_messages())
                seen["saved_by"] = "AgentRun.all_messages() after close"
        except RunCancelled as exc:
            seen["run_cancelled"] = True
            if args.save == "always":
                save(args.db, exc.all_messages())
                seen["saved_by"] = "RunCancelled.all_messages()"
            raise
        except asyncio.CancelledError:
            if args.save == "always" and run is not None:
                save(args.db, run.all_messages())
                seen["saved_by"] = "AgentRun.all_messages() on CancelledError"
            raise

    async def watch() -> None:
        waits = [asyncio.ensure_future(POINT.reached.wait()), asyncio.ensure_future(cancel_now.wait())]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        cancel()

    driver = asyncio.ensure_future(drive())
    watcher = asyncio.ensure_future(watch()) if args.how != "aclose" else None
    try:
        await driver
        seen["turn_one"] = "finished"
    except asyncio.CancelledError:
        seen["turn_one"] = "cancelled"
    except Exception as exc:
        seen["turn_one"] = f"raised {type(exc).__name__}"
    if watcher:
        watcher.cancel()
    await asyncio.sleep(1.0)
    return seen


async def turn_two(args: argparse.Namespace) -> dict[str, Any]:
    history = load(args.db)
    saved = normalized(history)
    out: dict[str, Any] = {"saved": saved, "saved_outcomes": outcomes(history), "problems": problems(saved)}
    try:
        async with agent().run_stream_events(FOLLOW_UP, message_history=history) as events:
            async for _ in events:
                pass
        out["next_turn"] = "accepted"
    except Rejected as exc:
        out["next_turn"] = f"rejected: {exc}"
    except Exception as exc:
        out["next_turn"] = f"raised {type(exc).__name__}: {exc}"
    out["sent"] = SENT[0] if SENT else None
    out["sent_outcomes"] = SENT_OUTCOMES[0] if SENT_OUTCOMES else None
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
    me = [sys.executable, os.path.abspath(__file__), "--point", args.point, "--how", args.how, "--save", args.save]
    me += ["--chunks", str(args.chunks), "--db", os.path.join(args.workdir, "history.sqlite")]
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
        f"cancel ({args.how}{', then SIGKILL' if args.kill else ''}) at {args.point}, app saves {args.save}: the "
        f"history held {[k for k, _ in after['saved']]}; the next turn was {after['next_turn']}; refunds {refunds}"
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
    parser.add_argument("--how", choices=HOWS, default="token")
    parser.add_argument("--save", choices=("end", "always"), default="always")
    parser.add_argument("--chunks", type=int, default=3, help="text chunks the client saw before a streaming cancel")
    parser.add_argument("--kill", action="store_true", help="SIGKILL the process right after the cancel")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork each turn's process from this one, Pydantic AI imported once (Linux; default: each turn is a new "
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
    problem = prefork(PHASE_IMPORTS) if args.fork else None
    if problem:
        result: dict[str, Any] = {"verdict": "ERROR", "did": problem}
    else:
        with tempfile.TemporaryDirectory() as args.workdir:
            result = run(args)
    version = importlib.metadata.version("pydantic-ai-slim")
    print(
        json.dumps(
            {"witness": "pydantic_ai_cancel_stream", "framework": "pydantic-ai-slim", "version": version, **result}
        )
    )
    return {"PASS": 0, "FAIL": 1}.get(result["verdict"], 2)


if __name__ == "__main__":
    sys.exit(main())
