"""LangGraph: a StateGraph refund agent, its approval, the functional API and the prebuilt ReAct agent."""

from __future__ import annotations

from dataclasses import replace

from plugpull import notes as n
from plugpull.checks.cancel_mid_stream import lost_from
from plugpull.notes import Note
from plugpull.targets.families import Family, Variant, recover_ran_it_again, refunded_again

FAMILY = Family(name="langgraph", framework="langgraph", module="langgraph", extra="langgraph")

# LangGraph docs, Functional API, "Idempotency": side effects in a resumed run must be
# idempotent because an interrupted task runs again from its start.
LANGGRAPH_IDEMPOTENCY = "https://docs.langchain.com/oss/python/langgraph/functional-api#idempotency"

LANGGRAPH_REFUNDED_AGAIN = refunded_again(
    "resume refunded again; effects in a resumed run must be idempotent", LANGGRAPH_IDEMPOTENCY
)

# With durability="async" LangGraph writes every checkpoint and every task's pending writes from a
# background executor while the next step runs (langgraph/pregel/_loop.py: after_tick submits
# _checkpointer_put_after_previous, put_writes submits checkpointer.put_writes). The model's tool call
# survives a kill when either the checkpoint after the model step or the model task's pending writes
# (attached to the checkpoint before it) are on disk. The agent's MarkedSqliteSaver marks each put
# "checkpoint-save" (1: the input, step -1; 2: before the model step, step 0; 3: after it, step 1; each
# put waits for the one before, so the numbering is the same in every run) and each put_writes
# "pending-writes" (1: the input's, 2: the model task's, in either order). The aimed lines hold them:
# how the model step's saves stand at the kill, per option value.
LANGGRAPH_MODEL_STEP: dict[str, tuple[tuple[str, int, str], ...]] = {
    # Nothing held: the background writer races the kill.
    "raced": (),
    # Checkpoint 2 withheld: it and every later checkpoint are unwritten and the model task's pending
    # writes point at a checkpoint that never lands, so nothing of the model step is durable.
    "unsaved": (("checkpoint-save", 2, "withheld"),),
    # Checkpoint 3 withheld, both pending writes landed: only the model task's pending writes keep its call.
    "writes-saved": (("checkpoint-save", 3, "withheld"), ("pending-writes", 2, "landed")),
    # The checkpoint after the model step landed before the kill.
    "saved": (("checkpoint-save", 3, "landed"),),
}

REFUND = FAMILY.built_in(
    "langgraph",
    "langgraph_refund",
    flags=("durability",),
    variants=(
        *(
            Variant(
                args=("no-key",),
                options={"durability": durability, "key": "none"},
                notes=(LANGGRAPH_REFUNDED_AGAIN,),
            )
            for durability in ("sync", "async")
        ),
        # The tool passes LangGraph's tool call id as its idempotency key: the provider dedupes a re-run
        # only if the model's tool call was saved before the kill, which with durability="async" is a matter
        # of timing (model_step=raced: a timing line of the langgraph-kill-mid-tool finding, judged by its FAIL
        # rate), unless the kill is aimed at the background writer's saves (LANGGRAPH_MODEL_STEP).
        Variant(args=("tool-call-id",), options={"durability": "sync", "key": "tool-call-id"}),
        *(
            Variant(
                args=("tool-call-id",),
                options={"durability": "async", "key": "tool-call-id", "model_step": model_step},
                saves=saves,
            )
            for model_step, saves in LANGGRAPH_MODEL_STEP.items()
        ),
    ),
)

# resume-after-approval. LangGraph docs, "Interrupts": on resume the node that called
# interrupt() runs again from its start, and nothing claims a pending interrupt; concurrent runs on one
# thread are handled only by the Agent Server ("Double texting": not in the open-source framework).
# langchain-ai/langgraph#6663 (closed, labelled bug): a second Command(resume=...) on the same interrupted
# checkpoint runs the node again, with the first resume's value.
LANGGRAPH_INTERRUPTS = "https://docs.langchain.com/oss/python/langgraph/interrupts"
LANGGRAPH_DOUBLE_TEXTING = "https://docs.langchain.com/langsmith/double-texting"
LANGGRAPH_6663 = "https://github.com/langchain-ai/langgraph/issues/6663"

