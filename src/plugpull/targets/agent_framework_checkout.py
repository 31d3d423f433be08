"""Checkout of two orders in a Microsoft Agent Framework functional workflow: the built-in `agent-framework` target.

Made for microsoft/agent-framework#8292.

    python -m plugpull.targets.agent_framework_checkout start  [--variant swap|control|sequential]
    python -m plugpull.targets.agent_framework_checkout resume [--variant swap|control|sequential]

start: run the ``checkout_two_orders`` workflow (``@workflow`` / ``@step``, FileCheckpointStorage in
$PLUGPULL_WORKDIR) on orders A and B at once (asyncio.gather). Each order opens a payment with the
same ``@step open_payment`` (no outside action; it draws the payment's idempotency key, so a restart
reuses it) and then charges it with the same ``@step capture_payment``, which calls
``record_effect(f"charge_card:{customer}", key=idempotency_key)``. resume: load
``storage.get_latest(workflow_name=...)`` and ``run(checkpoint_id=...)``, the framework's own way to
continue; when nothing was saved yet (killed before the first checkpoint), it starts the run over from
its input, as a correct app does. In ``swap`` the two orders reach ``open_payment`` in the opposite order
on resume; in ``control`` in the same order; ``sequential`` checks them out one after the other (no
concurrency: resume-after-upgrade, where agent-framework 1.20.0 documents that a concurrent legacy
cache hit fails but a sequential one replays).

Why the swapped step is ``open_payment`` and not the charge itself: plugpull holds the *first*
``record_effect`` call and kills right away, so no step that charges can have finished before the
kill. The finished step the checkpoint can hold is one that makes no outside action; its saved
result (whose card, which key) decides the charge made after the restart.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import re
import sys
import uuid
from pathlib import Path
from typing import Any

from agent_framework import FileCheckpointStorage, step, workflow

from plugpull.client import announce, boundary, import_present, record_effect, record_result  # plugpull

WORKFLOW_NAME = "checkout_two_orders"
ORDERS = ["A", "B"]
AMOUNT_CENTS = {"A": 1999, "B": 4999}

# Which order reaches open_payment first, per variant and phase. Set by main() before the run;
# read at run time (not baked into the workflow's code) so start and resume run byte-identical
# workflow code: a code change makes restore fail on graph_signature_hash.
ARRIVAL = {
    ("swap", "start"): ("A", "B"),
    ("swap", "resume"): ("B", "A"),
    ("control", "start"): ("A", "B"),
    ("control", "resume"): ("A", "B"),
    ("sequential", "start"): ("A", "B"),
    ("sequential", "resume"): ("A", "B"),
}
_arrival: tuple[str, str] = ("A", "B")
_concurrent = True


def say(line: str) -> None:
    print(line, flush=True)


@step
async def open_payment(order_id: str) -> dict:
    """Open a payment for the order: whose card, how much, and the idempotency key to charge it with.

    A step so that a restarted run gets the same key back from the checkpoint (the usual way
    to make a retried charge idempotent). No outside action here.
    """
    return {
        "order_id": order_id,
        "customer": order_id,  # each order is paid with its own customer's card
        "cents": AMOUNT_CENTS[order_id],
        "idempotency_key": f"pay_{order_id}_{uuid.uuid4().hex[:12]}",
    }


@step
async def capture_payment(payment: dict) -> str:
    """Charge the card named in ``payment`` with its idempotency key (the outside action).

    record_effect blocks the event loop on purpose: while it is held nothing else in this
    process moves, so the kill lands before the other order goes any further.
    """
    record_effect(f"charge_card:{payment['customer']}", key=payment["idempotency_key"])  # plugpull
    return f"charged {payment['cents']} cents to customer {payment['customer']} ({payment['idempotency_key']})"


class MarkedFileCheckpointStorage(FileCheckpointStorage):
    """The framework's FileCheckpointStorage, each save marked as a boundary for every-boundary.

    The framework's own ``save`` still writes the checkpoint; the mark only tells plugpull where
    the run is (and sends nothing outside every-boundary).
    """

    async def save(self, checkpoint: Any) -> Any:
        with boundary("checkpoint-save"):  # plugpull
            return await super().save(checkpoint)


async def prepare(order_id: str, first_done: asyncio.Event) -> None:
    """Per-order work before payment (stock, address, fraud check), modelled only by its duration.

    The order that comes second waits until the first one has its payment open. That makes the
    order in which the two reach open_payment certain, not a race; in a real deployment it is the
    duration of this work that differs between the first run and the restart (a warm cache, a
    cold one), or, as the issue notes, an earlier @step that replays from cache without suspending.
    """
    if order_id == _arrival[1]:
        await first_done.wait()


async def checkout(order_id: str, first_done: asyncio.Event) -> str:
    await prepare(order_id, first_done)
    with boundary("open-payment"):  # plugpull: a step a crash can land next to
        payment = await open_payment(order_id)
    say(f"order {order_id}: payment opened for customer {payment['customer']} ({payment['idempotency_key']})")
    if order_id == _arrival[0]:
        first_done.set()
    receipt = await capture_payment(payment)
    say(f"order {order_id}: {receipt}")
    return receipt


@workflow(name=WORKFLOW_NAME)
async def checkout_two_orders(orders: list) -> dict:
    first_done = asyncio.Event()
    if _concurrent:
        receipts = await asyncio.gather(*(checkout(o, first_done) for o in orders))
    else:
        receipts = [await checkout(o, first_done) for o in orders]
    return dict(zip(orders, receipts, strict=True))


async def run(phase: str, workdir: Path) -> int:
    storage = MarkedFileCheckpointStorage(str(workdir / "checkpoints"))
    wf = checkout_two_orders.build(checkpoint_storage=storage)
    latest = await storage.get_latest(workflow_name=WORKFLOW_NAME) if phase == "resume" else None
    if phase == "resume" and latest is None:
        # Killed before the first checkpoint: nothing durable exists, so the app starts the run over from
        # its input (run(checkpoint_id=...) has nothing to restore). Exiting 2 here instead
        # would read as stuck in the boundary map.
        say(f"resume: no checkpoint of {WORKFLOW_NAME} in {workdir}, starting over from the input")
    if latest is None:
        result = await wf.run(list(ORDERS))
    else:
        say(f"resume: from checkpoint {latest.checkpoint_id}")
        result = await wf.run(checkpoint_id=latest.checkpoint_id)
    for event in result:
        # executor_bypassed: a @step whose saved result was reused instead of running it.
        if event.type == "executor_bypassed":
            data = event.data
            said = data.get("customer") if isinstance(data, dict) else data
            say(f"{phase}: {event.executor_id} replayed from checkpoint (customer {said})")
    outputs = result.get_outputs()
    if not outputs:
        print(f"{phase}: the workflow finished without an output", file=sys.stderr)
        return 1
    record_result(outcome(outputs[-1]))  # plugpull: the run's outcome, compared with the clean run's
    return 0


def outcome(receipts: dict) -> dict:
    """The workflow's receipts as the run's result: per order, whose card was charged and how much.

    The idempotency key is drawn per run (Target.result_ignore leaves it out of the comparison).
    """
    orders = []
    for order_id, receipt in receipts.items():
        match = re.fullmatch(r"charged (\d+) cents to customer (\w+) \((\S+)\)", str(receipt))
        if match is None:
            orders.append({"order_id": order_id, "receipt": str(receipt)})
            continue
        cents, customer, key = match.groups()
        orders.append({"order_id": order_id, "customer": customer, "cents": int(cents), "idempotency_key": key})
    return {"orders": orders}


def main(argv: list[str] | None = None) -> int:
    global _arrival, _concurrent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=("start", "resume"))
    parser.add_argument("--variant", choices=("swap", "control", "sequential"), default="swap")
    args = parser.parse_args(argv)
    workdir = Path(os.environ.get("PLUGPULL_WORKDIR", "."))
    version = importlib.metadata.version("agent-framework-core")
    announce(framework="agent-framework-core", version=version)  # plugpull
    _arrival = ARRIVAL[args.variant, args.phase]
    _concurrent = args.variant != "sequential"
    return asyncio.run(run(args.phase, workdir))


#: What a phase imports on its first checkpoint write (Agent Framework's checkpoint encoding and what it
#: pickles with, the executor's queue), measured in forked phases of agent-framework-core 1.18.0.
FIRST_USE_IMPORTS = (
    "pickle",
    "queue",
    "concurrent.futures.thread",
    "agent_framework._workflows._checkpoint_encoding",
)


def plugpull_prefork(argv: list[str]) -> None:  # plugpull (optional): run once in --fork-server's server
    """Import once, before the fork, what every forked phase would import on its first checkpoint write.

    Returns None: the phase still runs this module afresh as ``__main__`` (the workflow's code, whose
    signature a restore checks, is defined as in a cold run). A module a release does not have is skipped.
    """
    import_present(*FIRST_USE_IMPORTS)


if __name__ == "__main__":
    sys.exit(main())
