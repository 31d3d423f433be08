"""OpenAI Agents SDK: a client cancels a streamed run, then the next turn continues the Session (no plugpull).

    python openai_agents_cancel_stream.py [--point POINT] [--how HOW] [--chunks K] [--kill] [--fork]

One conversation in a SQLiteSession file; a scripted streaming Model stands in for the model (no key, no
network). Turn 1 ("refund order A-1001", ``Runner.run_streamed(agent, text, session=...)``) streams a
function call, runs the ``refund`` tool (it appends a line to a file: the effect) and streams the answer in
chunks. The client cancels at POINT:
  ``streaming``     after K text chunks of the answer reached the client;
  ``tool-before``   inside the tool, before its effect;
  ``tool-after``    inside the tool, after its effect;
  ``after-tool``    after the tool returned, when the next model call starts (before its first chunk);
  ``after-answer``  after the last chunk of the answer streamed, before the run returns;
the way HOW says:
  ``cancel``        ``result.cancel()`` (mode "immediate", the default; agents/result.py);
  ``after-turn``    ``result.cancel(mode="after_turn")``;
  ``task``          cancel the asyncio task that consumes ``stream_events()`` (an SSE disconnect in a server);
  ``aclose``        leave the ``async for`` over ``stream_events()`` and close the generator (the event after
                    the point, for the points inside the run);
with --kill the process SIGKILLs itself right after the cancel (a server that dies while draining).
Turn 2 runs in a new process with the same Session: it prints the saved items, and the scripted model is
strict the way provider APIs are: it rejects a history with a function call without its output, an output
without its call, or two assistant messages in a row.

Prints one JSON line. Exit 0 (PASS): the next turn was accepted; 1 (FAIL): it was rejected; 2 (ERROR): the
cancel did not land as designed.
With --fork (Linux) each turn's process is forked from the witness, the Agents SDK imported once, instead of a new
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
from typing import Any

from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
)

from agents import Agent, Model, ModelResponse, Runner, SQLiteSession, function_tool, set_tracing_disabled

REQUEST, FOLLOW_UP = "refund order A-1001", "thanks, anything else?"
ANSWER = "Refund of order A-1001 is done; the money is back on your card in three to five days."
POINTS = ("streaming", "tool-before", "tool-after", "after-tool", "after-answer")
HOWS = ("cancel", "after-turn", "task", "aclose")
# --fork: what the turns import before forking them beyond this module's own imports: nothing (a forked turn
# imports what it first uses itself, as a cold one does).
PHASE_IMPORTS: tuple[str, ...] = ()
#: How long a point holds the run, so the client's cancel lands there and not one step later.
HOLD = 0.3
#: Pause between two streamed chunks (a real model's tokens arrive over time).
CHUNK_GAP = 0.02


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


def field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def text_of(item: Any) -> str:
    content = field(item, "content")
    if isinstance(content, str):
        return content
    return "".join(field(part, "text") or "" for part in content or [])


def normalized(items: list[Any]) -> list[tuple[str, str]]:
    """The Session's items as (kind, id or text) in order."""
    out = []
    for item in items:
        kind, role = field(item, "type"), field(item, "role")
        if kind == "function_call":
            out.append(("call", field(item, "call_id")))
        elif kind == "function_call_output":
            out.append(("result", field(item, "call_id")))
        elif role in ("user", "assistant"):
            out.append((role, text_of(item)))
        else:
            out.append((str(kind or role), ""))
    return out


class Points:
    """Where the run is; the client's cancel waits on ``reached``."""

    def __init__(self, point: str) -> None:
        self.point, self.reached = point, asyncio.Event()

    async def at(self, name: str) -> None:
        if name == self.point:
            self.reached.set()
            await asyncio.sleep(HOLD)


POINT: Points | None = None


def response(output: list[Any]) -> Response:
    return Response(
        id="resp_scripted",
        created_at=0,
        model="scripted",
        object="response",
        output=output,
        tool_choice="auto",
        tools=[],
        top_p=None,
        parallel_tool_calls=False,
        status="completed",
    )


class StrictStreamingModel(Model):
    """Chooses from the conversation: the refund call for the request, then the answer, streamed in chunks."""

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        raise NotImplementedError("this app streams")

    async def stream_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        history = normalized(items)
        why = problems(history)
        if why:
            raise Rejected("; ".join(why))
        yield ResponseCreatedEvent(type="response.created", response=response([]), sequence_number=0)
        last_kind, last_text = history[-1]
        if last_kind == "user" and last_text == REQUEST:
            call = ResponseFunctionToolCall(
                type="function_call",
                id="fc_1",
                call_id=f"call_{os.urandom(4).hex()}",
                name="refund",
                arguments=json.dumps({"order": "A-1001"}),
                status="completed",
            )
            yield ResponseOutputItemDoneEvent(
                type="response.output_item.done", item=call, output_index=0, sequence_number=1
            )
            yield ResponseCompletedEvent(type="response.completed", response=response([call]), sequence_number=2)
            return
        answer = ANSWER if last_kind == "result" else "Nothing else is open on your account."
        if last_kind == "result":
            await POINT.at("after-tool")
        message_id = f"msg_{os.urandom(4).hex()}"
        partial = ResponseOutputMessage(
            id=message_id, type="message", role="assistant", status="in_progress", content=[]
        )
        yield ResponseOutputItemAddedEvent(
            type="response.output_item.added", item=partial, output_index=0, sequence_number=1
        )
        words = answer.split(" ")
        for n, word in enumerate(words):
            await asyncio.sleep(CHUNK_GAP)
            yield ResponseTextDeltaEvent(
                type="response.output_text.delta",
                item_id=message_id,
                output_index=0,
                content_index=0,
                delta=word if n == 0 else " " + word,
                logprobs=[],
                sequence_number=2 + n,
            )
        message = ResponseOutputMessage(
            id=message_id,
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=answer, annotations=[])],
        )
        seq = 2 + len(words)
        yield ResponseOutputItemDoneEvent(
            type="response.output_item.done", item=message, output_index=0, sequence_number=seq
        )
        yield ResponseCompletedEvent(type="response.completed", response=response([message]), sequence_number=seq + 1)
        if last_kind == "result":
            await POINT.at("after-answer")