_TWO_APPROVERS = "2 or more approve processes ran the approved tool"
LANGGRAPH_APPROVAL_NOTES = (
    Note(
        text="LangGraph does not claim a pending interrupt; every Command(resume=...) re-runs the node",
        url=LANGGRAPH_INTERRUPTS,
        condition=_TWO_APPROVERS,
        holds=lambda r: n.approvers_that_ran_the_tool(r) >= 2,
    ),
    Note(
        text="runs racing on one thread are not handled by the open-source framework (double texting is an Agent "
        "Server feature)",
        url=LANGGRAPH_DOUBLE_TEXTING,
        condition=_TWO_APPROVERS,
        holds=lambda r: n.approvers_that_ran_the_tool(r) >= 2,
    ),
    Note(
        text="langchain-ai/langgraph#6663: a second resume of the same interrupted checkpoint runs the node again",
        url=LANGGRAPH_6663,
        condition=_TWO_APPROVERS,
        holds=lambda r: n.approvers_that_ran_the_tool(r) >= 2,
    ),
    # killed-after-effect: the killed approval recorded the refund, then recover re-ran the node.
    recover_ran_it_again("the node that called interrupt() runs again from its start on resume", LANGGRAPH_INTERRUPTS),
)

APPROVAL = FAMILY.built_in(
    "langgraph-approval",
    "langgraph_approval",
    flags=("durability",),
    variants=[Variant(options={"durability": durability}) for durability in ("sync", "async")],
    scenario="resume-after-approval",
    notes=LANGGRAPH_APPROVAL_NOTES,
)

# One refund tool per framework, once with no idempotency key (what the framework's own
# recovery does shows) and once with the key a user of that framework would reach for (a value the
# framework saved before the tool ran: a finished task's or step's output, the model's function call id).
# The functional target's draft task result, "pending-writes 1" (the first task to finish), per option value.
LANGGRAPH_DRAFT: dict[str, tuple[tuple[str, int, str], ...]] = {
    "raced": (),  # nothing held: the background put_writes races the kill
    "unsaved": (("pending-writes", 1, "withheld"),),  # held back: resume runs the draft again (a new key)
    "saved": (("pending-writes", 1, "landed"),),  # on disk before the kill: resume replays the saved draft
}

FUNCTIONAL = FAMILY.built_in(
    "langgraph-functional",
    "langgraph_functional",
    flags=("key",),
    variants=(
        Variant(options={"api": "functional", "key": "none"}),
        # The key is the request id drawn in the finished draft task, saved by a background put_writes
        # while the refund task runs (langgraph_functional's docstring): raced, or the kill aimed at it.
        *(
            Variant(options={"api": "functional", "key": "checkpointed", "draft": draft}, saves=saves)
            for draft, saves in LANGGRAPH_DRAFT.items()
        ),
    ),
    result_ignore=("request_id",),
    notes=(LANGGRAPH_REFUNDED_AGAIN,),
)

# Sibling tool calls: the prebuilt ReAct agent's model asks for send_email (no key) and
# charge_card (keyed by its tool call id) in one turn, and LangGraph runs them as two parallel tasks.
# The kill lands in charge_card while send_email is finished, or while it is held too.
SIBLINGS = FAMILY.built_in(
    "langgraph-siblings",
    "langgraph_react_two_tools",
    flags=("durability",),
    variants=[
        Variant(
            options={"durability": durability, "hold": "charge_card", "sibling": f"send_email:{state}"},
            hold=("charge_card", 1),
            sibling=("send_email", state),
        )
        for durability in ("sync", "async")
        for state in ("finished", "running")
    ],
)

# cancel-mid-stream. https://github.com/langchain-ai/langgraph/issues/5672 (open, labelled bug): "Run
# cancellation causes loss of streamed state not yet persisted as a checkpoint". In its thread a contributor
# re-tested on 1.2.11: graph state the user saw is persisted, while "messages"-mode chunks (the streamed tokens
# of a model call that did not finish) were never graph state.
LANGGRAPH_5672 = "https://github.com/langchain-ai/langgraph/issues/5672"


