"""LlamaIndex Workflows: a two-step workflow whose Context the app saves to a file after every step."""

from __future__ import annotations

from plugpull.targets.families import Family, Variant, refunded_again

FAMILY = Family(
    name="llama-index", framework="llama-index-workflows", module="workflows", extra="llama-index-workflows"
)

# Context.to_dict's docstring (workflows/context/context.py): it saves "active work", and from_dict resumes
# the run: the step that was running when the app last saved runs again with its saved input event.
LLAMA_CONTEXT = "https://developers.llamaindex.ai/python/framework/understanding/agent/state"

# The app saves the Context from its event-stream loop while the refund step already runs: the kill waits
# until that first save (after draft) is on disk (--save context-save:1:landed), so what resume restores
# is the same every time: the refund step as active work, with the drafted request id.
CONTEXT_SAVED = (("context-save", 1, "landed"),)

REFUND = FAMILY.built_in(
    "llama-index",
    "llama_index_refund",
    flags=("key",),
    variants=[Variant(options={"store": "file", "key": key}, saves=CONTEXT_SAVED) for key in ("none", "checkpointed")],
    result_ignore=("request_id",),
    notes=(
        refunded_again(
            "the restored Context held the refund step as active work (the save after draft): from_dict ran it again",
            LLAMA_CONTEXT,
        ),
    ),
)

# The human-in-the-loop events (InputRequiredEvent / HumanResponseEvent) with the Context saved by the app and
# restored to send the answer: LlamaIndex holds no claim on a request for input, so nothing refuses a second answer.
APPROVAL = FAMILY.built_in(
    "llama-index-approval",
    "llama_index_approval",
    variants=[Variant(options={"store": "file"})],
    scenario="resume-after-approval",
)

BUILT_INS = (REFUND, APPROVAL)

# The tour (bare `plugpull`, docs/cli.md): per scenario a line its finding claims FAILs and one it claims PASSes, no
# timing line (tests/test_tour.py holds the claims to this); the verdicts are measured as on every line.
TOUR = (
    REFUND.stop({"store": "file", "key": "none"}, "before-effect", "after-effect"),
    APPROVAL.stop({"store": "file"}, "killed-before-effect", "killed-after-effect"),
)
UPGRADE = None
