"""CrewAI @human_feedback: an approved refund SIGKILLed inside its listener is asked for and run again.

    python crewai_killed_approval.py --point before-effect|after-effect

Needs only crewai. A @persist flow whose @start method carries @human_feedback with an async provider
(it raises HumanFeedbackPending: the flow saves the pending request and kickoff() returns, child 1).
Child 2 answers the way CrewAI's docs show, Flow.from_pending(flow_id, persistence).resume("approved"),
and SIGKILLs itself inside the approved @listen refund, before or after the refund (a row in effects.db).
The request was cleared before the listener ran, so child 3 continues the flow the supported way,
kickoff(restore_from_state_id=flow_id) ("fork: hydrates state from the snapshot", re-running the flow,
https://docs.crewai.com/en/guides/flows/inputs-id-deprecation); it asks for the approval again, and the
app passes the approval it recorded. Everything CrewAI writes stays in the working directory.

Exit 0: one refund after recovery; 1: two; 2: the run did not go as designed.
"""

import argparse
import importlib.metadata
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

NAME = "crewai_killed_approval"


def effects() -> int:
    with sqlite3.connect("effects.db") as db:
        db.execute("create table if not exists effects (name text)")
        return db.execute("select count(*) from effects where name = 'refund'").fetchone()[0]


def offline_here() -> None:
    here = os.path.abspath(".")
    os.environ.update(HOME=here, CREWAI_STORAGE_DIR=os.path.join(here, "crewai-storage"), TMPDIR=here)
    os.environ.update(CREWAI_TRACING_ENABLED="false", CREWAI_DISABLE_TELEMETRY="true")
    os.environ.update(CREWAI_DISABLE_VERSION_CHECK="true", OTEL_SDK_DISABLED="true")
    tempfile.tempdir = None


def child(phase: str, point: str) -> int:
    offline_here()
    from crewai.flow.async_feedback import HumanFeedbackPending
    from crewai.flow.flow import Flow, listen, start
    from crewai.flow.human_feedback import human_feedback
    from crewai.flow.persistence import SQLiteFlowPersistence, persist
    from pydantic import BaseModel

    class AskLater:  # CrewAI's async provider shape: ask a human elsewhere, pause the flow
        def request_feedback(self, context, flow):
            raise HumanFeedbackPending(context=context)

    class RefundState(BaseModel):
        id: str = ""

    persistence = SQLiteFlowPersistence(os.path.abspath("flow_states.db"))

    @persist(persistence)
    class RefundFlow(Flow[RefundState]):
        @start()
        @human_feedback(message="Approve this refund?", llm=None, provider=AskLater())
        def propose_refund(self) -> dict:
            return {"order_id": "A-1001", "cents": 1999}

        @listen(propose_refund)
        def refund(self) -> str:
            if phase == "approve" and point == "before-effect":
                os.kill(os.getpid(), signal.SIGKILL)
            with sqlite3.connect("effects.db") as db:
                db.execute("insert into effects values ('refund')")
            if phase == "approve" and point == "after-effect":
                os.kill(os.getpid(), signal.SIGKILL)
            return "refunded order A-1001"

    if phase == "start":
        paused = RefundFlow(persistence=persistence).kickoff()
        Path("flow_id").write_text(paused.context.flow_id)
        return 0 if isinstance(paused, HumanFeedbackPending) else 2
    flow_id = Path("flow_id").read_text()
    if phase == "approve":
        RefundFlow.from_pending(flow_id, persistence).resume("approved")
        return 0
    said = []
    try:
        final = RefundFlow.from_pending(flow_id, persistence).resume("approved")
    except ValueError as nothing_pending:
        said.append(f"from_pending: {nothing_pending}")
        final = RefundFlow(persistence=persistence).kickoff(restore_from_state_id=flow_id)
        if isinstance(final, HumanFeedbackPending):
            said.append("the restored flow asked for the approval again; passing it again")
            final = RefundFlow.from_pending(final.context.flow_id, persistence).resume("approved")
    print(json.dumps({"result": str(final), "said": said}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=("before-effect", "after-effect"), default="after-effect")
    parser.add_argument("--phase", choices=("start", "approve", "recover"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        return child(args.phase, args.point)

    def run(phase: str) -> subprocess.CompletedProcess:
        argv = [sys.executable, __file__, "--point", args.point, "--phase", phase]
        return subprocess.run(argv, capture_output=True, text=True, timeout=900)

    out = {"witness": NAME, "framework": "crewai", "version": importlib.metadata.version("crewai")}
    for stale in ("effects.db", "flow_states.db", "flow_id"):
        if os.path.exists(stale):  # a run starts from nothing: no counts or state of an earlier one
            os.remove(stale)
    effects()
    start = run("start")
    approve = run("approve") if start.returncode == 0 else None
    if approve is None or approve.returncode != -signal.SIGKILL:
        what = start.stderr[-300:] if approve is None else f"approve exit {approve.returncode}: {approve.stderr[-300:]}"
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"the approver was not SIGKILLed: {what}")
        print(json.dumps(out))
        return 2
    recover = run("recover")
    lines = [line for line in recover.stdout.splitlines() if line.startswith("{")]
    if recover.returncode != 0 or not lines:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"recover crashed: {recover.stderr[-300:]}")
        print(json.dumps(out))
        return 2
    seen = json.loads(lines[-1])
    refunds = effects()
    ok = refunds == 1
    out.update(
        verdict="PASS" if ok else "FAIL",
        counts={"refund": refunds},
        did=(
            f"paused on @human_feedback, approved with from_pending(...).resume() in a process SIGKILLed inside "
            f"the approved refund ({args.point}); recovery finished ({seen['result']!r}); {refunds} refund(s)"
        ),
        detail={"recover": seen["said"]},
    )
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
