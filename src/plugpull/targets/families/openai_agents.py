"""OpenAI Agents SDK: a Session app that stages input, an approval app, sibling tool calls, a saved RunState."""

from __future__ import annotations

from plugpull import notes as n
from plugpull.notes import Note
from plugpull.targets.families import Family, Variant

FAMILY = Family(name="openai-agents", framework="openai-agents", module="agents", extra="openai-agents")

# openai/openai-agents-python#4775: RunState pending input is appended to the Session and only
# then cleared, with no checkpoint for the append, so a retry after a lost ack appends it again.
# The SDK docs (Results, "Add input before resuming") promise the opposite.
OPENAI_AGENTS_4775 = "https://github.com/openai/openai-agents-python/issues/4775"
OPENAI_AGENTS_ADD_INPUT = "https://openai.github.io/openai-agents-python/results/#add-input-before-resuming"
OPENAI_AGENTS_PROMISE = (
    "Across serialization, resume, and replay-safe retries, the SDK preserves one durable InputItem occurrence."
)


def _staged_twice_after_ack_lost(r) -> bool:
    # #4775 is a duplicate after a lost acknowledgement; a lost staged input (write-lost, or
    # stored 0 times) is another bug and gets neither the issue nor the quote.
    return r.evidence.get("point") == "ack-lost" and (r.evidence.get("staged_stored") or 0) >= 2


_STAGED_TWICE = "ack-lost, and the staged input stored 2 or more times after resume"
OPENAI_AGENTS_STAGED_TWICE = (
    Note(
        text='openai/openai-agents-python#4775: "RunState pending input can be duplicated when a Session '
        'append loses acknowledgement"',
        url=OPENAI_AGENTS_4775,
        condition=_STAGED_TWICE,
        holds=_staged_twice_after_ack_lost,
    ),
    Note(
        text=f'the SDK docs promise: "{OPENAI_AGENTS_PROMISE}"',
        url=OPENAI_AGENTS_ADD_INPUT,
        condition=_STAGED_TWICE,
        holds=_staged_twice_after_ack_lost,
    ),
)

APP = FAMILY.built_in(
    "openai-agents",
    "openai_agents_app",
    scenario="lost-session-write",
    result_ignore=("reply_id",),
    notes=OPENAI_AGENTS_STAGED_TWICE,
)

# The SDK docs ("Human-in-the-loop") make RunState the durable record of a pause; it carries no
# claim, so the same saved state can be approved and run any number of times.
OPENAI_AGENTS_HITL = "https://openai.github.io/openai-agents-python/human_in_the_loop/"

# Two restores of one RunState both ran the tool (two approvals, or the killed approval and recover)
# and the refund was done twice: a crash or a refusal is not what this note explains.
OPENAI_AGENTS_NO_CLAIM = Note(
    text="a saved RunState carries no claim: every restore of it runs the approved tool",
    url=OPENAI_AGENTS_HITL,
    condition="2 or more processes (approve or recover) ran the approved tool and refund was recorded 2 or more times",
    holds=lambda r: n.approvers_that_ran_the_tool(r) + n.recover_ran_the_tool(r) >= 2 and n.count(r, "refund") >= 2,
)

# design=plain follows the docs' steps; design=claim-and-key adds what the docs leave to the app (issue
# 20): approve claims the stored pause (a loser is refused) and the refund is keyed by the tool call id
# the saved RunState keeps, so a restore that runs the tool again refunds nothing new.
APPROVAL = FAMILY.built_in(
    "openai-agents-approval",
    "openai_agents_approval",
    flags=("design",),
    variants=[Variant(options={"design": design}) for design in ("plain", "claim-and-key")],
    scenario="resume-after-approval",
    result_ignore=("reply_id",),
    notes=(OPENAI_AGENTS_NO_CLAIM,),
)

