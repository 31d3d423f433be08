"""The app of the built-in `pydantic-ai-temporal` target: a Pydantic AI agent made durable with ``TemporalAgent``.

A Pydantic AI ``Agent`` with one function tool, ``refund``, and a scripted offline model (``FunctionModel``: it asks
for the refund until the conversation holds the tool's answer, with a new tool call id each time, as an LLM would),
wrapped in ``pydantic_ai.durable_exec.temporal.TemporalAgent`` and run by a Temporal workflow. ``TemporalAgent``
runs the model request and the tool call as Temporal activities; Pydantic AI's docs: "Activity code faces no
restrictions on I/O or external interactions, but if an activity fails part-way through it is restarted from the
beginning" (https://ai.pydantic.dev/durable_execution/temporal/). With ``key`` set to ``tool-call-id`` the tool
passes the model's tool call id as the refund's idempotency key: the model request's activity result is in the
workflow's history, so a retried tool call carries the same id.

The activities get the same short timeout and retry policy as the `temporal` target (plugpull.targets.temporal_app),
so that a killed worker's attempt is retried within seconds.
"""

from __future__ import annotations

import sys
import uuid
import warnings

from temporalio import workflow
from temporalio.workflow import ActivityConfig

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.durable_exec.temporal import TemporalAgent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from plugpull.client import record_effect  # plugpull
    from plugpull.targets.temporal_app import RETRY, START_TO_CLOSE

TASK_QUEUE = "refund-agent"
WORKFLOW_ID = "refund-agent-A-1001"
REQUEST = "Please refund order A-1001."
#: Which key the tool passes: set by the worker's process (its phase's --key) before the worker starts.
key_variant = "none"


def log(message: str) -> None:
    print(f"pydantic_ai_temporal: {message}", file=sys.stderr, flush=True)


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model: ask for the refund until the conversation holds the tool's answer."""
    answered = any(isinstance(part, ToolReturnPart) for message in messages for part in message.parts)
    if answered:
        return ModelResponse(parts=[TextPart("Refund for order A-1001 is done.")])
    call = ToolCallPart("refund", {"order_id": "A-1001", "cents": 1999}, tool_call_id=f"call_{uuid.uuid4().hex[:16]}")
    log(f"model asks for {call.tool_call_id}")
    return ModelResponse(parts=[call])


agent = Agent(FunctionModel(respond), name="refund_agent", instructions="Refund the order the customer names.")


@agent.tool
def refund(ctx: RunContext[None], order_id: str, cents: int) -> str:
    """Refund an order at the payment provider."""
    key = ctx.tool_call_id if key_variant == "tool-call-id" else None
    log(f"refund runs for call {ctx.tool_call_id} with key {key}")
    record_effect("refund", key=key)  # plugpull: where the payment API call goes
    return f"refunded {cents} cents on order {order_id}"


with warnings.catch_warnings():
    # Newer releases deprecate TemporalAgent in favour of the TemporalDurability capability; it still works, and it is
    # what every release since the integration's first names.
    warnings.simplefilter("ignore")
    temporal_agent = TemporalAgent(
        agent, activity_config=ActivityConfig(start_to_close_timeout=START_TO_CLOSE, retry_policy=RETRY)
    )


@workflow.defn
class RefundAgentWorkflow:
    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await temporal_agent.run(prompt)
        return result.output
