"""Standalone reproduction of microsoft/agent-framework#8292 with a real SIGKILL (no plugpull).

    python findings/agent-framework-8292/standalone.py [--variant swap|control] [--kill before-charge|after-charge]

Needs only agent-framework-core. A functional workflow checks out orders A and B at once
(asyncio.gather). Each order opens a payment with the same ``@step open_payment`` (it draws the
payment's idempotency key, so a restart reuses it from the checkpoint) and charges it with the same
``@step capture_payment``. The "card network" is a ledger file that, like a real payment API, makes
one charge per idempotency key.

The script runs itself twice as child processes in a fresh directory:
  1. ``_phase start``: the first capture_payment call SIGKILLs its own process
     (``os.kill(os.getpid(), SIGKILL)``), before or after writing the charge (--kill).
  2. ``_phase resume``: ``FileCheckpointStorage.get_latest(workflow_name=...)`` then
     ``run(checkpoint_id=...)``, the framework's own restore.
In ``swap`` the orders reach open_payment in the opposite order on resume (B first), in ``control``
in the same order. Each customer owes exactly one charge.

Exit code: 0 every customer was charged exactly once; 1 the bug reproduced (a customer charged 0 or
2+ times); 2 the run did not go as designed (start not killed by SIGKILL, resume failed).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from agent_framework import FileCheckpointStorage, step, workflow

WORKFLOW_NAME = "checkout_two_orders"
ORDERS = ["A", "B"]
ARRIVAL = {
    ("swap", "start"): ("A", "B"),
    ("swap", "resume"): ("B", "A"),
    ("control", "start"): ("A", "B"),
    ("control", "resume"): ("A", "B"),
}
# Set by the child from its argv before the run; read at run time so start and resume run
# identical workflow code (a changed body fails restore on graph_signature_hash).
STATE = {"phase": "start", "kill": "before-charge", "arrival": ("A", "B"), "ledger": Path("ledger.jsonl")}


def charge_card(customer: str, key: str) -> None:
    """The card network: one charge per idempotency key, appended to the ledger."""
    ledger: Path = STATE["ledger"]
    seen = {json.loads(line)["key"] for line in ledger.read_text().splitlines()} if ledger.exists() else set()
    if key in seen:
        return
    with ledger.open("a") as f:
        f.write(json.dumps({"customer": customer, "key": key, "phase": STATE["phase"]}) + "\n")
        f.flush()
        os.fsync(f.fileno())


@step
async def open_payment(order_id: str) -> dict:
    return {"order_id": order_id, "customer": order_id, "idempotency_key": f"pay_{order_id}_{uuid.uuid4().hex[:12]}"}


@step
async def capture_payment(payment: dict) -> str:
    if STATE["phase"] == "start" and STATE["kill"] == "before-charge":
        os.kill(os.getpid(), signal.SIGKILL)
    charge_card(payment["customer"], payment["idempotency_key"])
    if STATE["phase"] == "start" and STATE["kill"] == "after-charge":
        os.kill(os.getpid(), signal.SIGKILL)
    return f"charged customer {payment['customer']} ({payment['idempotency_key']})"


async def checkout(order_id: str, first_done: asyncio.Event) -> str:
    first, second = STATE["arrival"]
    if order_id == second:
        # Deterministic order, not a race: the second order's pre-payment work ends once the
        # first has opened its payment (in real life: work whose duration differs after a restart).
        await first_done.wait()
    payment = await open_payment(order_id)
    print(
        f"  {STATE['phase']}: order {order_id} got a payment for customer {payment['customer']} "
        f"({payment['idempotency_key']})",
        flush=True,
    )
    if order_id == first:
        first_done.set()
    return await capture_payment(payment)


@workflow(name=WORKFLOW_NAME)
async def checkout_two_orders(orders: list) -> dict:
    first_done = asyncio.Event()
    receipts = await asyncio.gather(*(checkout(o, first_done) for o in orders))
    return dict(zip(orders, receipts, strict=True))


async def run_phase(workdir: Path) -> None:
    storage = FileCheckpointStorage(str(workdir / "checkpoints"))
    wf = checkout_two_orders.build(checkpoint_storage=storage)
    if STATE["phase"] == "start":
        await wf.run(list(ORDERS))
        return
    latest = await storage.get_latest(workflow_name=WORKFLOW_NAME)
    if latest is None:
        raise SystemExit("resume: no checkpoint to resume from")
    result = await wf.run(checkpoint_id=latest.checkpoint_id)
    for event in result:
        if event.type == "executor_bypassed":  # a @step whose saved result was reused
            print(f"  resume: {event.executor_id} replayed from the checkpoint: customer {event.data['customer']}")
    for order, receipt in result.get_outputs()[0].items():
        print(f"  resume: order {order} -> {receipt}")


def child(phase: str, variant: str, kill: str, workdir: Path) -> int:
    STATE.update(phase=phase, kill=kill, arrival=ARRIVAL[variant, phase], ledger=workdir / "ledger.jsonl")
    asyncio.run(run_phase(workdir))
    return 0


def parent(variant: str, kill: str) -> int:
    version = importlib.metadata.version("agent-framework-core")
    print(f"agent-framework-core {version}, Python {platform.python_version()}, variant {variant}, kill {kill}")
    with tempfile.TemporaryDirectory(prefix="af8292-") as tmp:
        workdir = Path(tmp)

        def spawn(phase: str) -> subprocess.CompletedProcess:
            argv = [sys.executable, __file__, "--variant", variant, "--kill", kill, "_phase", phase, str(workdir)]
            return subprocess.run(argv, capture_output=True, text=True, timeout=120)

        start = spawn("start")
        print(start.stdout, end="")
        if start.returncode != -signal.SIGKILL:
            print(f"NOT AS DESIGNED: start exited {start.returncode}, not killed by SIGKILL\n{start.stderr}")
            return 2
        print(f"  start: killed by SIGKILL inside capture_payment (returncode {start.returncode})")
        resume = spawn("resume")
        print(resume.stdout, end="")
        if resume.returncode != 0:
            print(f"NOT AS DESIGNED: resume exited {resume.returncode}\n{resume.stderr.strip()[-2000:]}")
            return 2
        ledger = workdir / "ledger.jsonl"
        rows = [json.loads(line) for line in ledger.read_text().splitlines()] if ledger.exists() else []
    counts = {o: sum(1 for r in rows if r["customer"] == o) for o in ORDERS}
    print("charges per customer (each owes 1): " + ", ".join(f"{o}={n}" for o, n in counts.items()))
    wrong = {o: n for o, n in counts.items() if n != 1}
    if not wrong:
        print("OK: every customer charged exactly once")
        return 0
    parts = [f"customer {o} never charged" if n == 0 else f"customer {o} charged {n} times" for o, n in wrong.items()]
    print("BUG REPRODUCED (microsoft/agent-framework#8292): " + "; ".join(parts))
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("swap", "control"), default="swap")
    parser.add_argument("--kill", choices=("before-charge", "after-charge"), default="before-charge")
    parser.add_argument("internal", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.internal:
        _, phase, workdir = args.internal
        return child(phase, args.variant, args.kill, Path(workdir))
    return parent(args.variant, args.kill)


if __name__ == "__main__":
    sys.exit(main())
