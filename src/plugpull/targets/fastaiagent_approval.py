"""A FastAIAgent refund agent whose tool asks for approval: the built-in `fastaiagent` and `fastaiagent-postgresql` targets.

    python -m plugpull.targets.fastaiagent_approval [--store sqlite|postgresql] start|approve|recover

A real ``Agent(checkpointer=SQLiteCheckpointer())`` whose store is
$PLUGPULL_WORKDIR/local.db (FASTAIAGENT_LOCAL_DB), or with ``--store postgresql`` a real
``PostgresCheckpointer`` on this run's own database on the server in $PLUGPULL_POSTGRES_URL (plugpull.postgres
makes it on start; the approvers and recover find it by the same name), whose claim of a pending approval is one
``DELETE ... RETURNING`` ("Postgres MVCC guarantees only one of N concurrent resumers wins", its module
docstring), an offline ``fastaiagent.testing.FunctionModel``
that decides from the conversation, and a refund tool that calls ``interrupt()`` and, once
approved, ``record_effect("refund")`` with no key (the framework's own behaviour shows).

What FastAIAgent documents (``Agent.aresume`` docstring, fastaiagent 1.94.0): resuming an
interrupted run with ``resume_value=Resume(...)`` "atomically claims" the pending row, and
"concurrent resumers / second clicks of Approve see AlreadyResumed"; a crash at a tool
boundary is resumed with ``resume(execution_id)`` and the saved tool is re-invoked.

start:   ``agent.run(...)`` pauses; the execution id goes to $PLUGPULL_WORKDIR/execution_id.
approve: ``agent.resume(id, resume_value=Resume(approved=True))``; ``AlreadyResumed`` exits 3.
recover: first reads the store (``Checkpointer.get_last``): when the newest row is a ``completed``
         run-end marker the run already finished before the crash, and a correct app reads its
         result instead of resuming it (FastAIAgent refuses that resume by contract: "A `completed`
         marker refuses a resume with `AlreadyResumed`: there is nothing to continue, and
         continuing would re-fire every side effect", docs/durability/durability-boundaries.md).
         Otherwise crash recovery as documented, ``agent.resume(id)``; when the framework answers
         that the run is suspended on ``interrupt()`` and asks for a ``Resume``, the approval the
         human gave is passed again. Exit 0 when the run finished, 4 when every public way
         was refused (the last stderr line names what the framework said).

The run's result (``record_result``) is what FastAIAgent keeps of a run in its store: its status and
the outputs of the tools in the saved conversation. The model's closing sentence is not kept: the
run-end marker carries the conversation as the last step saved it, before the final model call
(``write_run_end`` copies the last checkpoint's snapshot), so an app that lost its process after the
run finished cannot read it, and the result compares what it can.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from plugpull.client import (
    PAUSED_AGAIN_EXIT,
    WORKDIR_ENV,
    announce,
    boundary,
    gate,
    import_present,
    record_effect,
    record_result,
)

REFUSED, STUCK = 3, 4
ORDER = "A-1001"
#: What every phase imports after ``import fastaiagent`` before it resumes anything (measured in forked phases of
#: fastaiagent 1.94.0: the platform push and PostgreSQL checkpointer modules the agent and its store check for; the
#: PostgreSQL store also reads its migrations as package resources). What a run imports once it runs (tracing
#: export, governance, provenance: ~0.02 s of a start) stays in the phase: racing approvers import it after
#: ``gate()``, as cold ones do, so the racing line (a timing line: a loser may find SQLite's write lock held) keeps
#: the window a cold race has.
RUN_IMPORTS = ("fastaiagent._platform.push", "fastaiagent.checkpointers.postgres")
POSTGRESQL_RUN_IMPORTS = ("fastaiagent.checkpointers.migrations", "importlib.readers")


def log(message: str) -> None:
    print(f"fastaiagent_approval: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    store_kind = "sqlite"
    if len(argv) == 3 and argv[0] == "--store" and argv[1] in ("sqlite", "postgresql"):
        store_kind, argv = argv[1], argv[2:]
    if len(argv) != 1 or argv[0] not in ("start", "approve", "recover"):
        print(
            "usage: python -m plugpull.targets.fastaiagent_approval [--store sqlite|postgresql] {start,approve,recover}",
            file=sys.stderr,
        )
        return 2
    phase = argv[0]
    workdir = Path(os.environ.get(WORKDIR_ENV, "."))
    database_url = None
    if store_kind == "postgresql":
        from plugpull.postgres import PostgresUnavailable, run_database

        try:
            database_url = run_database(workdir.resolve(), create=phase == "start")
        except PostgresUnavailable as error:
            log(f"no PostgreSQL: {error}")
            return 2
    # The framework's store (checkpoints, pending interrupts, traces) lives in the workdir.
    # Set before the import: FastAIAgent reads it into its config.
    os.environ["FASTAIAGENT_LOCAL_DB"] = str(workdir / "local.db")
    # FastAIAgent also writes ./.fastaiagent/config.toml (its project id) in the working
    # directory on first use; run there so nothing lands outside the workdir.
    os.chdir(workdir)

    import importlib.metadata

    from fastaiagent import Agent, AlreadyResumed, Resume, SQLiteCheckpointer, interrupt, tool
    from fastaiagent._internal.errors import ChainCheckpointError
    from fastaiagent.checkpointers import PostgresCheckpointer
    from fastaiagent.testing import FunctionModel

    announce(framework="fastaiagent", version=importlib.metadata.version("fastaiagent"))

    def responder(messages):
        with boundary("model-call"):  # plugpull: a step a crash can land next to
            return reply(messages)

    def reply(messages):
        # Ask for the refund until the conversation holds the tool's result, like a real LLM.
        if any(str(getattr(m, "role", "")).endswith("tool") for m in messages):
            return f"Refund for order {ORDER} is done."
        return "", [{"name": "refund", "arguments": {"order_id": ORDER}}]

    @tool
    def refund(order_id: str) -> str:
        """Refund an order at the payment provider, once a human approves."""
        answer = interrupt("refund needs approval", {"order_id": order_id})
        if not answer.approved:
            return f"refund of {order_id} rejected"
        record_effect("refund")  # plugpull: the side effect, after the approval
        return f"refunded order {order_id}"

    class MarkedCheckpointer(PostgresCheckpointer if database_url else SQLiteCheckpointer):
        """FastAIAgent's own checkpointer, each checkpoint write marked as a boundary (every-boundary)."""

        def put(self, checkpoint):
            with boundary("checkpoint-save"):  # plugpull
                return super().put(checkpoint)

        def put_writes(self, execution_id, checkpoint_id, writes):
            with boundary("pending-writes"):  # plugpull
                return super().put_writes(execution_id, checkpoint_id, writes)

    store = MarkedCheckpointer(database_url) if database_url else MarkedCheckpointer()
    agent = Agent(name="refunds", llm=FunctionModel(responder), tools=[refund], checkpointer=store)
    id_file = workdir / "execution_id"

    if phase == "start":
        result = agent.run(f"Please refund order {ORDER}.")
        if result.status != "paused":
            log(f"start did not pause for approval (status {result.status})")
            return 1
        id_file.write_text(result.execution_id)
        log(f"paused for approval: {result.pending_interrupt}")
        return 0
    execution_id = id_file.read_text()
    if phase == "approve":
        gate()  # plugpull: racing approvers are released together here
        try:
            result = agent.resume(execution_id, resume_value=Resume(approved=True))
        except AlreadyResumed as exc:
            log(f"AlreadyResumed: {exc}")
            return REFUSED
        return finished(result)
    # recover
    newest = store.get_last(execution_id)
    if newest is not None and newest.step_type == "run_end" and newest.status == "completed":
        # The run finished before the crash: its run-end marker is the newest row. Read its result.
        log("the run already finished (its newest row is a completed run-end marker): reading its result")
        messages = newest.state_snapshot.get("messages", [])
        record_result({"status": "completed", "tool_results": tool_results(messages)})  # plugpull
        return 0
    try:
        result = agent.resume(execution_id)
    except ChainCheckpointError as plain:
        log(f"resume(id) raised {type(plain).__name__}: {plain}")
        try:
            result = agent.resume(execution_id, resume_value=Resume(approved=True))
        except AlreadyResumed as again:
            log(f"resume(id, Resume(approved=True)) raised AlreadyResumed: {again}")
            log(f"{type(plain).__name__} without Resume; AlreadyResumed with Resume(approved=True)")
            return STUCK
    except AlreadyResumed as exc:
        log(f"AlreadyResumed: {exc}")
        return STUCK
    return finished(result)


