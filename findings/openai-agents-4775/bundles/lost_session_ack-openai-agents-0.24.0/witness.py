"""OpenAI Agents SDK (no plugpull): a Session write that loses its ack stores the staged input twice (#4775).

A run pauses on a tool that needs approval; the app stages input with RunState.add_input, approves,
and runs the state again with a SQLiteSession. The Session stores the staged input, then raises (a
lost acknowledgement: ack-lost), or raises without storing it (write-lost). The app saves
RunState.to_json(); a new process restores it and runs it again with the same Session. The docs
(results.md, "Add input before resuming") promise one durable InputItem occurrence across
serialization, resume, and replay-safe retries: the staged input's occurrences are counted.

    python lost_session_ack.py [--point ack-lost|write-lost] [--fork]

--fork forks the retry from this process (the Agents SDK imported once) before the failed run, held until
the retry is due, instead of starting a new interpreter for it.

Last stdout line: one JSON object. Exit 0: the Session holds the staged input once; 1: it holds it 0 or 2+ times;
2: did not run as designed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import secrets
import select
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Any

from agents.run_state import RunState
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from agents import Agent, Model, ModelResponse, Runner, SQLiteSession, function_tool, set_tracing_disabled

SESSION = "conversation"


class LostAck(ConnectionError):
    """The database link dropped during add_items."""


class FlakySession(SQLiteSession):
    """A SQLiteSession whose one write carrying `mark` loses its acknowledgement (or the write itself)."""

    def __init__(self, session_id: str, db_path: str, fault: str, mark: str) -> None:
        super().__init__(session_id, db_path)
        self.fault, self.mark = fault, mark

    async def add_items(self, items: list[Any]) -> None:
        if self.fault and self.mark in json.dumps(items, default=str):
            fault, self.fault = self.fault, ""
            if fault == "ack-lost":
                await super().add_items(items)  # stored ...
            raise LostAck(f"{fault}: the connection dropped during add_items")  # ... but the caller hears an error
        await super().add_items(items)


class ScriptedModel(Model):
    """Asks for the refund until the conversation holds its output, then answers. No network."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        items = [] if isinstance(input, str) else list(input)
        refunded = any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in items)
        if not refunded:
            output: list[Any] = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"call_{secrets.token_hex(6)}",
                    name="refund",
                    arguments='{"order": "A-1001"}',
                    status="completed",
                )
            ]
        else:
            text = ResponseOutputText(type="output_text", text="Refunded A-1001.", annotations=[])
            output = [
                ResponseOutputMessage(
                    id=f"msg_{secrets.token_hex(6)}",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[text],
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


@function_tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order (a human approves first)."""
    return f"refunded {order}"


def build_agent() -> Agent:
    return Agent(name="Refunds", instructions="Refund the order.", model=ScriptedModel(), tools=[refund])


async def start(where: Path, point: str, token: str) -> int:
    agent, db = build_agent(), str(where / "session.db")
    session = FlakySession(SESSION, db, fault="", mark=token)
    result = await Runner.run(agent, "Refund order A-1001, please.", session=session)
    state = result.to_state()
    state.add_input(f"Also email the receipt. [staged-input {token}]")  # docs: "Add input before resuming"
    for interruption in result.interruptions:
        state.approve(interruption)
    session.fault = point
    try:
        await Runner.run(agent, state, session=session)
    except LostAck as exc:
        # What an app does with a failed run: keep the state and retry it later.
        (where / "state.json").write_text(json.dumps(state.to_json()))
        print(f"start: {exc}; state saved", file=sys.stderr)
        return 1
    return 0  # the fault never fired: the parent reports ERROR


async def resume(where: Path) -> int:
    agent = build_agent()
    state = await RunState.from_json(agent, json.loads((where / "state.json").read_text()))
    print(f"resume: pending input {len(state.pending_input)} item(s)", file=sys.stderr)
    result = await Runner.run(agent, state, session=SQLiteSession(SESSION, str(where / "session.db")))
    print(f"resume: {result.final_output}", file=sys.stderr)
    return 0


class HeldRetry:
    """The retry forked from this process before the failed run (--fork), so it holds none of that run's
    memory: the child waits on a pipe, runs main(argv) once released, and exits 0 if the pipe closes first."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        held, self.go = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        self.pid = os.fork()
        if self.pid == 0:
            code = 1
            try:
                os.close(self.go)
                released = os.read(held, 1)
                sys.argv = [__file__, *argv]
                code = (main(argv) or 0) if released else 0
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
        os.close(held)

    def release(self, timeout: float) -> int:
        """Run the retry now; its exit code as subprocess gives it (-9 when SIGKILLed, as after timeout s)."""
        os.write(self.go, b"1")
        pidfd = os.pidfd_open(self.pid)
        exited = select.select([pidfd], [], [], timeout)[0]
        os.close(pidfd)
        if not exited:
            os.kill(self.pid, signal.SIGKILL)
        code = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        self.pid = None
        if not exited:
            raise subprocess.TimeoutExpired([sys.executable, __file__, *self.argv], timeout)
        return code

    def close(self) -> None:
        """Without release(): the child exits without running."""
        os.close(self.go)
        if self.pid is not None:
            os.waitpid(self.pid, 0)


def retry(where: Path, held: HeldRetry | None = None) -> int:
    """The retry in a Python process of its own: it shares nothing in memory with the failed run."""
    if held is not None:
        return held.release(timeout=240)
    argv = [sys.executable, __file__, "--phase", "resume", "--dir", str(where)]
    return subprocess.run(argv, timeout=240).returncode


def report(point: str, verdict: str, counts: dict[str, int], did: str) -> int:
    version = importlib.metadata.version("openai-agents")
    line = {"witness": "lost_session_ack", "framework": "openai-agents", "version": version, "verdict": verdict}
    print(json.dumps({**line, "counts": counts, "did": did, "point": point}))
    return {"PASS": 0, "FAIL": 1}.get(verdict, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--point", choices=["ack-lost", "write-lost"], default="ack-lost")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork the retry from this process, the Agents SDK imported once (default: the retry is a new "
        "interpreter, as the records ran)",
    )
    parser.add_argument("--phase", choices=["resume"], help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fork and sys.platform != "linux":
        parser.error("--fork: needs Linux (os.fork, os.pidfd_open)")
    set_tracing_disabled(True)
    if args.phase == "resume":
        return asyncio.run(resume(Path(args.dir)))

    token = secrets.token_hex(8)
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        held = None
        if args.fork:
            if threading.active_count() != 1:
                did = f"--fork: {threading.active_count()} threads after the imports; fork() copies only this one"
                return report(args.point, "ERROR", {}, did)
            held = HeldRetry(["--phase", "resume", "--dir", str(where)])
        try:
            try:
                started = asyncio.run(start(where, args.point, token))  # the failed run: in this process
            except Exception as exc:  # it failed otherwise than by the fault: no evidence either way
                return report(args.point, "ERROR", {}, f"start raised {type(exc).__name__}: {exc}")
            if started != 1 or not (where / "state.json").exists():
                return report(args.point, "ERROR", {}, f"start returned {started}: the {args.point} fault did not land")
            resumed = retry(where, held)
        finally:
            if held is not None:
                held.close()
        with sqlite3.connect(where / "session.db") as db:
            rows = [
                r[0] for r in db.execute("SELECT message_data FROM agent_messages WHERE session_id = ?", (SESSION,))
            ]
    stored = sum(token in row for row in rows)
    if resumed != 0:
        return report(args.point, "ERROR", {"staged-input": stored}, f"resume exited {resumed}")
    did = (
        f"Session.add_items {'stored the staged input, then raised' if args.point == 'ack-lost' else 'raised'}; "
        f"a new process restored RunState.to_json() and ran it again: the Session holds the staged input "
        f"{stored} time(s) among {len(rows)} items"
    )
    return report(args.point, "PASS" if stored == 1 else "FAIL", {"staged-input": stored}, did)


if __name__ == "__main__":
    sys.exit(main())
