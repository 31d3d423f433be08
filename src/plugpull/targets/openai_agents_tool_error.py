"""An OpenAI Agents SDK refund whose tool's outside call can fail: the built-in `openai-agents-tool-error` target.

    python -m plugpull.targets.openai_agents_tool_error HANDLING KEY start|resume

``function_tool``'s default ``failure_error_function`` (agents/tool.py, ``default_tool_error_function``) turns an
exception in the tool into the tool's output, "An error occurred while running the tool. Please try again. Error:
...", which the model reads; the run goes on. The scripted model (HANDLING) then:

- ``to-model``: asks for the refund again once (a new function call with a new call id, as a real model does);
- ``to-model-give-up``: answers that the refund could not be done.

KEY is the refund's idempotency key: ``none``, or ``tool-call-id`` (``ToolContext.tool_call_id``, the model's call
id). The run is one ``Runner.run`` in start; resume of a finished run reports its outcome again. The result claims
what the final answer tells the user (docs/agent-protocol.md, "Tool errors").
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import secrets
import sys
from typing import Any

from agents.tool_context import ToolContext
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall

from agents import Agent, Model, ModelResponse, Runner, function_tool, set_tracing_disabled
from plugpull.client import announce, record_effect, record_result
from plugpull.targets.openai_agents_support import (
    ORDER,
    field,
    plugpull_prefork,  # noqa: F401 (--fork-server's hook)
    reply_message,
    workdir,
)

HANDLINGS = ("to-model", "to-model-give-up")
KEYS = ("none", "tool-call-id")
#: The start of the SDK's default tool error message (default_tool_error_function).
ERROR_OUTPUT = "An error occurred while running the tool"
DONE = "Refund for order A-1001 is done."
FAILED = "The refund could not be done."


def log(message: str) -> None:
    print(f"openai_agents_tool_error: {message}", file=sys.stderr, flush=True)


class RetryingModel(Model):
    """Asks for the refund; reads its output. An error output is asked again once, unless the model gives up."""

    def __init__(self, give_up: bool) -> None:
        self.give_up = give_up

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        outputs = [str(field(i, "output")) for i in items if field(i, "type") == "function_call_output"]
        errors = [o for o in outputs if o.startswith(ERROR_OUTPUT)]
        if outputs and (not outputs[-1].startswith(ERROR_OUTPUT) or self.give_up or len(errors) >= 2):
            text = FAILED if outputs[-1].startswith(ERROR_OUTPUT) else DONE
            return ModelResponse(output=[reply_message("msg_final", text)], usage=Usage(), response_id=None)
        call = ResponseFunctionToolCall(
            type="function_call",
            call_id=f"call_{secrets.token_hex(6)}",
            name="refund",
            arguments=json.dumps({"order": ORDER}),
            status="completed",
        )
        return ModelResponse(output=[call], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("this app runs Runner.run, not run_streamed")


def build_agent(handling: str, key: str) -> Agent:
    @function_tool
    def refund(ctx: ToolContext[Any], order: str) -> str:
        """Refund an order at the payment provider."""
        record_effect("refund", key=ctx.tool_call_id if key == "tool-call-id" else None)  # plugpull: may raise
        return f"refunded {order}"

    model = RetryingModel(give_up=handling == "to-model-give-up")
    return Agent(name="Refunds", instructions="Refund the order the user names.", model=model, tools=[refund])


def outcome(answer: str) -> dict[str, Any]:
    return {"answer": answer, "claims": {"refund": "done" if answer == DONE else "failed"}}


async def run(phase: str, agent: Agent) -> int:
    done = workdir() / "outcome.json"
    if phase == "resume":
        if not done.exists():
            log("nothing to resume: the run never ended")
            return 1
        record_result(json.loads(done.read_text()))  # plugpull: a finished run's outcome, again
        return 0
    result = await Runner.run(agent, f"Refund order {ORDER}, please.")
    value = outcome(str(result.final_output))
    done.write_text(json.dumps(value))
    record_result(value)  # plugpull: what the final answer tells the user
    log(f"done: {result.final_output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 3 or argv[0] not in HANDLINGS or argv[1] not in KEYS or argv[2] not in ("start", "resume"):
        print(
            f"usage: python -m plugpull.targets.openai_agents_tool_error {{{','.join(HANDLINGS)}}} "
            f"{{{','.join(KEYS)}}} {{start,resume}}",
            file=sys.stderr,
        )
        return 2
    set_tracing_disabled(True)
    announce(framework="openai-agents", version=importlib.metadata.version("openai-agents"))  # plugpull
    return asyncio.run(run(argv[2], build_agent(argv[0], argv[1])))


if __name__ == "__main__":
    sys.exit(main())
