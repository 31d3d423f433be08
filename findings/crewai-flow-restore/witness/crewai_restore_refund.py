"""CrewAI: a @persist flow SIGKILLed inside its refund listener, restored with restore_from_state_id.

    python crewai_restore_refund.py --point before-effect|after-effect [--key none|checkpointed]

Needs only crewai. A Flow with class-level @persist(SQLiteFlowPersistence): @start() draft_refund draws a
request id into the state (new on every call, as an LLM's answer would be); @listen(draft_refund) refund
refunds (a row in effects.db, keyed by that request id with --key checkpointed: one row per key, like a
payment API). Child process 1 kicks the flow off and SIGKILLs itself inside refund, before or after the
row. Child 2 continues it the supported way, kickoff(restore_from_state_id=...). CrewAI's docs
(https://docs.crewai.com/en/guides/flows/inputs-id-deprecation): "restore_from_state_id=<uuid> — fork:
hydrates state from the snapshot, then writes under a fresh state.id", for "re-running a flow seeded
from a previous state". Everything CrewAI writes stays in the working directory; telemetry is off.

Exit 0: one refund after the restore; 1: two (the flow ran again from @start); 2: the kill did not land.
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
import uuid

NAME = "crewai_restore_refund"
STATE_ID = "0c6f4a52-3a55-4c1e-9d0b-refund0a1001"


def effects() -> int:
    with sqlite3.connect("effects.db") as db:
        db.execute("create table if not exists effects (name text, key text unique)")
        return db.execute("select count(*) from effects where name = 'refund'").fetchone()[0]


def offline_here() -> None:
    here = os.path.abspath(".")
    os.environ.update(HOME=here, CREWAI_STORAGE_DIR=os.path.join(here, "crewai-storage"), TMPDIR=here)
    os.environ.update(CREWAI_TRACING_ENABLED="false", CREWAI_DISABLE_TELEMETRY="true")
    os.environ.update(CREWAI_DISABLE_VERSION_CHECK="true", OTEL_SDK_DISABLED="true")
    tempfile.tempdir = None


def child(phase: str, point: str, key: str) -> int:
    offline_here()
    from crewai.flow.flow import Flow, listen, start
    from crewai.flow.persistence import SQLiteFlowPersistence, persist
    from pydantic import BaseModel

    class RefundState(BaseModel):
        id: str = STATE_ID
        request_id: str = ""

    @persist(SQLiteFlowPersistence(os.path.abspath("flow_states.db")))
    class RefundFlow(Flow[RefundState]):
        @start()
        def draft_refund(self) -> str:
            self.state.request_id = f"rf_{uuid.uuid4().hex[:16]}"
            return self.state.request_id

        @listen(draft_refund)
        def refund(self) -> str:
            if phase == "start" and point == "before-effect":
                os.kill(os.getpid(), signal.SIGKILL)
            with sqlite3.connect("effects.db") as db:  # the payment API: one refund per key
                db.execute(
                    "insert or ignore into effects values ('refund', ?)",
                    (self.state.request_id if key == "checkpointed" else uuid.uuid4().hex,),
                )
            if phase == "start" and point == "after-effect":
                os.kill(os.getpid(), signal.SIGKILL)
            return f"refunded order A-1001 ({self.state.request_id})"

    flow = RefundFlow()
    if phase == "start":
        flow.kickoff(inputs={"id": STATE_ID})
        return 0
    print(json.dumps({"result": flow.kickoff(restore_from_state_id=STATE_ID)}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=("before-effect", "after-effect"), default="after-effect")
    parser.add_argument("--key", choices=("none", "checkpointed"), default="none")
    parser.add_argument("--phase", choices=("start", "restore"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        return child(args.phase, args.point, args.key)

    def run(phase: str) -> subprocess.CompletedProcess:
        argv = [sys.executable, __file__, "--point", args.point, "--key", args.key, "--phase", phase]
        return subprocess.run(argv, capture_output=True, text=True, timeout=900)

    out = {"witness": NAME, "framework": "crewai", "version": importlib.metadata.version("crewai")}
    for stale in ("effects.db", "dbos.sqlite", "local.db", "flow_states.db", "execution_id", "go"):
        if os.path.exists(stale):  # a run starts from nothing: no counts or state of an earlier one
            os.remove(stale)
    effects()
    start = run("start")
    if start.returncode != -signal.SIGKILL:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"start was not SIGKILLed: {start.stderr[-300:]}")
        print(json.dumps(out))
        return 2
    restore = run("restore")
    lines = [line for line in restore.stdout.splitlines() if line.startswith("{")]
    if restore.returncode != 0 or not lines:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"restore crashed: {restore.stderr[-300:]}")
        print(json.dumps(out))
        return 2
    refunds = effects()
    ok = refunds == 1
    out.update(
        verdict="PASS" if ok else "FAIL",
        counts={"refund": refunds},
        did=(
            f"@persist flow SIGKILLed inside its refund listener ({args.point}, key={args.key}); "
            f"kickoff(restore_from_state_id=...) in a new process finished ({json.loads(lines[-1])['result']!r}); "
            f"{refunds} refund(s)"
        ),
    )
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
