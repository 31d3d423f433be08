"""Pydantic AI's DBOSAgent across a power cut (no plugpull): killed after a refund keyed by the tool call id, then the cut.

    python pydantic_ai_power_cut.py [--cut unsynced|namespace|lazyfs|none] [--fork]

Needs pydantic-ai-slim[dbos] and mfusepy (with libfuse 3 and fusermount3, Debian's fuse3, and permission to
mount FUSE). DBOS's SQLite system database lives on cutfs.py, beside this script: a passthrough FUSE file system
that keeps what a disk would hold after a power cut (its docstring says exactly what each cut loses). An Agent with
an offline FunctionModel (a new tool call id per answer, as an LLM's would be) and one function tool is wrapped in
DBOSAgent; the tool passes ``ctx.tool_call_id`` as its idempotency key to a payment provider (a SQLite table
outside the mount, one row per key). The model request is a DBOS step, so recovery replays it with the same id.
Each phase is its own process:

1. ``start``: runs the agent as a DBOS workflow; the process SIGKILLs itself inside the tool, right after the
   provider recorded the refund;
2. the power cut (``--cut``; ``none``: no cut, a plain SIGKILL) of the system database's directory;
3. ``resume``: on a fresh mount of what the disk kept, DBOS.launch() recovers the workflow; it waits for its result.

DBOS's SQLite system database uses SQLite's defaults (rollback journal, synchronous=FULL): SQLite fsyncs the
directory after creating a journal but, unless synchronous=EXTRA, not after the unlink that commits
(https://www.sqlite.org/pragma.html#pragma_synchronous). A cut that loses that unlink brings the journal back and
SQLite rolls the last transaction back. Exit 0: recovery finished the run with one refund; 1: otherwise; 2: did
not run as designed (FUSE unavailable included).
With --fork (Linux) the script imports DBOS and Pydantic AI once and forks each phase from itself instead of starting
a new interpreter per phase (the default, as the records ran): the same phase code and argv, a fresh process each time.
"""

# No `from __future__ import annotations`: Pydantic AI reads the tool's hints (RunContext, local here) at run time.
import argparse
import importlib.metadata
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import uuid
import warnings
from pathlib import Path

from power_cut_fork import prefork, run_forked

WORKFLOW_ID = "refund-A-1001"
HERE = Path(__file__).resolve().parent
# --fork: what the phases import, imported once before forking them: the modules child() names, then what a run
# imports on first use (DBOS's SQLite system database and its SQLAlchemy dialect, anyio's asyncio backend, Pydantic
# AI's price data), as pydantic_ai_kill_tool.py's. A module another release lacks is skipped: its phases import what
# they need, as cold ones do.
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


