"""Google ADK's SqliteSessionService across a power cut (no plugpull): killed after a keyed refund, then the cut.

    python adk_power_cut.py [--cut unsynced|namespace|lazyfs|none] [--fork]

Needs google-adk and mfusepy (with libfuse 3 and fusermount3, Debian's fuse3, and permission to mount FUSE). The
session database lives on cutfs.py, beside this script: a passthrough FUSE file system that keeps what a disk
would hold after a power cut (its docstring says exactly what each cut loses). A resumable App
(ResumabilityConfig(is_resumable=True)) whose LlmAgent calls one refund tool; a scripted BaseLlm stands in for the
model (no key, no network). The refund tool passes ``tool_context.function_call_id`` as its idempotency key to a
payment provider (a SQLite table outside the mount, one row per key). Each phase is its own process:

1. ``run``: run_async(new_message=...); the process SIGKILLs itself right after the provider recorded the refund;
2. the power cut (``--cut``; ``none``: no cut, a plain SIGKILL) of the session database's directory;
3. ``resume``: on a fresh mount of what the disk kept, reads the session, takes its last event's invocation id
   and run_async(invocation_id=...), ADK's documented way to resume an invocation that failed midway.

SqliteSessionService uses SQLite's defaults (rollback journal, synchronous=FULL): SQLite fsyncs the directory
after creating a journal but, unless synchronous=EXTRA, not after the unlink that commits
(https://www.sqlite.org/pragma.html#pragma_synchronous). A cut that loses that unlink brings the journal back and
SQLite rolls the last transaction back. Exit 0: one refund and the resumed run finished; 1: otherwise; 2: did not
run as designed (FUSE unavailable included).
With --fork (Linux) the script imports ADK once and forks each phase from itself instead of starting a new
interpreter per phase (the default, as the records ran): the same phase code and argv, a fresh process each time.
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
from pathlib import Path

from power_cut_fork import prefork, run_forked

APP, USER, SESSION = "refunds", "customer-1", "refund-A-1001"
HERE = Path(__file__).resolve().parent
warnings.filterwarnings("ignore", message=r".*EXPERIMENTAL.*")
# --fork: what the phases import, imported once before forking them: the modules child() names, then what ADK imports
# only once a run starts, as adk_killed_tool.py's. A module another ADK release lacks is skipped: its phases import it
# if needed, as cold ones do.
PHASE_IMPORTS = (
    "google.adk.agents",
    "google.adk.apps",
    "google.adk.models.base_llm",
    "google.adk.models.llm_response",
    "google.adk.runners",
    "google.adk.sessions.sqlite_session_service",
    "google.adk.tools.tool_context",
    "google.genai.types",
    "google.adk.workflow._workflow",
    "google.adk.workflow._llm_agent_wrapper",
    "google.adk.flows.llm_flows.auto_flow",
    "google.adk.flows.llm_flows.single_flow",
    "google.adk.flows.llm_flows.tools._functions",
    "google.adk.models.google_llm",
    "google.adk.tools.agent_tool",
)


def child(phase: str, workdir: str, counter: str) -> int:
    from google.adk.agents import LlmAgent
    from google.adk.apps import App, ResumabilityConfig
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions.sqlite_session_service import SqliteSessionService
    from google.adk.tools.tool_context import ToolContext
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

    def refund(order_id: str, cents: int, tool_context: ToolContext) -> dict:
        """Refund an order at the payment provider, keyed by ADK's function call id."""
        with sqlite3.connect(counter, timeout=30) as db:
            db.execute("INSERT OR IGNORE INTO refunds (key) VALUES (?)", (tool_context.function_call_id,))
        if phase == "run":
            os.kill(os.getpid(), signal.SIGKILL)  # right after the refund: the power is cut next
        return {"status": f"refunded {cents} cents on order {order_id}"}

    async def go() -> None:
        sessions = SqliteSessionService(os.path.join(workdir, "sessions.sqlite"))
        agent = LlmAgent(name="refund_agent", model=ScriptedLlm(), instruction="Refund the order.", tools=[refund])
        app = App(name=APP, root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=True))
        runner = Runner(app=app, session_service=sessions)
        kwargs: dict = {}
        if phase == "run":
            await sessions.create_session(app_name=APP, user_id=USER, session_id=SESSION)
            kwargs["new_message"] = types.Content(role="user", parts=[types.Part(text="Please refund order A-1001.")])
        else:
            session = await sessions.get_session(app_name=APP, user_id=USER, session_id=SESSION)
            kwargs["invocation_id"] = session.events[-1].invocation_id
            print(json.dumps({"events_after_cut": len(session.events)}))
        final = None
        async for event in runner.run_async(user_id=USER, session_id=SESSION, **kwargs):
            if event.content and event.content.parts and event.content.parts[0].text:
                final = event.content.parts[0].text
        print(json.dumps({"final": final}))

    asyncio.run(go())
    return 0


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
    parser.add_argument("--phase", choices=("run", "resume"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument("--counter", help=argparse.SUPPRESS)
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork each phase from this process after one import of ADK (Linux; default: each phase is a new "
        "interpreter, as the records ran)",
    )
    args = parser.parse_args(argv)
    if args.phase:
        return child(args.phase, args.workdir, args.counter)
    out = {"witness": "adk_power_cut", "framework": "google-adk", "version": importlib.metadata.version("google-adk")}

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

    with tempfile.TemporaryDirectory(prefix="adk-power-") as tmp:
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
            run = spawn([*me, "run"])
            if run.returncode != -signal.SIGKILL:
                mount.stop()
                return report(
                    "ERROR",
                    None,
                    f"run was not SIGKILLed in the tool (exit {run.returncode})",
                    stderr=run.stderr[-800:],
                )
            journal = [p.name for p in disk.iterdir()]
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
    said = [json.loads(line) for line in resume.stdout.splitlines() if line.startswith("{")]
    events = next((s["events_after_cut"] for s in said if "events_after_cut" in s), None)
    ok = refunds == 1 and resume.returncode == 0
    did = (
        f"run SIGKILLed right after the refund keyed by its function call id; files at the kill: {sorted(journal)}; "
        f"the power cut ({args.cut}) lost: {'; '.join(lost) or 'nothing'}; resume found {events} event(s) and "
        f"exited {resume.returncode}; the provider saw {refunds} refund(s)"
    )
    detail = {"lost": lost, "resume_stderr": resume.stderr[-600:]} if resume.returncode else {"lost": lost}
    return report("PASS" if ok else "FAIL", refunds, did, **detail)


if __name__ == "__main__":
    sys.exit(main())
