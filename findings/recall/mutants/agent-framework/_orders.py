"""A functional workflow for the Agent Framework checks: open a payment per order (a @step), then fail or finish.

Run 1 opens A then B, and a later step fails (a crash after the per-step checkpoints); run 2 restores the latest
checkpoint with the orders arriving in ORDER, and returns which payment each order got.
"""

import asyncio
import uuid
import warnings

warnings.filterwarnings("ignore")  # functional workflows are experimental: one warning per decorator

from agent_framework import FileCheckpointStorage, step, workflow  # noqa: E402

STATE = {"order": ("A", "B"), "fail": True, "opened": 0}


@step
async def open_payment(order_id: str) -> dict:
    STATE["opened"] += 1
    return {"order_id": order_id, "key": f"pay_{order_id}_{uuid.uuid4().hex[:8]}"}


@step
async def finish() -> str:
    if STATE["fail"]:
        raise RuntimeError("crash after the payments opened")
    return "done"


@workflow(name="orders")
async def orders(names: list) -> dict:
    payments = {}
    for name in STATE["order"]:
        payments[name] = await open_payment(name)
    await finish()
    return payments


def two_runs(resume_order: tuple[str, str]) -> tuple[dict, int]:
    """(what each order got after the restore, how many times open_payment ran in all)."""

    async def main():
        storage = FileCheckpointStorage("checkpoints")
        try:
            await orders.build(checkpoint_storage=storage).run(["A", "B"])
        except Exception:
            pass
        STATE.update(order=resume_order, fail=False)
        latest = await storage.get_latest(workflow_name="orders")
        if latest is None:
            return {}, STATE["opened"]
        result = await orders.build(checkpoint_storage=storage).run(checkpoint_id=latest.checkpoint_id)
        outputs = result.get_outputs()
        return (outputs[-1] if outputs else {}), STATE["opened"]

    return asyncio.run(main())