def child(phase: str, workdir: str, counter: str) -> int:
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
        """Refund an order at the payment provider, keyed by the tool call id."""
        with sqlite3.connect(counter, timeout=30) as db:
            db.execute("INSERT OR IGNORE INTO refunds (key) VALUES (?)", (ctx.tool_call_id,))
        if phase == "start":
            os.kill(os.getpid(), signal.SIGKILL)  # right after the refund: the power is cut next
        return f"refunded order {order_id}"

    DBOS(
        config={
            "name": "witness-refunds",
            "system_database_url": f"sqlite:///{os.path.join(workdir, 'dbos.sqlite')}",
            # One version for both processes: DBOS recovers only workflows of its own application_version.
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


class Mount:
    """cutfs.py over ``disk`` at ``path``; ``cut(variant)`` unmounts and rewrites ``disk`` to what a disk kept."""

    def __init__(self, disk: Path, stash: Path, path: Path) -> None:
        argv = [sys.executable, str(HERE / "cutfs.py"), str(disk), str(stash), str(path)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.proc.kill()
            raise RuntimeError(f"cutfs did not mount (exit {self.proc.wait()}): FUSE unavailable here?")

    def cut(self, variant: str) -> list[str]:
        self.proc.stdin.write(f"cut {variant}\n")
        self.proc.stdin.flush()
        lost = json.loads(self.proc.stdout.readline())["lost"]
        self.proc.wait(60)
        return lost

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()
            self.proc.wait(60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cut", choices=("unsynced", "namespace", "lazyfs", "none"), default="unsynced")
    parser.add_argument("--phase", choices=("start", "resume"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument("--counter", help=argparse.SUPPRESS)
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork each phase from this process after one import of DBOS and Pydantic AI (Linux; default: each "
        "phase is a new interpreter, as the records ran)",
    )
    args = parser.parse_args(argv)
    if args.phase:
        return child(args.phase, args.workdir, args.counter)
    version = importlib.metadata.version("pydantic-ai-slim")
    out = {"witness": "pydantic_ai_power_cut", "framework": "pydantic-ai-slim", "version": version}
    out["dbos_version"] = importlib.metadata.version("dbos")

    def report(verdict: str, refunds: int | None, did: str, **detail) -> int:
        counts = {} if refunds is None else {"refund": refunds}
        print(json.dumps(out | {"verdict": verdict, "counts": counts, "did": did, "detail": detail}))
        return {"PASS": 0, "FAIL": 1}.get(verdict, 2)

    if args.fork and sys.platform != "linux":
        parser.error("--fork needs Linux")
    problem = prefork(PHASE_IMPORTS) if args.fork else None
    if problem:
        return report("ERROR", None, problem)

    def spawn(argv: list[str]) -> subprocess.CompletedProcess:
        if args.fork:  # the phase holds this process's pipes to cutfs while it runs, and never uses them
            return run_forked(main, argv, timeout=240)
        return subprocess.run(argv, capture_output=True, text=True, timeout=240)

    with tempfile.TemporaryDirectory(prefix="pydantic-ai-power-") as tmp:
        root = Path(tmp)
        disk, stash, mnt, counter = root / "disk", root / "stash", root / "mnt", root / "provider.sqlite"
        for d in (disk, stash, mnt):
            d.mkdir()
        with sqlite3.connect(counter) as db:
            db.execute("CREATE TABLE refunds (key TEXT PRIMARY KEY)")
        db.close()  # no open connection is copied into a forked phase
        me = [sys.executable, __file__, "--workdir", str(mnt), "--counter", str(counter), "--phase"]
        try:
            mount = Mount(disk, stash, mnt)
        except (RuntimeError, OSError) as e:
            return report("ERROR", None, str(e))
        try:
            start = spawn([*me, "start"])
            if start.returncode != -signal.SIGKILL:
                mount.stop()
                did = f"start was not SIGKILLed in the tool (exit {start.returncode})"
                return report("ERROR", None, did, stderr=start.stderr[-800:])
            if args.cut == "none":
                mount.stop()
                lost = []
            else:
                lost = mount.cut(args.cut)
            mount = Mount(disk, stash, mnt)
            try:
                resume = spawn([*me, "resume"])
            finally:
                mount.stop()
        except subprocess.TimeoutExpired as e:
            mount.stop()
            return report("ERROR", None, f"a phase outlived its 240 s: {e.cmd[-1]}")
        with sqlite3.connect(counter) as db:
            refunds = db.execute("SELECT count(*) FROM refunds").fetchone()[0]
    head = f"the power cut ({args.cut}) lost: {'; '.join(lost) or 'nothing'}"
    lines = [line for line in resume.stdout.splitlines() if line.startswith("{")]
    if resume.returncode != 0 or not lines:
        error = (resume.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        return report(
            "FAIL", refunds, f"{head}; resume crashed: {error}; the provider saw {refunds} refund(s)", lost=lost
        )
    ok = refunds == 1
    did = (
        f"DBOSAgent run SIGKILLed inside its function tool right after the refund keyed by the tool call id; {head}; "
        f"DBOS.launch() recovered the workflow ({json.loads(lines[-1])['output']!r}); the provider saw {refunds} refund(s)"
    )
    return report("PASS" if ok else "FAIL", refunds, did, lost=lost)


if __name__ == "__main__":
    sys.exit(main())
