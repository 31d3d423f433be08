"""A refund workflow on LangGraph's functional API: the built-in `langgraph-functional` target.

    python -m plugpull.targets.langgraph_functional [--key none|checkpointed] [--durability D] start|resume

An ``@entrypoint`` with two ``@task``s and a real SqliteSaver in $PLUGPULL_WORKDIR:

1. ``draft_refund``: a scripted, offline "model" reads the customer's message and drafts the
   refund (order, amount) with a new request id, as an LLM call would give a new answer each time.
2. ``refund``: calls the payment provider, ``record_effect("refund", key=...)``.

LangGraph docs (Functional API, "Resuming after an error" and "Idempotency"): a task that finished
is not run again on resume, its saved result is used; the task that was interrupted runs again
from its start; the entrypoint body runs again. So with ``--key none`` a kill after the provider
recorded the refund refunds twice, and with ``--key checkpointed`` (the request id drawn in the
finished task is the idempotency key) the resumed run reuses the saved draft and its key, so the
provider sees one refund, but only if the finished task really is replayed from the checkpoint.

start: ``workflow.invoke(message, config)``; resume: ``workflow.invoke(None, config)``, the
documented way to continue a thread from its last checkpoint (or the message again when the thread has
no checkpoint yet: ``invoke(None)`` raises EmptyInputError there). The final answer is printed last.

A finished task's result is saved by ``put_writes``, which LangGraph submits to a background executor
whatever the durability (langgraph/pregel/_loop.py, ``put_writes``), while the next task already runs:
whether the draft is on disk when the refund is killed is a race. The checkpointer marks its writes
(MarkedSqliteSaver, as in plugpull.targets.langgraph_refund: "pending-writes 1" is the draft's, the first
task to finish), so kill-mid-tool can hold that write back or wait for it (the target's ``draft`` option).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sqlite3
import sys
import uuid
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.func import entrypoint, task

from plugpull.client import WORKDIR_ENV, announce, boundary, record_effect, record_result  # plugpull

THREAD = {"configurable": {"thread_id": "refund-A-1001"}}
MESSAGE = "Please refund order A-1001, 19.99 USD."
_key_variant = "none"


def log(message: str) -> None:
    print(f"langgraph_functional: {message}", file=sys.stderr, flush=True)


@task
def draft_refund(message: str) -> dict:
    """The scripted model: which order, how much, and a fresh request id (new on every call)."""
    draft = {"order_id": "A-1001", "cents": 1999, "request_id": f"rf_{uuid.uuid4().hex[:16]}"}
    log(f"draft_refund ran: {draft['request_id']}")
    return draft


@task
def refund(draft: dict) -> str:
    key = draft["request_id"] if _key_variant == "checkpointed" else None
    log(f"refund task runs with key {key}")
    record_effect("refund", key=key)  # plugpull: where the payment API call goes
    return f"refunded {draft['cents']} cents on order {draft['order_id']} ({draft['request_id']})"


class MarkedSqliteSaver(SqliteSaver):
    """LangGraph's SqliteSaver with each write marked as a boundary (it still does the saving).

    The example's saver (plugpull.targets.langgraph_refund) is not imported: that module imports
    langgraph.prebuilt, which a functional-API app does not need and which some locks cannot import
    (langgraph 1.0.10 with langgraph-prebuilt 1.0.13: ``ExecutionInfo`` missing from langgraph.runtime).
    """

    def put(self, config, checkpoint, metadata, new_versions):
        with boundary("checkpoint-save"):  # plugpull
            return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config, writes, task_id, task_path=""):
        with boundary("pending-writes"):  # plugpull
            return super().put_writes(config, writes, task_id, task_path)


def build(checkpointer: SqliteSaver):
    @entrypoint(checkpointer=checkpointer)
    def refund_workflow(message: str) -> str:
        log("entrypoint body runs")
        draft = draft_refund(message).result()
        return refund(draft).result()

    return refund_workflow


def main(argv: list[str] | None = None) -> int:
    global _key_variant
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", choices=("none", "checkpointed"), default="none")
    parser.add_argument("--durability", choices=("sync", "async", "exit"), default="sync")
    parser.add_argument("phase", choices=("start", "resume"))
    args = parser.parse_args(argv)
    _key_variant = args.key
    announce(framework="langgraph", version=importlib.metadata.version("langgraph"))  # plugpull
    workdir = Path(os.environ.get(WORKDIR_ENV, "."))
    conn = sqlite3.connect(workdir / "checkpoints.sqlite", check_same_thread=False)
    checkpointer = MarkedSqliteSaver(conn)
    workflow = build(checkpointer)
    # Resume continues the thread; with nothing saved yet, the run starts over from its message.
    payload = MESSAGE if args.phase == "start" or checkpointer.get_tuple(THREAD) is None else None
    final = workflow.invoke(payload, THREAD, durability=args.durability)
    # The request id is drawn per run by design (the target ignores it: Target.result_ignore).
    answer, _, request_id = final.rpartition(" (")
    record_result({"answer": answer, "request_id": request_id.rstrip(")")})  # plugpull: the run's outcome
    print(final, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
