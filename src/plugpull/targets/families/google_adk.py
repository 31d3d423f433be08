"""Google ADK: a resumable refund app, and the same app with tool confirmation on two session stores."""

from __future__ import annotations

from plugpull.postgres import URL_ENV
from plugpull.targets.families import Family, Variant, recover_ran_it_again, refunded_again

FAMILY = Family(name="google-adk", framework="google-adk", module="google.adk", extra="google-adk")

# google/adk-python, src/google/adk/apps/_configs.py, ResumabilityConfig's docstring: resuming an
# invocation re-runs the tool call in flight (at-least-once).
ADK_RESUMABILITY = "https://github.com/google/adk-python/blob/main/src/google/adk/apps/_configs.py"
ADK_AT_LEAST_ONCE = (
    "Tool call to resume needs to be idempotent because we only guarantee an at-least-once behavior once resumed."
)
ADK_REFUNDED_AGAIN = refunded_again(
    f'resume ran the tool call again; ADK\'s ResumabilityConfig docstring: "{ADK_AT_LEAST_ONCE}"', ADK_RESUMABILITY
)

REFUND = FAMILY.built_in(
    "google-adk",
    "google_adk_refund",
    flags=("key",),
    variants=[Variant(options={"key": key}) for key in ("none", "function-call-id")],
    notes=(ADK_REFUNDED_AGAIN,),
)

# ADK tool confirmation (FunctionTool(require_confirmation=True)) on the same resumable app, once per session
# store: SqliteSessionService, and DatabaseSessionService on sqlite+aiosqlite (the target's --db-url takes any
# SQLAlchemy async URL, so another database is one more variant). Racing approvers that lose the store's
# optimistic concurrency check (StaleSessionError) exit 3, the refusal (docs/DECISIONS.md, "Google ADK").
APPROVAL = FAMILY.built_in(
    "google-adk-approval",
    "google_adk_approval",
    flags=("session",),
    variants=[Variant(options={"session": session}) for session in ("sqlite", "database")],
    scenario="resume-after-approval",
    notes=(
        recover_ran_it_again(
            f'recover ran the confirmed tool call again; ADK\'s ResumabilityConfig docstring: "{ADK_AT_LEAST_ONCE}"',
            ADK_RESUMABILITY,
        ),
    ),
)

# The same app on DatabaseSessionService with PostgreSQL (plugpull.postgres: the server in $PLUGPULL_POSTGRES_URL,
# one database per run, asyncpg), where append_event locks the session row (SELECT ... FOR UPDATE), unlike on
# SQLite. A target of its own so that the findings running every variant of google-adk-approval need no server.
APPROVAL_POSTGRESQL = FAMILY.built_in(
    "google-adk-approval-postgresql",
    "google_adk_approval",
    flags=("session",),
    variants=[Variant(options={"session": "postgresql"})],
    scenario="resume-after-approval",
    notes=APPROVAL.variants[0].notes,
    also=("asyncpg", "sqlalchemy"),
    server=URL_ENV,
)

# cancel-mid-stream: run_async streamed (StreamingMode.SSE) on SqliteSessionService, cancelled with the
# run's abort_signal (ADK seals an aborted invocation: google/adk/events/_abort_events.py gives each dangling
# function call a synthetic error response) or by cancelling the consumer's task (no sealing).
STREAM = FAMILY.built_in(
    "google-adk-stream",
    "google_adk_stream",
    scenario="cancel-mid-stream",
    variants=tuple(Variant(args=(style,), options={"cancel": style}) for style in ("abort", "task-cancel")),
)

# tool-error: by default an exception in a function tool ends the invocation, and resume by invocation id runs it
# again; ReflectAndRetryToolPlugin (google/adk/plugins) gives the error to the model, which asks again.
TOOL_ERROR = FAMILY.built_in(
    "google-adk-tool-error",
    "google_adk_tool_error",
    variants=[
        Variant(args=(handling, key), options={"errors": handling, "key": key, "tools": "refund"})
        for handling in ("raise", "reflect-retry")
        for key in ("none", "function-call-id")
    ]
    # Two function calls in one model turn: send_email answered, refund raised (parallel-one-raised), the google/
    # adk-python#7108 case ("a parallel tool call that never executed is never replayed when a sibling call was
    # answered").
    + [
        Variant(
            args=(handling, "function-call-id", "--two-tools"),
            options={"errors": handling, "key": "function-call-id", "tools": "send_email+refund"},
            hold=("refund", 1),
            sibling=("send_email", "finished"),
        )
        for handling in ("raise", "reflect-retry")
    ],
    scenario="tool-error",
)

BUILT_INS = (REFUND, APPROVAL, APPROVAL_POSTGRESQL, STREAM, TOOL_ERROR)

# The tour (bare `plugpull`, docs/cli.md): per scenario a line its finding claims FAILs and one it claims PASSes, no
# timing line (tests/test_tour.py holds the claims to this); the verdicts are measured as on every line.
TOUR = (
    REFUND.stop({"key": "none"}, "before-effect", "after-effect"),
    APPROVAL.stop({"session": "sqlite"}, "killed-before-effect", "killed-after-effect"),
    APPROVAL_POSTGRESQL.stop({"session": "postgresql"}, "killed-before-effect", "killed-after-effect"),
    STREAM.stop({"cancel": "abort"}, "tool-after-effect", "between-tool-and-model"),
    TOOL_ERROR.stop(
        {"errors": "reflect-retry", "key": "none", "tools": "refund"}, "raise-before-effect", "raise-after-effect"
    ),
)
UPGRADE = None
