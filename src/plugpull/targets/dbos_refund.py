"""A refund workflow on DBOS with its SQLite system database: the built-in `dbos` target.

    python -m plugpull.targets.dbos_refund [--key none|checkpointed] start|resume

A ``@DBOS.workflow()`` with two ``@DBOS.step()``s; DBOS's system database is SQLite in
$PLUGPULL_WORKDIR (``system_database_url="sqlite:///..."``, no server):

1. ``draft_refund``: which order, how much, and a fresh request id (new on every call, as an
   LLM's answer would be). No outside action.
2. ``refund``: calls the payment provider, ``record_effect("refund", key=...)``.

DBOS docs (Workflows, "Reliability guarantees"): a workflow interrupted by a crash is recovered
from its last completed step; the steps it completed are not run again, their saved outputs are
used; the step in flight runs again, so steps run at least once. With ``--key none`` a kill after
the provider recorded the refund refunds twice; with ``--key checkpointed`` the request id drawn in
the finished step is the idempotency key, so the provider sees one refund, but only if that step's
output really is replayed from the system database.

start:  ``DBOS.launch()``, then the workflow under ``SetWorkflowID`` (one id per refund).
resume: ``DBOS.launch()``, which recovers this executor's pending workflows of the same
        application version by itself, then ``DBOS.retrieve_workflow(id).get_result()``.
``application_version`` is set explicitly: by default DBOS hashes the workflow source, and a
process whose code differs recovers nothing (docs: "Workflow recovery" / versioning).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
import uuid
from pathlib import Path

from dbos import DBOS, SetWorkflowID

from plugpull.client import WORKDIR_ENV, announce, record_effect, record_result  # plugpull

WORKFLOW_ID = "refund-A-1001"
APP_VERSION = "refunds-1"
_key_variant = "none"


def log(message: str) -> None:
    print(f"dbos_refund: {message}", file=sys.stderr, flush=True)


@DBOS.step()
def draft_refund(order_id: str) -> dict:
    """Which order, how much, and a fresh request id (new on every call)."""
    draft = {"order_id": order_id, "cents": 1999, "request_id": f"rf_{uuid.uuid4().hex[:16]}"}
    log(f"draft_refund ran: {draft['request_id']}")
    return draft


@DBOS.step()
def refund(draft: dict) -> str:
    key = draft["request_id"] if _key_variant == "checkpointed" else None
    log(f"refund step runs with key {key}")
    record_effect("refund", key=key)  # plugpull: where the payment API call goes
    return f"refunded {draft['cents']} cents on order {draft['order_id']} ({draft['request_id']})"


@DBOS.workflow()
def refund_workflow(order_id: str) -> str:
    log(f"workflow body runs ({DBOS.workflow_id})")
    draft = draft_refund(order_id)
    return refund(draft)


def main(argv: list[str] | None = None) -> int:
    global _key_variant
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", choices=("none", "checkpointed"), default="none")
    parser.add_argument("phase", choices=("start", "resume"))
    args = parser.parse_args(argv)
    _key_variant = args.key
    announce(framework="dbos", version=importlib.metadata.version("dbos"))  # plugpull
    workdir = Path(os.environ.get(WORKDIR_ENV, ".")).resolve()
    DBOS(
        config={
            "name": "plugpull-refunds",
            "system_database_url": f"sqlite:///{workdir / 'dbos.sqlite'}",
            "application_version": APP_VERSION,
        }
    )
    try:
        DBOS.launch()
        if args.phase == "start":
            with SetWorkflowID(WORKFLOW_ID):
                final = refund_workflow("A-1001")
        else:
            handle = DBOS.retrieve_workflow(WORKFLOW_ID)
            log(f"resume: workflow {WORKFLOW_ID} is {handle.get_status().status} after launch")
            final = handle.get_result()
    finally:
        DBOS.destroy()
    # The request id is drawn per run by design (the target ignores it: Target.result_ignore).
    answer, _, request_id = final.rpartition(" (")
    record_result({"answer": answer, "request_id": request_id.rstrip(")")})  # plugpull: the run's outcome
    print(final, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
