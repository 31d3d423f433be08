"""A refund flow on CrewAI Flows with ``@persist`` (SQLite): the built-in `crewai` target.

    python -m plugpull.targets.crewai_refund [--key none|checkpointed] start|resume

A ``Flow`` with a structured state and class-level ``@persist(SQLiteFlowPersistence(...))`` in
$PLUGPULL_WORKDIR:

1. ``@start() draft_refund``: which order, how much, and a fresh request id (new on every call,
   as an LLM's answer would be), kept in the flow state. No outside action.
2. ``@listen(draft_refund) refund``: calls the payment provider, ``record_effect("refund", key=...)``.

``@persist`` saves the state after each method completes. start: ``kickoff(inputs={"id": ...})``;
resume: ``kickoff(restore_from_state_id=...)``, the documented way to hydrate a new run from the
latest saved state of an earlier one. With ``--key checkpointed`` the request id saved in the
state is the idempotency key: one refund only if the finished ``draft_refund`` is not run again.

CrewAI writes under the home directory (its storage dir, telemetry ids) and lock files in the
temp directory; everything it writes goes to $PLUGPULL_WORKDIR: HOME, CREWAI_STORAGE_DIR and
TMPDIR point there before crewai is imported,
and telemetry / tracing / the version check are off (no network).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path

from plugpull.client import WORKDIR_ENV, announce, record_effect, record_result  # plugpull

STATE_ID = "0c6f4a52-3a55-4c1e-9d0b-refund0a1001"
# Written when the run finishes: resume of a finished run reports it instead of restoring the flow.
FINISHED = "result.json"
_key_variant = "none"


def offline_home(workdir: Path) -> None:
    """Keep CrewAI's files in the run's workdir and off the network (set before importing crewai)."""
    os.environ["HOME"] = str(workdir)
    os.environ["CREWAI_STORAGE_DIR"] = str(workdir / "crewai-storage")
    os.environ["CREWAI_TRACING_ENABLED"] = "false"
    os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
    os.environ["CREWAI_DISABLE_VERSION_CHECK"] = "true"
    os.environ["OTEL_SDK_DISABLED"] = "true"
    # crewai_core.lock_store puts a file lock per SQLite persistence in tempfile.gettempdir():
    # one /tmp/crewai:<md5>.lock per run otherwise. Processes of one run share the workdir, so
    # they still share the lock.
    os.environ["TMPDIR"] = str(workdir)
    tempfile.tempdir = None  # gettempdir() caches its first answer; read TMPDIR again


def log(message: str) -> None:
    print(f"crewai_refund: {message}", file=sys.stderr, flush=True)


def build(workdir: Path):
    from crewai.flow.flow import Flow, listen, start
    from crewai.flow.persistence import SQLiteFlowPersistence, persist
    from pydantic import BaseModel

    class RefundState(BaseModel):
        id: str = STATE_ID
        order_id: str = "A-1001"
        cents: int = 1999
        request_id: str = ""
        receipt: str = ""

    @persist(SQLiteFlowPersistence(str(workdir / "flow_states.db")))
    class RefundFlow(Flow[RefundState]):
        @start()
        def draft_refund(self) -> str:
            self.state.request_id = f"rf_{uuid.uuid4().hex[:16]}"
            log(f"draft_refund ran: {self.state.request_id}")
            return self.state.request_id

        @listen(draft_refund)
        def refund(self) -> str:
            key = self.state.request_id if _key_variant == "checkpointed" else None
            log(f"refund runs with key {key}")
            record_effect("refund", key=key)  # plugpull: where the payment API call goes
            self.state.receipt = f"refunded {self.state.cents} cents on order {self.state.order_id}"
            return self.state.receipt

    return RefundFlow


def main(argv: list[str] | None = None) -> int:
    global _key_variant
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", choices=("none", "checkpointed"), default="none")
    parser.add_argument("phase", choices=("start", "resume"))
    args = parser.parse_args(argv)
    _key_variant = args.key
    workdir = Path(os.environ.get(WORKDIR_ENV, ".")).resolve()
    offline_home(workdir)
    announce(framework="crewai", version=importlib.metadata.version("crewai"))  # plugpull
    finished = workdir / FINISHED
    if args.phase == "resume" and finished.exists():
        # The recovery protocol's no-op (docs/agent-protocol.md): restoring a finished flow runs its @start
        # method again (this finding's claim), so the app remembers that the run ended and reports its result.
        log("resume: the run already finished: nothing to continue")
        final = json.loads(finished.read_text())["final"]
    else:
        flow = build(workdir)()
        if args.phase == "start":
            final = flow.kickoff(inputs={"id": STATE_ID})
        else:
            final = flow.kickoff(restore_from_state_id=STATE_ID)
        tmp = finished.with_suffix(".tmp")
        tmp.write_text(json.dumps({"final": final}))
        os.replace(tmp, finished)
    record_result({"answer": final})  # plugpull: the run's outcome, compared with the clean run's
    print(final, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
