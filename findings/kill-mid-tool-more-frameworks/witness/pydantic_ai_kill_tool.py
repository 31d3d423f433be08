"""Pydantic AI's DBOSAgent: a function tool SIGKILLed after its effect runs again on recovery.

    python pydantic_ai_kill_tool.py --point before-effect|after-effect [--fork]

Needs only pydantic-ai-slim[dbos] (DBOS on a SQLite system database, no server). An Agent with an offline
FunctionModel (it asks for the refund until the conversation holds the tool's answer) and one plain
function tool is wrapped in DBOSAgent. Child process 1 runs it as a DBOS workflow and SIGKILLs itself
inside the tool, before or after the refund (a row in effects.db). Child 2 calls DBOS.launch(), which
recovers the workflow, and waits for its result. Pydantic AI docs: "Tools and event stream handlers are
not automatically wrapped by DBOS" (https://ai.pydantic.dev/durable_execution/dbos/); the model request
is a DBOS step and is replayed, the tool is not. With --fork (Linux) the script imports DBOS and Pydantic AI once
and forks each child from itself instead of starting a new interpreter (the default, as the records ran): the same
child code and argv, a fresh process each time, DBOS launched only in the children.

Exit 0: recovery finished the run with one refund; 1: it refunded twice (or not at all); 2: the kill
did not land as designed.
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

NAME = "pydantic_ai_kill_tool"
WORKFLOW_ID = "refund-A-1001"
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
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    def model(messages, info):
        if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
            return ModelResponse(parts=[TextPart("Refund for order A-1001 is done.")])
        call_id = f"call_{uuid.uuid4().hex[:16]}"  # a new id per answer, as an LLM's would be
        return ModelResponse(parts=[ToolCallPart("refund", {"order_id": "A-1001"}, tool_call_id=call_id)])

    agent = Agent(FunctionModel(model), name="refund_agent")

    @agent.tool
    def refund(ctx: RunContext[None], order_id: str) -> str:
        """Refund an order at the payment provider."""
        if phase == "start" and point == "before-effect":
            os.kill(os.getpid(), signal.SIGKILL)
        with sqlite3.connect("effects.db") as db:
            db.execute("insert into effects values ('refund')")
        if phase == "start" and point == "after-effect":
            os.kill(os.getpid(), signal.SIGKILL)
        return f"refunded order {order_id}"

    DBOS(
        config={
            "name": "witness-refunds",
            "system_database_url": f"sqlite:///{os.path.abspath('dbos.sqlite')}",
            "application_version": "refunds-1",
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # newer releases deprecate DBOSAgent for DBOSDurability
        from pydantic_ai.durable_exec.dbos import DBOSAgent

        durable = DBOSAgent(agent)
    try:
        DBOS.launch()  # recovers this executor's pending workflows
        if phase == "start":
            with SetWorkflowID(WORKFLOW_ID):
                durable.run_sync("Please refund order A-1001.")
            return 0
        output = DBOS.retrieve_workflow(WORKFLOW_ID).get_result().output
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
    parser.add_argument("--phase", choices=("start", "resume"), help=argparse.SUPPRESS)
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
    refunds = effects()
    ok = refunds == 1
    out.update(
        verdict="PASS" if ok else "FAIL",
        counts={"refund": refunds},
        did=(
            f"DBOSAgent run SIGKILLed inside its function tool ({args.point}); DBOS.launch() in a new "
            f"process recovered the workflow, which finished ({json.loads(lines[-1])['output']!r}); {refunds} refund(s)"
        ),
        dbos_version=importlib.metadata.version("dbos"),
    )
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