def streamed_text_lost(result) -> bool:
    """Streamed text the consumer showed before the cancel is in no saved AI message (checks.lost_from)."""
    ev = result.evidence
    seen, saved = (ev.get("cancel") or {}).get("seen"), ev.get("conversation")
    if not seen or saved is None:
        return False
    return any(part.startswith("streamed text") for part in lost_from(seen, saved))


LANGGRAPH_STREAMED_LOST = Note(
    text="langgraph#5672: a cancelled run loses streamed state not yet persisted as a checkpoint",
    url=LANGGRAPH_5672,
    condition="text the consumer showed before the cancel is in no AI message of the saved conversation",
    holds=streamed_text_lost,
)

STREAM = FAMILY.built_in(
    "langgraph-stream",
    "langgraph_stream",
    flags=("durability", "next_turn"),
    scenario="cancel-mid-stream",
    notes=(LANGGRAPH_STREAMED_LOST,),
    variants=(
        *(
            # next_turn=new-message (the flag's default) is named so a claim can tell these lines from the
            # finish-first ones below (claims match on the options they list).
            Variant(args=(style,), options={"cancel": style, "durability": durability, "next_turn": "new-message"})
            for style in ("task-cancel", "aclose", "keyboard-interrupt")
            for durability in ("sync", "async", "exit")
        ),
        # The app finishes the run the cancel stopped (stream(None)) before it sends the next message.
        *(
            Variant(
                args=("task-cancel",),
                options={"cancel": "task-cancel", "durability": durability, "next_turn": "finish-first"},
            )
            for durability in ("sync", "async", "exit")
        ),
    ),
)

# tool-error: the refund tool's outside call raises. LangGraph's ToolNode raises anything but a ToolInvocationError by
# default (the run stops; resume continues the thread), turns every error into the tool's message with
# handle_tool_errors=True, and a node's RetryPolicy retries a ConnectionError by default (default_retry_on).
LANGGRAPH_TOOL_NODE = "https://langchain-ai.github.io/langgraph/reference/agents/#langgraph.prebuilt.tool_node.ToolNode"
LANGGRAPH_RETRY = "https://docs.langchain.com/oss/python/langgraph/graph-api#add-retry-policies"

TOOL_ERROR = FAMILY.built_in(
    "langgraph-tool-error",
    "langgraph_tool_error",
    variants=[
        Variant(args=(handling, key), options={"errors": handling, "key": key, "tools": "refund"})
        for handling in ("raise", "retry-policy", "to-model", "to-model-give-up")
        for key in ("none", "tool-call-id")
    ]
    # Two tool calls of one model turn (parallel-one-raised): send_email answered, refund raised, as
    # google-adk-tool-error's; the ToolNode runs both inside one node, so they are saved, retried and resumed together.
    + [
        Variant(
            args=(handling, "tool-call-id", "--two-tools"),
            options={"errors": handling, "key": "tool-call-id", "tools": "send_email+refund"},
            hold=("refund", 1),
            sibling=("send_email", "finished"),
        )
        for handling in ("raise", "retry-policy", "to-model")
    ],
    scenario="tool-error",
)

BUILT_INS = (REFUND, APPROVAL, FUNCTIONAL, SIBLINGS, STREAM, TOOL_ERROR)

# The tour (bare `plugpull`, docs/cli.md): per scenario a line its finding claims FAILs and one it claims PASSes, no
# timing line (tests/test_tour.py holds the claims to this); the verdicts are measured as on every line.
TOUR = (
    REFUND.stop({"durability": "sync", "key": "none"}, "before-effect", "after-effect"),
    APPROVAL.stop({"durability": "sync"}, "killed-before-effect", "killed-after-effect"),
    STREAM.stop(
        {"cancel": "task-cancel", "durability": "sync", "next_turn": "new-message"},
        "model-stream",
        "between-tool-and-model",
    ),
    TOOL_ERROR.stop(
        {"errors": "retry-policy", "key": "none", "tools": "refund"}, "raise-before-effect", "raise-after-effect"
    ),
)

# resume-after-upgrade: durability="sync": the model's tool call is checkpointed before the tool runs, so
# the line is deterministic (with "async" it is a race, docs/stability.md) and only the upgrade can change it.
UPGRADE = replace(REFUND, variants=tuple(v for v in REFUND.variants if v.options["durability"] == "sync"))