def plugpull_prefork(argv: list[str]) -> None:  # plugpull (optional): what --fork-server imports once
    """Import FastAIAgent, what every phase imports before it resumes anything (``RUN_IMPORTS``) and for
    ``--store postgresql`` its PostgreSQL driver, in plugpull's fork server, once, instead of in every forked phase
    (0.8 s of CPU here).

    ``main`` imports it only after pointing FASTAIAGENT_LOCAL_DB at the phase's workdir and moving there. The
    import itself reads neither (``get_config()`` is an ``lru_cache`` filled on first use, in the phase), writes
    nothing and starts no thread; the cache is cleared anyway, so the phase reads its own environment. Returns
    None: the forked phase runs this module as ``__main__``, as a cold one does (docs/DECISIONS.md, "Throughput").
    """
    import fastaiagent  # noqa: F401
    import fastaiagent.checkpointers  # noqa: F401
    import fastaiagent.testing  # noqa: F401
    from fastaiagent._internal.config import reset_config

    import_present(*RUN_IMPORTS)  # they read no configuration on import either (checked)

    reset_config()
    if argv[:2] == ["--store", "postgresql"]:
        # PostgresCheckpointer imports its driver and pool only when built (fastaiagent/checkpointers/postgres.py):
        # 0.11 s of a forked phase's CPU here, and main imports plugpull.postgres (its database) for this store only.
        # An import opens no connection; a missing driver is the phase's own error to report.
        import_present("plugpull.postgres", "psycopg", "psycopg.types.json", "psycopg_pool", *POSTGRESQL_RUN_IMPORTS)
    return None


def tool_results(messages) -> list[str]:
    """The tools' outputs in a conversation: Message objects (a result) or their saved dicts (the store)."""

    def field(m, name):
        return m.get(name) if isinstance(m, dict) else getattr(m, name, None)

    return [str(field(m, "content")) for m in messages if str(field(m, "role")).endswith("tool")]


def finished(result) -> int:
    """Report a completed run's outcome (its status and its tools' outputs); exit 0 only then."""
    log(f"{result.status}: {result.output}")
    if result.status == "paused":  # suspended on interrupt() again: the approval did not reach the tool
        return PAUSED_AGAIN_EXIT
    if result.status != "completed":
        return 1
    record_result({"status": result.status, "tool_results": tool_results(result.messages)})  # plugpull
    return 0


if __name__ == "__main__":
    sys.exit(main())
