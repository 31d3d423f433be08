"""Pydantic AI on Temporal: the refund agent made durable with TemporalAgent, on the `temporal` target's dev server."""

from __future__ import annotations

from plugpull.targets.families import Family, Variant, refunded_again

# The same agent made durable with Temporal (TemporalAgent), on the `temporal` target's dev server: the model request
# and the tool call are Temporal activities. Pydantic AI's Temporal page: "if an activity fails part-way through it is
# restarted from the beginning"; Temporal retries an activity whose worker died before it reported.
PYDANTIC_AI_TEMPORAL = "https://ai.pydantic.dev/durable_execution/temporal/"
# Pydantic AI's Temporal integration needs temporalio (the [temporal] extra) and not DBOS, which the pydantic-ai
# family's built-ins need: a family of its own, on the same distribution.
FAMILY = Family(
    name="pydantic-ai-temporal",
    framework="pydantic-ai-slim",
    module="pydantic_ai",
    extra="pydantic-ai-temporal",
    also=("temporalio",),
)
TEMPORAL = FAMILY.built_in(
    "pydantic-ai-temporal",
    "pydantic_ai_temporal",
    flags=("server", "key"),
    variants=[
        Variant(
            options={"durable": "TemporalAgent", "server": server, "key": key},
            sidecar="serve" if server == "sidecar" else None,
        )
        for server in ("sidecar", "in-run")
        for key in ("none", "tool-call-id")
    ],
    notes=(
        refunded_again(
            "the tool call is a Temporal activity: the worker died after its effect and before it reported, and "
            "Temporal retried the activity on the new worker; Pydantic AI docs: an activity that fails part-way "
            '"is restarted from the beginning"',
            PYDANTIC_AI_TEMPORAL,
        ),
    ),
)

BUILT_INS = (TEMPORAL,)

TOUR = ()
UPGRADE = None
