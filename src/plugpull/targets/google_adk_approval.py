"""A Google ADK refund agent whose tool needs a human's confirmation: the built-in `google-adk-approval` target.

    python -m plugpull.targets.google_adk_approval [--session sqlite|database|postgresql] [--db-url URL] start|approve|recover

The agent of the `google-adk` target (plugpull.targets.google_adk_support: scripted offline model,
resumable ``App``) with the refund tool wrapped in ``FunctionTool(refund, require_confirmation=True)``,
ADK's tool confirmation: the tool call is answered with an ``adk_request_confirmation`` function call
and the invocation pauses; the app answers that call with a ``FunctionResponse`` ``{"confirmed": true}``
and ADK runs the tool.
The tool calls ``record_effect("refund")`` with no key, so ADK's own behaviour shows.

The session store (``--session``): ``sqlite``, ``SqliteSessionService`` in $PLUGPULL_WORKDIR; or
``database``, ``DatabaseSessionService`` on ``--db-url`` (default: sqlite+aiosqlite in $PLUGPULL_WORKDIR;
any SQLAlchemy async URL); or ``postgresql``, ``DatabaseSessionService`` on this run's own database on the
PostgreSQL server in $PLUGPULL_POSTGRES_URL, with asyncpg, the async driver ADK names for PostgreSQL
(plugpull.postgres makes the database on start; the approvers and recover find it by the same name). On
PostgreSQL, unlike SQLite, ``append_event`` locks the session row (``SELECT ... FOR UPDATE``).

start:   ``run_async(new_message=...)`` until the confirmation request; exits 0 with it pending.
approve: from the session store alone: find the pending ``adk_request_confirmation`` call and
         send its confirmation with ``run_async(invocation_id=..., new_message=...)``. An approver
         whose append loses the session's optimistic concurrency check (``StaleSessionError``, "Raised
         when a session write loses an optimistic concurrency race"; on 1.x a ValueError from the same
         check) was told that another writer got there first: it exits 3, the refusal.
recover: what an app does after a crash, with the public API only: resume the session's last
         invocation with ``run_async(invocation_id=...)`` (ResumabilityConfig: at-least-once).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools import FunctionTool
from google.genai import types

from plugpull.client import (
    PAUSED_AGAIN_EXIT,
    WORKDIR_ENV,
    announce,
    gate,
    import_present,
    record_effect,
    record_result,
)
from plugpull.postgres import PostgresUnavailable, run_database
from plugpull.targets.google_adk_support import (
    APP_NAME,
    SESSION_ID,
    USER_ID,
    build_runner,
    drain,
    preimport,
    request,
)

CONFIRMATION = "adk_request_confirmation"
#: ``COMMAND approve`` exits with this when the framework refused the approval (checks/resume_after_approval.py).
REFUSED_EXIT = 3


def log(message: str) -> None:
    print(f"google_adk_approval: {message}", file=sys.stderr, flush=True)


def refund(order_id: str, cents: int) -> dict:
    """Refund an order at the payment provider (runs only once a human confirmed it)."""
    record_effect("refund")  # plugpull: the side effect, after the confirmation
    return {"status": f"refunded {cents} cents on order {order_id}"}


def session_service(session: str, workdir: Path, db_url: str | None, phase: str = "start") -> BaseSessionService:
    if session == "sqlite":
        return SqliteSessionService(str(workdir / "sessions.sqlite"))
    if session == "postgresql":
        db_url = run_database(workdir, create=phase == "start", driver="asyncpg")
    # DatabaseSessionService needs SQLAlchemy's asyncio support: google-adk[db] on 2.x (1.x depends on
    # sqlalchemy itself); imported here so the sqlite store works without it.
    from google.adk.sessions.database_session_service import DatabaseSessionService

    return DatabaseSessionService(db_url or f"sqlite+aiosqlite:///{workdir / 'sessions.db'}")


def lost_the_race(error: Exception) -> bool:
    """The session store's optimistic concurrency check failed this writer: another one appended first.

    2.x raises StaleSessionError (a ValueError "for backward compatibility with existing callers");
    1.x raises a plain ValueError from the same check, SqliteSessionService's saying "stale session",
    DatabaseSessionService's "modified in storage since it was loaded".
    """
    text = str(error)
    return type(error).__name__ == "StaleSessionError" or (
        type(error) is ValueError and ("stale session" in text or "modified in storage since it was loaded" in text)
    )


def build(
    workdir: Path, session: str = "sqlite", db_url: str | None = None, phase: str = "start"
) -> tuple[Runner, BaseSessionService]:
    sessions = session_service(session, workdir, db_url, phase)
    return build_runner(FunctionTool(refund, require_confirmation=True), sessions), sessions


def pending_confirmation(session: Any) -> tuple[str, str] | None:
    """(function call id, invocation id) of the last confirmation request no event answered yet."""
    answered = {r.id for e in session.events for r in e.get_function_responses() if r.name == CONFIRMATION}
    pending = None
    for event in session.events:
        for call in event.get_function_calls():
            if call.name == CONFIRMATION and call.id not in answered:
                pending = (call.id, event.invocation_id)
    return pending


async def run(phase: str, workdir: Path, session_kind: str = "sqlite", db_url: str | None = None) -> int:
    try:
        runner, sessions = build(workdir, session_kind, db_url, phase)
    except PostgresUnavailable as error:
        log(f"no PostgreSQL: {error}")
        return 2
    if phase == "start":
        await sessions.create_session(app_name=APP_NAME, user_id=USER_ID, session_id=SESSION_ID)
        await drain(runner, new_message=request())
        session = await sessions.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=SESSION_ID)
        if pending_confirmation(session) is None:
            log("start did not pause for a confirmation")
            return 1
        log(f"paused for confirmation: {pending_confirmation(session)}")
        return 0
    session = await sessions.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=SESSION_ID)
    if session is None or not session.events:
        log(f"no saved session {SESSION_ID} in {workdir}")
        return 2
    pending = pending_confirmation(session)
    if phase == "approve":
        if pending is None:
            # Nothing left to confirm in the store. ADK has no refusal to map to exit 3; a user's
            # app would send the confirmation of the last request again, which is what we do.
            calls = [c for e in session.events for c in e.get_function_calls() if c.name == CONFIRMATION]
            if not calls:
                log("no confirmation request in the session")
                return 1
            call_id = calls[-1].id
            invocation_id = [e for e in session.events if any(c.id == call_id for c in e.get_function_calls())][
                -1
            ].invocation_id
            log(f"the confirmation {call_id} was already answered; sending it again")
        else:
            call_id, invocation_id = pending
        answer = types.FunctionResponse(id=call_id, name=CONFIRMATION, response={"confirmed": True})
        gate()  # plugpull: racing approvers are released together here
        try:
            final = await drain(
                runner,
                invocation_id=invocation_id,
                new_message=types.Content(role="user", parts=[types.Part(function_response=answer)]),
            )
        except ValueError as error:
            if not lost_the_race(error):
                raise
            log(f"refused: another writer appended to the session first ({type(error).__name__}: {error})")
            return REFUSED_EXIT
    else:
        invocation_id = session.events[-1].invocation_id
        log(f"recover: resuming invocation {invocation_id} after {len(session.events)} saved events")
        final = await drain(runner, invocation_id=invocation_id)
    after = await sessions.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=SESSION_ID)
    again = pending_confirmation(after) if after is not None else None
    if again is not None:  # the run stopped at a confirmation request (the same or a new one), not at its end
        log(f"paused again: confirmation {again[0]} pending")
        return PAUSED_AGAIN_EXIT  # plugpull: docs/agent-protocol.md
    log(f"done: {final}")
    record_result({"answer": final})  # plugpull: the run's outcome, compared with the clean approval's
    return 0


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session", choices=("sqlite", "database", "postgresql"), default="sqlite")
    parser.add_argument("--db-url", help="DatabaseSessionService URL (default: sqlite+aiosqlite in $PLUGPULL_WORKDIR)")
    parser.add_argument("phase", choices=("start", "approve", "recover"))
    args = parser.parse_args(argv)
    if args.db_url and args.session != "database":
        parser.error("--db-url needs --session database")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    warnings.filterwarnings("ignore", message=r".*EXPERIMENTAL.*")
    announce(framework="google-adk", version=importlib.metadata.version("google-adk"))
    return asyncio.run(run(args.phase, Path(os.environ.get(WORKDIR_ENV, ".")), args.session, args.db_url))


def plugpull_prefork(argv: list[str]) -> None:  # plugpull (optional): what --fork-server imports once
    """Import what ADK imports only once a run starts (``google_adk_support.preimport``) and, when the phase
    uses one, the database session store, in plugpull's fork server.

    ``session_service`` imports ``DatabaseSessionService`` (SQLAlchemy's asyncio engine, 0.5 s of CPU here) only
    for ``--session database|postgresql``, so that the sqlite store works without it; in the fork server it is
    imported once, before the first fork, instead of in every phase. Opens nothing, starts no thread, and
    returns None: the forked phase runs this module as ``__main__``, as a cold one does (docs/DECISIONS.md,
    "Throughput").
    """
    preimport()
    session = parse(argv).session
    if session == "sqlite":
        return None
    from google.adk.sessions import database_session_service  # noqa: F401

    # The dialect and driver SQLAlchemy loads for the URL session_service builds; a missing one is the
    # phase's own error to report.
    if session == "postgresql":
        driver = ("sqlalchemy.dialects.postgresql.asyncpg", "asyncpg")
    else:
        driver = ("sqlalchemy.dialects.sqlite.aiosqlite", "aiosqlite")
    import_present(*driver)
    return None


if __name__ == "__main__":
    sys.exit(main())
