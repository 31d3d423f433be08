"""The app of the built-in `openai-agents-temporal` target: an OpenAI Agents SDK agent run by a Temporal workflow.

The integration is Temporal's OpenAI Agents plugin (the PyPI distribution ``temporalio-openai-agents``, imported as
``temporalio.openai_agents``; temporalio 1.35's ``temporalio.contrib.openai_agents`` only re-exports it). Inside
the workflow, ``Runner.run`` is the plugin's runner: every model call is a Temporal activity
(``invoke_model_activity``, run on the worker by the model provider the plugin was given), and the tool is a
Temporal activity too, made a tool by ``workflow.activity_as_tool``. The integration's README ("Durable Execution"):
"Activity code faces no restrictions on I/O or external interactions, but if it fails part-way through it restarts
from the beginning" (https://github.com/temporalio/ai-integrations/tree/main/python/openai_agents); an activity whose
worker died before it reported is retried (https://docs.temporal.io/activity-definition#idempotency).

The model is scripted and offline (plugpull.targets.openai_agents_support.ScriptedModel: it asks for the refund
until the conversation holds the tool's output, with a new call id each time, then answers); it logs each call,
so a run's stderr shows whether the recovering worker asked it again or replayed its answer from the history.

``refund`` is a plain (synchronous) activity, run on the worker's thread pool: ``record_effect`` blocks. With
``key`` set to ``run-activity`` its idempotency key is the one Temporal's docs name, the workflow run id and the
activity id, as in the `temporal` target (plugpull.targets.temporal_app). The activities get that target's short
timeout and retry policy, so that a killed worker's attempt is retried within seconds.
"""

from __future__ import annotations

import sys
from typing import Any

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    from temporalio.openai_agents.workflow import activity_as_tool

    from agents import Agent, Model, ModelProvider, ModelResponse, RunConfig, Runner
    from plugpull.client import record_effect  # plugpull
    from plugpull.targets.openai_agents_support import ScriptedModel
    from plugpull.targets.temporal_app import RETRY, START_TO_CLOSE

TASK_QUEUE = "refund-openai-agent"
WORKFLOW_ID = "refund-openai-agent-A-1001"
REQUEST = "Please refund order A-1001."
#: Which key the tool passes: set by the worker's process (its phase's --key) before the worker starts.
key_variant = "none"


def log(message: str) -> None:
    print(f"openai_agents_temporal: {message}", file=sys.stderr, flush=True)


class LoggedModel(ScriptedModel):
    """The scripted model, saying on stderr what it answered: each line is one model activity that really ran."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        response = await super().get_response(system_instructions, input, *args, **kwargs)
        (item,) = response.output
        call_id = getattr(item, "call_id", None)
        log(f"model asks for refund {call_id}" if call_id else "model answers")
        return response


class ScriptedProvider(ModelProvider):
    """What the plugin's model activity asks for a model: the scripted one, whatever the agent names."""

    def get_model(self, model_name: str | None) -> Model:
        return LoggedModel()


@activity.defn
def refund(order: str) -> str:
    """Refund an order at the payment provider."""
    info = activity.info()
    key = f"{info.workflow_run_id}/{info.activity_id}" if key_variant == "run-activity" else None
    log(f"refund activity runs (attempt {info.attempt}, activity {info.activity_id}) with key {key}")
    record_effect("refund", key=key)  # plugpull: where the payment API call goes
    return f"refunded order {order}"


@workflow.defn
class RefundAgentWorkflow:
    @workflow.run
    async def run(self, prompt: str) -> str:
        agent = Agent(
            name="refund_agent",
            instructions="Refund the order the customer names.",
            tools=[activity_as_tool(refund, start_to_close_timeout=START_TO_CLOSE, retry_policy=RETRY)],
        )
        # No trace export: it would post to OpenAI's API (no key, no network here).
        result = await Runner.run(agent, prompt, run_config=RunConfig(tracing_disabled=True))
        return str(result.final_output)
