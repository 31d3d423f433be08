"""The app of the built-in `temporal` target: a Temporal workflow that asks a scripted model, then refunds.

``RefundWorkflow`` runs two activities, as a user's agent on Temporal would:

1. ``plan``: the scripted model (no network): which order, how much, and a fresh request id drawn on every call,
   as an LLM's answer would be. Temporal records its result in the workflow's history once it returns, so a
   worker that replays the workflow later gets that result back instead of running it again.
2. ``refund``: the tool, which calls the payment provider (plugpull's ``record_effect``). With ``key`` set to
   ``run-activity`` the idempotency key is the one Temporal's docs name: "You can use a combination of the
   Workflow Run ID and the Activity ID as an idempotency key since this is guaranteed to be consistent across
   retry attempts but unique among Workflow Executions" (https://docs.temporal.io/activity-definition#idempotency).

Both are plain (synchronous) functions, run on the worker's thread pool: ``record_effect`` blocks.

The retry policy and timeouts are short so that a line takes seconds: Temporal "can't tell when a Worker crashes"
and relies on the start-to-close timeout "to know how long to wait before assuming that an Activity is
inactive" (same page, "Activity retry policy"); the activity itself takes milliseconds.
"""

from __future__ import annotations

import sys
import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from plugpull.client import record_effect  # plugpull

TASK_QUEUE = "refunds"
WORKFLOW_ID = "refund-A-1001"
ORDER = "A-1001"
#: How long an attempt may run before the server gives up on it and retries: the only way it learns of a
#: killed worker. Seconds, so that a line takes seconds; the activity itself takes milliseconds.
START_TO_CLOSE = timedelta(seconds=5)
RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200), backoff_coefficient=2.0, maximum_interval=timedelta(seconds=1)
)


def log(message: str) -> None:
    print(f"temporal_refund: {message}", file=sys.stderr, flush=True)


@activity.defn
def plan(order_id: str) -> dict:
    """The scripted model's answer: the refund to make, with a request id that differs on every call."""
    drafted = {"order_id": order_id, "cents": 1999, "request_id": f"rf_{uuid.uuid4().hex[:16]}"}
    log(f"plan ran (attempt {activity.info().attempt}): {drafted['request_id']}")
    return drafted


@activity.defn
def refund(drafted: dict, key_variant: str) -> str:
    """The tool: one refund at the payment provider."""
    info = activity.info()
    key = f"{info.workflow_run_id}/{info.activity_id}" if key_variant == "run-activity" else None
    log(f"refund activity runs (attempt {info.attempt}) with key {key}")
    record_effect("refund", key=key)  # plugpull: where the payment API call goes
    return f"refunded {drafted['cents']} cents on order {drafted['order_id']} ({drafted['request_id']})"


@workflow.defn
class RefundWorkflow:
    @workflow.run
    async def run(self, order_id: str, key_variant: str) -> str:
        drafted = await workflow.execute_activity(
            plan, order_id, start_to_close_timeout=START_TO_CLOSE, retry_policy=RETRY
        )
        return await workflow.execute_activity(
            refund, args=(drafted, key_variant), start_to_close_timeout=START_TO_CLOSE, retry_policy=RETRY
        )
