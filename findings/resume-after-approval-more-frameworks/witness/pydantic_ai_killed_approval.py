"""Pydantic AI deferred tools on DBOSAgent: an approved tool SIGKILLed after its effect runs again.

    python pydantic_ai_killed_approval.py --point before-effect|after-effect [--fork]

Needs only pydantic-ai-slim[dbos] (DBOS on a SQLite system database). The refund tool is declared
requires_approval=True, so child process 1's run ends with DeferredToolRequests; it keeps the message
history in messages.json. Child 2 approves: a new DBOSAgent run with that history and
DeferredToolResults(approvals={call_id: True}) under DBOS workflow id approve-<call_id>; it SIGKILLs
itself inside the approved tool, before or after the refund (a row in effects.db). Child 3 calls
DBOS.launch(), which recovers that workflow, and waits for its result. Pydantic AI docs: "Tools and event
stream handlers are not automatically wrapped by DBOS" (https://ai.pydantic.dev/durable_execution/dbos/).
With --fork (Linux) the script imports DBOS and Pydantic AI once and forks each child from itself instead of
starting a new interpreter (the default, as the records ran): the same child code and argv, a fresh process each
time, DBOS launched only in the children.

Exit 0: recovery finished with one refund; 1: two refunds (or none); 2: the kill did not land.
"""

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
import uuid
import warnings
from pathlib import Path

NAME = "pydantic_ai_killed_approval"
# --fork: what the phases import, imported once before forking them: the modules child() names, then what a run
# imports on first use (DBOS's SQLite system database and its SQLAlchemy dialect, anyio's asyncio backend, Pydantic
# AI's price data). A module another release lacks is skipped: its phases import what they need, as cold ones do.
PHASE_IMPORTS = (
    "dbos",
    "pydantic_ai",
    "pydantic_ai.messages",
    "pydantic_ai.models.function",
    "pydantic_ai.durable_exec.dbos",
    "pydantic_core",
    "dbos._sys_db_sqlite",
    "sqlalchemy.dialects.sqlite",
    "anyio._backends._asyncio",
    "genai_prices.data",
    "pydantic_ai.direct",
)


def effects() -> int:
    with sqlite3.connect("effects.db") as db:
        db.execute("create table if not exists effects (name text)")
        return db.execute("select count(*) from effects where name = 'refund'").fetchone()[0]


def child(phase: str, point: str) -> int:
    from dbos import DBOS, SetWorkflowID
    from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, RunContext
    from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_core import to_jsonable_python

    def model(messages, info):
        if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
            return ModelResponse(parts=[TextPart("Refund for order A-1001 is done.")])
        call_id = f"call_{uuid.uuid4().hex[:16]}"
        return ModelResponse(parts=[ToolCallPart("refund", {"order_id": "A-1001"}, tool_call_id=call_id)])

    agent = Agent(FunctionModel(model), name="refund_approval_agent", output_type=[str, DeferredToolRequests])

    @agent.tool(requires_approval=True)
    def refund(ctx: RunContext[None], order_id: str) -> str:
        """Refund an order (runs only once a human approved the call)."""
        if phase == "approve" and point == "before-effect":
            os.kill(os.getpid(), signal.SIGKILL)
        with sqlite3.connect("effects.db") as db:
            db.execute("insert into effects values ('refund')")
        if phase == "approve" and point == "after-effect":
            os.kill(os.getpid(), signal.SIGKILL)
        return f"refunded order {order_id}"

    DBOS(
        config={
            "name": "witness-refund-approvals",
            "system_database_url": f"sqlite:///{os.path.abspath('dbos.sqlite')}",
            "application_version": "refunds-approval-1",
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # newer releases deprecate DBOSAgent for DBOSDurability
        from pydantic_ai.durable_exec.dbos import DBOSAgent

        durable = DBOSAgent(agent)
    try:
        DBOS.launch()  # recovers this executor's pending workflows
        if phase == "start":
            with SetWorkflowID("refund-A-1001"):
                result = durable.run_sync("Please refund order A-1001.")
            Path("messages.json").write_text(json.dumps(to_jsonable_python(result.all_messages())))
            Path("call_id").write_text(result.output.approvals[0].tool_call_id)
            return 0
        call_id = Path("call_id").read_text()
        if phase == "approve":
            history = ModelMessagesTypeAdapter.validate_python(json.loads(Path("messages.json").read_text()))
            approval = DeferredToolResults(approvals={call_id: True})
            with SetWorkflowID(f"approve-{call_id}"):
                durable.run_sync(message_history=history, deferred_tool_results=approval)
            return 0
        output = DBOS.retrieve_workflow(f"approve-{call_id}").get_result().output
        print(json.dumps({"output": output}))
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
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork each child from this process after one import of DBOS and Pydantic AI (Linux; default: each "
        "child is a new interpreter, as the records ran)",
    )
    parser.add_argument("--phase", choices=("start", "approve", "recover"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        return child(args.phase, args.point)
    if args.fork and sys.platform != "linux":
        parser.error("--fork needs Linux")

    def run(phase: str) -> subprocess.CompletedProcess:
        argv = [sys.executable, __file__, "--point", args.point, "--phase", phase]
        if args.fork:
            return run_forked(argv, timeout=240)
        return subprocess.run(argv, capture_output=True, text=True, timeout=240)

    version = importlib.metadata.version("pydantic-ai-slim")
    out = {"witness": NAME, "framework": "pydantic-ai-slim", "version": version}
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
    approve = run("approve") if start.returncode == 0 else None
    if approve is None or approve.returncode != -signal.SIGKILL:
        what = start.stderr[-300:] if approve is None else f"approve exit {approve.returncode}: {approve.stderr[-300:]}"
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"the approver was not SIGKILLed: {what}")
        print(json.dumps(out))
        return 2
    recover = run("recover")
    lines = recover.stdout.strip().splitlines()
    if recover.returncode != 0 or not lines:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"recover crashed: {recover.stderr[-300:]}")
        print(json.dumps(out))
        return 2
    refunds = effects()
    ok = refunds == 1
    out.update(
        verdict="PASS" if ok else "FAIL",
        counts={"refund": refunds},
        did=(
            f"paused with DeferredToolRequests, approved in a new process that was SIGKILLed inside the "
            f"approved tool ({args.point}); DBOS.launch() recovered the approval's workflow, which finished "
            f"({json.loads(lines[-1])['output']!r}); {refunds} refund(s)"
        ),
        dbos_version=importlib.metadata.version("dbos"),
    )
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