# Sibling tool calls in the OpenAI Agents SDK: two function calls in one model response, run as
# concurrent tasks; recovered from the approved RunState the app saved (no key on send_email).
# approval=both: both tools need approval, the state is saved before either runs, so a restore runs
# the finished send_email again (the app's save point). approval=charge_card: send_email runs before
# the pause and its output is in the saved state, which the SDK skips on restore; it runs before the
# kill, so it can only be finished (finding sibling-tool-calls).
SIBLINGS = FAMILY.built_in(
    "openai-agents-siblings",
    "openai_agents_siblings",
    flags=("approval",),
    variants=[
        Variant(
            options={"hold": "charge_card", "sibling": f"send_email:{state}", "approval": approval},
            hold=("charge_card", 1),
            sibling=("send_email", state),
        )
        for approval, state in (("both", "finished"), ("both", "running"), ("charge_card", "finished"))
    ],
    result_ignore=("reply_id",),
)

# cancel-mid-stream: Runner.run_streamed with a SQLiteSession, cancelled by its client: the SDK's own
# result.cancel() in both modes (agents/result.py), or the consumer's task cancelled. The script's "aclose" style
# is no variant: closing stream_events() waits for the run to finish (agents/result.py, stream_events' finally:
# "Ensure main execution completes before cleanup"), so its report can only come after the held step is let go
# (findings/cancel-mid-stream/witness/openai_agents_cancel_stream.py --how aclose: the run completes).
STREAM = FAMILY.built_in(
    "openai-agents-stream",
    "openai_agents_stream",
    scenario="cancel-mid-stream",
    variants=tuple(
        Variant(args=(style,), options={"cancel": style}) for style in ("cancel", "cancel-after-turn", "task-cancel")
    ),
)

# tool-error: function_tool's default failure_error_function gives the tool's exception to the model as its output
# (agents/tool.py, default_tool_error_function); the scripted model asks again (a new call id) or gives up.
# errors=timeout-to-model: an async tool with the SDK's own timeout (function_tool(timeout=1)), whose timeout
# message the model reads as an error; hang-after-effect reaches it.
TOOL_ERROR = FAMILY.built_in(
    "openai-agents-tool-error",
    "openai_agents_tool_error",
    variants=[
        Variant(args=(handling, key), options={"errors": handling, "key": key, "tools": "refund"})
        for handling in ("to-model", "to-model-give-up", "timeout-to-model")
        for key in ("none", "tool-call-id")
    ]
    # Two function calls of one model turn (parallel-one-raised): send_email answered, refund raised, as
    # google-adk-tool-error's; the SDK runs them concurrently and gives the refund's error to the model.
    + [
        Variant(
            args=("to-model", "tool-call-id", "--two-tools"),
            options={"errors": "to-model", "key": "tool-call-id", "tools": "send_email+refund"},
            hold=("refund", 1),
            sibling=("send_email", "finished"),
        )
    ],
    scenario="tool-error",
)

BUILT_INS = (APP, APPROVAL, SIBLINGS, STREAM, TOOL_ERROR)

# The tour (bare `plugpull`, docs/cli.md): per scenario a line its finding claims FAILs and one it claims PASSes, no
# timing line (tests/test_tour.py holds the claims to this); the verdicts are measured as on every line.
TOUR = (
    APP.stop({}, "write-lost", "ack-lost"),
    APPROVAL.stop({"design": "plain"}, "killed-before-effect", "killed-after-effect"),
    SIBLINGS.stop({"hold": "charge_card", "sibling": "send_email:finished", "approval": "both"}, "before-effect"),
    SIBLINGS.stop(
        {"hold": "charge_card", "sibling": "send_email:finished", "approval": "charge_card"}, "before-effect"
    ),
    STREAM.stop({"cancel": "cancel"}, "model-stream", "between-tool-and-model"),
    TOOL_ERROR.stop(
        {"errors": "to-model", "key": "none", "tools": "refund"}, "raise-before-effect", "raise-after-effect"
    ),
)

# resume-after-upgrade: RunState JSON saved (approved) before the tool runs, restored by the other release.
UPGRADE = FAMILY.built_in(
    "openai-agents-runstate",
    "openai_agents_runstate",
    variants=[Variant(options={"state": "runstate-json", "key": "tool-call-id"})],
    result_ignore=("reply_id",),
)