@function_tool
async def refund(order: str) -> str:
    """Refund an order."""
    await POINT.at("tool-before")
    with open(os.environ["WITNESS_EFFECTS"], "a") as effects:
        effects.write(f"refund {order}\n")
    await POINT.at("tool-after")
    return f"refunded {order}"


def agent() -> Agent:
    return Agent(name="refunds", instructions="Refund orders.", model=StrictStreamingModel(), tools=[refund])


async def turn_one(args: argparse.Namespace) -> dict[str, Any]:
    global POINT
    POINT = Points(args.point)
    session = SQLiteSession("conversation", args.db)
    result = Runner.run_streamed(agent(), REQUEST, session=session)
    seen: dict[str, Any] = {"text": "", "chunks": 0, "tool_calls": [], "tool_outputs": 0, "cancelled": False}
    cancel_now = asyncio.Event()

    def cancel() -> None:
        seen["cancelled"] = True
        if args.how == "cancel":
            result.cancel()
        elif args.how == "after-turn":
            result.cancel(mode="after_turn")
        elif args.how == "task":
            consumer.cancel()
        if args.kill:
            os.kill(os.getpid(), signal.SIGKILL)

    async def consume() -> None:
        async for event in result.stream_events():
            if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
                seen["text"] += event.data.delta
                seen["chunks"] += 1
                if args.point == "streaming" and seen["chunks"] == args.chunks and not seen["cancelled"]:
                    if args.how == "aclose":
                        seen["cancelled"] = True
                        break
                    cancel_now.set()
                    await asyncio.sleep(0)
            elif event.type == "run_item_stream_event" and event.name == "tool_called":
                seen["tool_calls"].append(event.item.raw_item.call_id)
            elif event.type == "run_item_stream_event" and event.name == "tool_output":
                seen["tool_outputs"] += 1
            if args.how == "aclose" and POINT.reached.is_set() and not seen["cancelled"]:
                seen["cancelled"] = True
                break
        # Leaving the loop closes the generator (PEP 525 aclose at the latest on garbage collection).

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
    if args.how == "aclose" and seen["cancelled"] and args.kill:
        os.kill(os.getpid(), signal.SIGKILL)
    if watcher:
        watcher.cancel()
    # Whatever the SDK still does in the background, let it finish before the process ends.
    await asyncio.sleep(1.0)
    seen["run_loop_task_done"] = result.run_loop_task.done() if result.run_loop_task else None
    seen["is_complete"] = result.is_complete
    return seen


async def turn_two(args: argparse.Namespace) -> dict[str, Any]:
    global POINT
    POINT = Points("none")
    session = SQLiteSession("conversation", args.db)
    saved = normalized(await session.get_items())
    out: dict[str, Any] = {"saved": saved, "problems": problems(saved)}
    try:
        result = Runner.run_streamed(agent(), FOLLOW_UP, session=session)
        async for _ in result.stream_events():
            pass
        out["next_turn"] = "accepted"
    except Rejected as exc:
        out["next_turn"] = f"rejected: {exc}"
    except Exception as exc:
        out["next_turn"] = f"raised {type(exc).__name__}: {exc}"
    out["after"] = normalized(await session.get_items())
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
    me += ["--chunks", str(args.chunks), "--db", os.path.join(args.workdir, "session.sqlite")]
    env = {**os.environ, "WITNESS_EFFECTS": effects}
    one = phase(args, [*me, *(["--kill"] if args.kill else []), "--phase", "one"], env)
    if args.kill and one.returncode != -signal.SIGKILL:
        return {
            "verdict": "ERROR",
            "did": f"turn one was not SIGKILLed after the cancel (exit {one.returncode})",
            "stderr": one.stderr[-800:],
        }
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
        f"cancel ({args.how}{', then SIGKILL' if args.kill else ''}) at {args.point}: the Session held "
        f"{[k for k, _ in after['saved']]}; the next turn was {after['next_turn']}; refunds {refunds}"
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
    parser.add_argument("--how", choices=HOWS, default="cancel")
    parser.add_argument("--chunks", type=int, default=3, help="text chunks the client saw before a streaming cancel")
    parser.add_argument("--kill", action="store_true", help="SIGKILL the process right after the cancel")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork each turn's process from this one, the Agents SDK imported once (Linux; default: each turn is a new "
        "interpreter)",
    )
    parser.add_argument("--phase", choices=("one", "two"), help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    set_tracing_disabled(True)
    if args.phase:
        out = asyncio.run((turn_one if args.phase == "one" else turn_two)(args))
        print(json.dumps(out))
        return 0
    if args.fork and sys.platform != "linux":
        parser.error("--fork needs Linux")
    problem = prefork(PHASE_IMPORTS) if args.fork else None
    if problem:
        result: dict[str, Any] = {"verdict": "ERROR", "did": problem}
    else:
        with tempfile.TemporaryDirectory() as args.workdir:
            result = run(args)
    version = importlib.metadata.version("openai-agents")
    print(
        json.dumps(
            {"witness": "openai_agents_cancel_stream", "framework": "openai-agents", "version": version, **result}
        )
    )
    return {"PASS": 0, "FAIL": 1}.get(result["verdict"], 2)


if __name__ == "__main__":
    sys.exit(main())
