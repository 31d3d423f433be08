"""A refund workflow on DBOS with its system database: the built-in `dbos` and `dbos-postgresql` targets.

    python -m plugpull.targets.dbos_refund [--key none|checkpointed] [--app-version same|changed]
                                           [--store sqlite|postgresql] [--recovery-wait SECONDS] start|resume

A ``@DBOS.workflow()`` with two ``@DBOS.step()``s; DBOS's system database is SQLite in
$PLUGPULL_WORKDIR (``--store sqlite``: ``system_database_url="sqlite:///..."``, no server), or this run's
own database on the PostgreSQL server in $PLUGPULL_POSTGRES_URL (``--store postgresql``, what DBOS runs on
in production; plugpull.postgres makes the database on start and the resume finds it by the same name):

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
        application version by itself, then waits for the workflow (``DBOS.retrieve_workflow(id)``,
        its status polled) up to RECOVERY_WAIT seconds (``--recovery-wait``; stderr says how long
        after launch it finished). A workflow still not finished then is
        reported on stderr with the version it was recorded under, and resume exits 0 without
        a result: the run did not finish, and nothing in this process will finish it.
``application_version`` is set explicitly: by default DBOS hashes the workflow source, and a
process whose code differs recovers nothing (docs: "Workflow recovery" / versioning).
``--app-version changed`` makes resume run under another version than start ("refunds-2", as after
a deploy of new code), to measure exactly that; the tool passes no key there.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
import time
import uuid
from pathlib import Path

from dbos import DBOS, SetWorkflowID

from plugpull.client import WORKDIR_ENV, announce, import_present, record_effect, record_result  # plugpull
from plugpull.postgres import PostgresUnavailable, run_database  # plugpull: this run's database on the test server

WORKFLOW_ID = "refund-A-1001"
APP_VERSION = "refunds-1"
CHANGED_APP_VERSION = "refunds-2"
# How long resume waits for the recovered workflow: recovery of this two-step workflow takes about a
# second after launch (DBOS 3.x re-enqueues it on its internal queue, run at the queue's next poll); a
# workflow DBOS did not recover never finishes, however long we wait.
RECOVERY_WAIT = 30.0
_key_variant = "none"
_step_retries = False
#: What DBOS imports only once it launches, by store: the system database's module for its URL and SQLAlchemy's
#: SQLite dialect (dbos/_sys_db.py imports both inside functions; the PostgreSQL store loads that dialect too), and
#: for SQLite its driver: measured in forked phases of dbos 3.4.
RUN_IMPORTS = {
    "sqlite": ("sqlalchemy.dialects.sqlite", "sqlite3", "dbos._sys_db_sqlite"),
    "postgresql": ("sqlalchemy.dialects.sqlite", "dbos._sys_db_postgres"),
}


def log(message: str) -> None:
    print(f"dbos_refund: {message}", file=sys.stderr, flush=True)


@DBOS.step()
def draft_refund(order_id: str) -> dict:
    """Which order, how much, and a fresh request id (new on every call)."""
    draft = {"order_id": order_id, "cents": 1999, "request_id": f"rf_{uuid.uuid4().hex[:16]}"}
    log(f"draft_refund ran: {draft['request_id']}")
    return draft


def call_provider(draft: dict) -> str:
    key = draft["request_id"] if _key_variant == "checkpointed" else None
    log(f"refund step runs with key {key}")
    record_effect("refund", key=key)  # plugpull: where the payment API call goes
    return f"refunded {draft['cents']} cents on order {draft['order_id']} ({draft['request_id']})"


@DBOS.step()
def refund(draft: dict) -> str:
    return call_provider(draft)


# --step-retries: DBOS's own step retries (a step that raises runs again, up to max_attempts), a short interval.
@DBOS.step(retries_allowed=True, interval_seconds=0.05, max_attempts=3, backoff_rate=1.0)
def refund_with_retries(draft: dict) -> str:
    return call_provider(draft)


@DBOS.workflow()
def refund_workflow(order_id: str) -> str:
    log(f"workflow body runs ({DBOS.workflow_id})")
    draft = draft_refund(order_id)
    return (refund_with_retries if _step_retries else refund)(draft)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", choices=("none", "checkpointed"), default="none")
    parser.add_argument("--app-version", choices=("same", "changed"), default="same")
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--step-retries", action="store_true", help="the refund step retries a raise (DBOS retries)")
    parser.add_argument("--recovery-wait", type=float, default=RECOVERY_WAIT, metavar="SECONDS")
    parser.add_argument("phase", choices=("start", "resume"))
    args = parser.parse_args(argv)
    if args.recovery_wait < 0:
        parser.error(f"--recovery-wait {args.recovery_wait:g}: seconds cannot be negative")
    return args


def main(argv: list[str] | None = None) -> int:
    global _key_variant, _step_retries
    args = parse(argv)
    _key_variant, _step_retries = args.key, args.step_retries
    announce(framework="dbos", version=importlib.metadata.version("dbos"))  # plugpull
    workdir = Path(os.environ.get(WORKDIR_ENV, ".")).resolve()
    version = CHANGED_APP_VERSION if args.phase == "resume" and args.app_version == "changed" else APP_VERSION
    if args.store == "postgresql":
        try:
            database_url = run_database(workdir, create=args.phase == "start")
        except PostgresUnavailable as error:
            log(f"no PostgreSQL: {error}")
            return 2
    else:
        database_url = f"sqlite:///{workdir / 'dbos.sqlite'}"
    DBOS(
        config={
            "name": "plugpull-refunds",
            "system_database_url": database_url,
            "application_version": version,
        }
    )
    try:
        DBOS.launch()
        launched = time.monotonic()
        if args.phase == "start":
            with SetWorkflowID(WORKFLOW_ID):
                final = refund_workflow("A-1001")
        else:
            handle = DBOS.retrieve_workflow(WORKFLOW_ID)
            status = handle.get_status()
            log(
                f"resume: workflow {WORKFLOW_ID} is {status.status} after launch (recorded under version "
                f"{status.app_version}; this process runs {version})"
            )
            deadline = launched + args.recovery_wait
            while status.status in ("PENDING", "ENQUEUED") and time.monotonic() < deadline:
                time.sleep(0.05)
                status = handle.get_status()
            if status.status in ("PENDING", "ENQUEUED"):
                log(
                    f"resume: workflow {WORKFLOW_ID} is still {status.status} after {args.recovery_wait:g}s: "
                    f"not recovered (recorded under version {status.app_version}; this process runs {version})"
                )
                return 0
            log(f"resume: workflow {WORKFLOW_ID} is {status.status} {time.monotonic() - launched:.2f}s after launch")
            final = handle.get_result()
    finally:
        DBOS.destroy()
    # The request id is drawn per run by design (the target ignores it: Target.result_ignore).
    answer, _, request_id = final.rpartition(" (")
    record_result({"answer": answer, "request_id": request_id.rstrip(")")})  # plugpull: the run's outcome
    print(final, flush=True)
    return 0


def plugpull_prefork(argv: list[str]) -> None:  # plugpull (optional): what --fork-server imports once
    """Import what DBOS imports once it launches (``RUN_IMPORTS`` of the phase's store) in plugpull's fork server,
    once, instead of in every forked phase.

    Only imports: no database is opened and no thread started (DBOS does both in ``launch``, in the phase). A module
    a release does not have is skipped. Returns None: the forked phase runs this module as ``__main__``
    (docs/DECISIONS.md, "Throughput").
    """
    import_present(*RUN_IMPORTS[parse(argv).store])


if __name__ == "__main__":
    sys.exit(main())
