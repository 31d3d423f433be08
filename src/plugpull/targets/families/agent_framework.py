"""Microsoft Agent Framework: a functional workflow with concurrent calls to one @step."""

from __future__ import annotations

from plugpull import notes as n
from plugpull.notes import Note
from plugpull.targets.families import Family, Variant

FAMILY = Family(
    name="agent-framework", framework="agent-framework-core", module="agent_framework", extra="agent-framework"
)

# microsoft/agent-framework#8292: functional-workflow step results were cached by (step name,
# call index) up to 1.19.0, so concurrent calls to one @step that restart in another order get each
# other's saved results. "control" keeps the order, so only the swap can explain a FAIL.
AGENT_FRAMEWORK_8292 = "https://github.com/microsoft/agent-framework/issues/8292"

# The swap restarts B's branch first: replayed by call order, B's branch gets A's saved key and
# charges A again, A's branch charges A anew, and B is never charged. Any other count is not #8292.
AGENT_FRAMEWORK_SWAPPED = Note(
    text="consistent with @step results replayed by call order, not by arguments: microsoft/agent-framework#8292",
    url=AGENT_FRAMEWORK_8292,
    condition="charge_card:A recorded 2 times and charge_card:B 0 times",
    holds=lambda r: n.counts(r).get("charge_card:A") == 2 and n.counts(r).get("charge_card:B") == 0,
)


def _receipts_swapped(result) -> bool:
    """resume's result charges order A to customer B and order B to customer A (the checkout's outcome())."""
    resumed = result.evidence.get("resumed")
    value = resumed[-1] if isinstance(resumed, list) and resumed else None
    orders = value.get("orders") if isinstance(value, dict) else None
    if not isinstance(orders, list):
        return False
    return {o.get("order_id"): o.get("customer") for o in orders if isinstance(o, dict)} == {"A": "B", "B": "A"}


# Killed at B's charge instead (kill-mid-tool's every-effect default): A was charged before the
# kill, both payments are saved, and the swapped restart hands each order the other's saved payment. Each card
# is still charged once (the saved keys make the charges idempotent), but each order's receipt is the other
# customer's. The same replay by call order, seen in the result rather than in the counts.
AGENT_FRAMEWORK_RECEIPTS_SWAPPED = Note(
    text="each order got the other order's saved payment (@step results replayed by call order, not by "
    "arguments): microsoft/agent-framework#8292",
    url=AGENT_FRAMEWORK_8292,
    condition="resume's result charges order A to customer B and order B to customer A",
    holds=_receipts_swapped,
)

# Read in the agent-framework-core wheels (agent_framework/_workflows/_functional.py,
# FunctionalWorkflow._compute_signature_hash): up to 1.19.0 the hash mixes the workflow's name, its step
# names and its bytecode; from 1.20.0 the steps' identities (code, closure, defaults) and the helper
# functions' signatures. The same unchanged workflow hashes differently, and run(checkpoint_id=...)
# refuses a checkpoint whose hash differs.
AGENT_FRAMEWORK_SIGNATURE_CHANGED = Note(
    text="the workflow code is the same on both sides: the release changed how graph_signature_hash is "
    "computed (1.20.0: step identities instead of step names and bytecode), so the old checkpoint no longer matches",
    condition="resume refused the saved run saying it was created by a different version of workflow, "
    "and the run started before 1.20 and resumed on 1.20 or later",
    holds=lambda r: (
        r.message.startswith("refused the saved run")
        and "different version of workflow" in r.stderr
        and n.upgrade_crosses(r, "1.20")
    ),
)

# What each variant's FAIL may be explained by, kill-mid-tool and resume-after-upgrade alike.
_NOTES = {"swap": (AGENT_FRAMEWORK_SWAPPED, AGENT_FRAMEWORK_RECEIPTS_SWAPPED), "control": (), "sequential": ()}

CHECKOUT = FAMILY.built_in(
    "agent-framework",
    "agent_framework_checkout",
    flags=("variant",),
    variants=[Variant(options={"variant": variant}, notes=_NOTES[variant]) for variant in ("swap", "control")],
    result_ignore=("orders.idempotency_key",),
)

BUILT_INS = (CHECKOUT,)

# The tour (bare `plugpull`, docs/cli.md): per scenario a line its finding claims FAILs and one it claims PASSes, no
# timing line (tests/test_tour.py holds the claims to this); the verdicts are measured as on every line.
TOUR = (
    CHECKOUT.stop({"variant": "swap"}, "before-effect"),
    CHECKOUT.stop({"variant": "control"}, "before-effect"),
)

# resume-after-upgrade: "control" is the plain upgrade; "swap" also meets 1.20.0's new step-cache key;
# "sequential" has no concurrent call to one @step at all. 1.20.0's @step docstring: "Legacy order-based
# checkpoints replay sequential steps, but concurrent legacy cache hits fail explicitly". The two concurrent
# variants meet that documented limit; "sequential" (the orders one after the other) is the case the
# docstring says replays.
UPGRADE = FAMILY.built_in(
    "agent-framework",
    "agent_framework_checkout",
    flags=("variant",),
    variants=[
        Variant(options={"variant": variant}, notes=(*_NOTES[variant], AGENT_FRAMEWORK_SIGNATURE_CHANGED))
        for variant in ("swap", "control", "sequential")
    ],
    result_ignore=("orders.idempotency_key",),
)
