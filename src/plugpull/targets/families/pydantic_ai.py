"""Pydantic AI: an agent made durable with DBOS (DBOSAgent), and the same agent with a deferred tool."""

from __future__ import annotations

from plugpull.targets.families import Family, Variant, recover_ran_it_again, refunded_again

FAMILY = Family(
    name="pydantic-ai", framework="pydantic-ai-slim", module="pydantic_ai", extra="pydantic-ai", also=("dbos",)
)

# Pydantic AI docs, "Durable Execution with DBOS": DBOSAgent "executes model requests, decorated tool
# calls, and MCP communication as DBOS steps", and "Tools and event stream handlers are not
# automatically wrapped by DBOS" (decorate with @DBOS.step for I/O). The source agrees: "DBOS runs
# function tools inline" (pydantic_ai/durable_exec/dbos/_agent.py), so a plain function tool killed after
# its effect runs again when the workflow is recovered.
PYDANTIC_AI_DBOS = "https://ai.pydantic.dev/durable_execution/dbos/#agent-and-toolset-requirements"
PYDANTIC_AI_INLINE = (
    "the function tool runs inline in the DBOSAgent workflow, not as a DBOS step, and ran again on recovery; "
    'Pydantic AI docs: "Tools and event stream handlers are not automatically wrapped by DBOS" '
    "(only tools decorated with @DBOS.step are steps)"
)

REFUND = FAMILY.built_in(
    "pydantic-ai",
    "pydantic_ai_refund",
    flags=("key",),
    variants=[Variant(options={"durable": "DBOSAgent", "key": key}) for key in ("none", "tool-call-id")],
    notes=(refunded_again(PYDANTIC_AI_INLINE, PYDANTIC_AI_DBOS),),
)

# Pydantic AI deferred tools (requires_approval=True) on the same DBOSAgent: the run ends with
# DeferredToolRequests and a new run with the saved message history and DeferredToolResults approves it.
APPROVAL = FAMILY.built_in(
    "pydantic-ai-approval",
    "pydantic_ai_approval",
    variants=[Variant(options={"durable": "DBOSAgent"})],
    scenario="resume-after-approval",
    notes=(recover_ran_it_again(PYDANTIC_AI_INLINE, PYDANTIC_AI_DBOS),),
)

# cancel-mid-stream: agent.iter streamed node by node, the history kept by the app (Pydantic AI has no
# conversation store of its own). RunCancelled's docstring (pydantic_ai/exceptions.py): everything the run
# completed "is preserved in all_messages() ... any tool calls that never produced a result are automatically
# closed out with synthesized outcome='interrupted' returns before the history is sent to a model."
STREAM = FAMILY.built_in(
    "pydantic-ai-stream",
    "pydantic_ai_stream",
    flags=("save",),
    scenario="cancel-mid-stream",
    variants=tuple(
        Variant(args=(style,), options={"cancel": style, "save": save})
        for style, save in (("token", "on-cancel"), ("task-cancel", "on-cancel"), ("token", "end"))
    ),
)

# tool-error: a function tool that raises (anything but ModelRetry) ends Pydantic AI's run with the error; under
# DBOSAgent the workflow ends in it, and DBOS keeps that as its outcome.
TOOL_ERROR = FAMILY.built_in(
    "pydantic-ai-tool-error",
    "pydantic_ai_refund",
    flags=("key",),
    variants=[
        Variant(options={"durable": "DBOSAgent", "key": key, "tools": "refund"}) for key in ("none", "tool-call-id")
    ]
    # Two tool calls of one model response (parallel-one-raised): send_email answered, refund raised.
    + [
        Variant(
            args=("--two-tools",),
            options={"durable": "DBOSAgent", "key": "tool-call-id", "tools": "send_email+refund"},
            hold=("refund", 1),
            sibling=("send_email", "finished"),
        )
    ],
    scenario="tool-error",
)

BUILT_INS = (REFUND, APPROVAL, STREAM, TOOL_ERROR)

# The tour (bare `plugpull`, docs/cli.md): per scenario a line its finding claims FAILs and one it claims PASSes, no
# timing line (tests/test_tour.py holds the claims to this); the verdicts are measured as on every line.
TOUR = (
    REFUND.stop({"durable": "DBOSAgent", "key": "none"}, "before-effect", "after-effect"),
    APPROVAL.stop({"durable": "DBOSAgent"}, "killed-before-effect", "killed-after-effect"),
    STREAM.stop({"cancel": "token", "save": "on-cancel"}, "model-stream", "tool-after-effect"),
    TOOL_ERROR.stop(
        {"durable": "DBOSAgent", "key": "none", "tools": "refund"}, "raise-before-effect", "raise-after-effect"
    ),
)
UPGRADE = None
