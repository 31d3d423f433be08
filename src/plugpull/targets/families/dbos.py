"""DBOS: a refund workflow with a step, recovered by DBOS.launch()."""

from __future__ import annotations

from plugpull import notes as n
from plugpull.notes import Note
from plugpull.postgres import URL_ENV
from plugpull.targets.families import Family, Variant, refunded_again

FAMILY = Family(name="dbos", framework="dbos", module="dbos", extra="dbos")

# DBOS docs, "How workflows work": recovery resumes from the last completed step, so the step in
# flight runs again; steps are at-least-once.
DBOS_STEPS = "https://docs.dbos.dev/explanations/how-workflows-work"

# DBOS docs, "Self-Hosting DBOS Apps", "Managing Application versions": a workflow is tagged with the
# application version that started it and a process of another version does not recover it.
DBOS_APP_VERSIONS = "https://docs.dbos.dev/self-hosting#managing-application-versions"
DBOS_VERSION_QUOTE = (
    "Each workflow is tagged with the version of the application that started it. To prevent code "
    "compatibility issues, DBOS does not attempt to recover workflows tagged with a different application version."
)
# The dbos agent's resume prints this when the workflow is still PENDING after its wait
# (src/plugpull/targets/dbos_refund.py): the evidence that recovery skipped it, not just any unfinished run.
DBOS_NOT_RECOVERED = "not recovered (recorded under version"
DBOS_VERSION_NOT_RECOVERED = Note(
    text=f'the recovering process ran another application_version and the workflow stayed PENDING; DBOS docs: "{DBOS_VERSION_QUOTE}"',
    url=DBOS_APP_VERSIONS,
    condition=f"resume exited 0 without a result, its stderr saying {DBOS_NOT_RECOVERED!r}",
    holds=lambda r: n.resume_exit(r) == 0 and DBOS_NOT_RECOVERED in r.stderr and not n.resume_reported_result(r),
)

REFUND = FAMILY.built_in(
    "dbos",
    "dbos_refund",
    flags=("key", "app_version"),
    variants=(
        *(Variant(options={"key": key}) for key in ("none", "checkpointed")),
        # The recovering process runs under another application_version than the crashed one (a deploy of
        # new code between crash and restart). No `key` option: the key=... claims must not match it.
        Variant(args=("--key", "none"), options={"app_version": "changed"}, notes=(DBOS_VERSION_NOT_RECOVERED,)),
    ),
    result_ignore=("request_id",),
    notes=(refunded_again("the step in flight runs again on recovery (steps are at-least-once)", DBOS_STEPS),),
)

# The same workflow with its system database on PostgreSQL (plugpull.postgres: the server in
# $PLUGPULL_POSTGRES_URL, one database per run), DBOS's production store. A target of its own, not a variant of
# `dbos`: the findings that run every variant of `dbos` need no server (docs/DECISIONS.md, "PostgreSQL stores").
REFUND_POSTGRESQL = FAMILY.built_in(
    "dbos-postgresql",
    "dbos_refund",
    flags=("key", "store"),
    variants=tuple(Variant(options={"key": key, "store": "postgresql"}) for key in ("none", "checkpointed")),
    result_ignore=("request_id",),
    notes=(refunded_again("the step in flight runs again on recovery (steps are at-least-once)", DBOS_STEPS),),
    server=URL_ENV,
)

# tool-error: the refund step raises. A step that raises fails its workflow, which DBOS keeps as its outcome (recovery
# does not run a workflow that ended in an error again); with retries_allowed=True DBOS runs the step again.
DBOS_RETRIES = "https://docs.dbos.dev/python/tutorials/step-tutorial#configurable-retries"
TOOL_ERROR = FAMILY.built_in(
    "dbos-tool-error",
    "dbos_refund",
    flags=("key",),
    variants=(
        *(Variant(options={"key": key, "steps": "no-retries"}) for key in ("none", "checkpointed")),
        *(
            Variant(args=("--step-retries",), options={"key": key, "steps": "retries"})
            for key in ("none", "checkpointed")
        ),
    ),
    result_ignore=("request_id",),
    scenario="tool-error",
)

BUILT_INS = (REFUND, REFUND_POSTGRESQL, TOOL_ERROR)

# The tour (bare `plugpull`, docs/cli.md): per scenario a line its finding claims FAILs and one it claims PASSes, no
# timing line (tests/test_tour.py holds the claims to this); the verdicts are measured as on every line.
TOUR = (
    REFUND.stop({"key": "none"}, "before-effect", "after-effect"),
    REFUND_POSTGRESQL.stop({"key": "none", "store": "postgresql"}, "before-effect", "after-effect"),
    TOOL_ERROR.stop({"key": "none", "steps": "retries"}, "raise-before-effect", "raise-after-effect"),
)
UPGRADE = None
