"""The OpenAI Agents SDK on Temporal: its Temporal plugin (OpenAIAgentsPlugin), on the `temporal` target's dev server."""

from __future__ import annotations

from plugpull.targets.families import Family, Variant, refunded_again

# Temporal's OpenAI Agents integration runs every model call as an activity, and the tool is an activity made a tool
# by activity_as_tool. Its README ("Durable Execution"): activity code "if it fails part-way through it restarts from
# the beginning"; Temporal retries an activity whose worker died before it reported.
INTEGRATION = "https://github.com/temporalio/ai-integrations/tree/main/python/openai_agents"
# The integration is the distribution temporalio-openai-agents (import temporalio.openai_agents): temporalio 1.35's
# temporalio.contrib.openai_agents only re-exports it. A family of its own, as pydantic-ai-temporal is: the agents
# announce the plugin's release, and the openai-agents family's built-ins need no Temporal.
FAMILY = Family(
    name="openai-agents-temporal",
    framework="temporalio-openai-agents",
    module="temporalio.openai_agents",
    extra="openai-agents-temporal",
    also=("agents", "temporalio"),
)
TEMPORAL = FAMILY.built_in(
    "openai-agents-temporal",
    "openai_agents_temporal",
    flags=("server", "key"),
    variants=[
        # As the temporal target's: server=sidecar, the worker alone dies; server=in-run, the server dies with it and
        # resume starts it again on its SQLite file. key=run-activity: the workflow run id and the activity id.
        Variant(options={"server": server, "key": key}, sidecar="serve" if server == "sidecar" else None)
        for server in ("sidecar", "in-run")
        for key in ("none", "run-activity")
    ],
    result_ignore=("reply_id",),
    notes=(
        refunded_again(
            "the tool is a Temporal activity (activity_as_tool): the worker died after its effect and before it "
            "reported, and Temporal retried the activity on the new worker; the integration's README: activity code "
            '"if it fails part-way through it restarts from the beginning"',
            INTEGRATION,
        ),
    ),
)

BUILT_INS = (TEMPORAL,)

# The tour (bare `plugpull`, docs/cli.md): a line its finding claims FAILs and one it claims PASSes, as temporal's.
TOUR = (TEMPORAL.stop({"server": "sidecar", "key": "none"}, "before-effect", "after-effect"),)
UPGRADE = None
