"""An OpenAI Agents SDK refund whose tool's outside call can fail: the built-in `openai-agents-tool-error` target.

    python -m plugpull.targets.openai_agents_tool_error HANDLING KEY [--two-tools] start|resume

``function_tool``'s default ``failure_error_function`` (agents/tool.py, ``default_tool_error_function``) turns an
exception in the tool into the tool's output, "An error occurred while running the tool. Please try again. Error:
...", which the model reads; the run goes on. The scripted model (HANDLING) then:

- ``to-model``: asks for the refund again once (a new function call with a new call id, as a real model does);
- ``to-model-give-up``: answers that the refund could not be done;
- ``timeout-to-model``: as ``to-model``, with the tool async and ``function_tool(timeout=1)`` (``FunctionTool.timeout_seconds``), the SDK's own
  tool timeout (its default ``timeout_behavior="error_as_result"`` gives "Tool 'refund' timed out after 1 seconds."
  to the model): the outside call runs in a thread (``asyncio.to_thread``), as an async tool wrapping a blocking
  client does, so a call that hangs is given up on while its thread still waits.

KEY is the refund's idempotency key: ``none``, or ``tool-call-id`` (``ToolContext.tool_call_id``, the model's call
id). With ``--two-tools`` the model asks for ``send_email`` (no key: a mail API takes none) and ``refund`` in one
turn; the SDK runs the two function calls concurrently (sync tools in threads), and the model asks again only for
what is not answered yet. The run is one ``Runner.run`` in start; resume of a finished run reports its outcome again. The result claims
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

HANDLINGS = ("to-model", "to-model-give-up", "timeout-to-model")
#: timeout-to-model: the SDK's per-call tool timeout (FunctionTool.timeout_seconds), in seconds.
TOOL_TIMEOUT = 1.0
KEYS = ("none", "tool-call-id")
#: The start of the SDK's default tool error message (default_tool_error_function), and of its default timeout
#: message (default_tool_timeout_error_message).
ERROR_OUTPUT = "An error occurred while running the tool"
TIMEOUT_OUTPUT = "Tool 'refund' timed out"


def is_error(output: str) -> bool:
    return output.startswith((ERROR_OUTPUT, TIMEOUT_OUTPUT))


DONE = "Refund for order A-1001 is done."
FAILED = "The refund could not be done."


def log(message: str) -> None:
    print(f"openai_agents_tool_error: {message}", file=sys.stderr, flush=True)


class RetryingModel(Model):
    """Asks for the refund; reads its output. An error output is asked again once, unless the model gives up."""

    def __init__(self, give_up: bool, two_tools: bool = False) -> None:
        self.give_up = give_up
        self.two_tools = two_tools

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        names = {field(i, "call_id"): field(i, "name") for i in items if field(i, "type") == "function_call"}
        outputs = [
            str(field(i, "output"))
            for i in items
            if field(i, "type") == "function_call_output" and names.get(field(i, "call_id")) == "refund"
        ]
        emailed = any(
            names.get(field(i, "call_id")) == "send_email" for i in items if field(i, "type") == "function_call_output"
        )
        errors = [o for o in outputs if is_error(o)]
        if outputs and (not is_error(outputs[-1]) or self.give_up or len(errors) >= 2):
            text = FAILED if is_error(outputs[-1]) else DONE
            return ModelResponse(output=[reply_message("msg_final", text)], usage=Usage(), response_id=None)
        call = ResponseFunctionToolCall(
            type="function_call",
            call_id=f"call_{secrets.token_hex(6)}",
            name="refund",
            arguments=json.dumps({"order": ORDER}),
            status="completed",
        )
        email = ResponseFunctionToolCall(
            type="function_call",
            call_id=f"call_{secrets.token_hex(6)}",
            name="send_email",
            arguments=json.dumps({"order": ORDER}),
            status="completed",
        )
        # As a real model would, it asks only for what is not answered yet.
        output = [email, call] if self.two_tools and not emailed else [call]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("this app runs Runner.run, not run_streamed")


def build_agent(handling: str, key: str, two_tools: bool = False) -> Agent:
    def refund_key(ctx: ToolContext[Any]) -> str | None:
        return ctx.tool_call_id if key == "tool-call-id" else None

    if handling == "timeout-to-model":

        @function_tool(timeout=TOOL_TIMEOUT)
        async def refund(ctx: ToolContext[Any], order: str) -> str:
            """Refund an order at the payment provider."""
            await asyncio.to_thread(record_effect, "refund", key=refund_key(ctx))  # plugpull: may raise or hang
            return f"refunded {order}"

    else:

        @function_tool
        def refund(ctx: ToolContext[Any], order: str) -> str:
            """Refund an order at the payment provider."""
            record_effect("refund", key=refund_key(ctx))  # plugpull: may raise
            return f"refunded {order}"

    @function_tool
    def send_email(order: str) -> str:
        """Tell the customer the order is being refunded."""
        record_effect("send_email")  # plugpull: the mail API takes no key
        return f"emailed the customer of {order}"

    model = RetryingModel(give_up=handling == "to-model-give-up", two_tools=two_tools)
    tools = [send_email, refund] if two_tools else [refund]
    return Agent(name="Refunds", instructions="Refund the order the user names.", model=model, tools=tools)


def email_claim(items: list[Any]) -> str:
    """What the run's items say of send_email: done when its last output is not the SDK's error message."""
    raws = [getattr(i, "raw_item", None) for i in items]
    emails = {
        field(r, "call_id") for r in raws if field(r, "type") == "function_call" and field(r, "name") == "send_email"
    }
    outputs = [
        str(field(r, "output"))
        for r in raws
        if field(r, "type") == "function_call_output" and field(r, "call_id") in emails
    ]
    return "done" if outputs and not is_error(outputs[-1]) else "failed"


def outcome(answer: str, email: str | None = None) -> dict[str, Any]:
    claims = {"refund": "done" if answer == DONE else "failed"}
    if email is not None:
        claims = {"send_email": email, **claims}
    return {"answer": answer, "claims": claims}


async def run(phase: str, agent: Agent, two_tools: bool = False) -> int:
    done = workdir() / "outcome.json"
    if phase == "resume":
        if not done.exists():
            log("nothing to resume: the run never ended")
            return 1
        record_result(json.loads(done.read_text()))  # plugpull: a finished run's outcome, again
        return 0
    result = await Runner.run(agent, f"Refund order {ORDER}, please.")
    value = outcome(str(result.final_output), email_claim(result.new_items) if two_tools else None)
    done.write_text(json.dumps(value))
    record_result(value)  # plugpull: what the final answer tells the user
    log(f"done: {result.final_output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    two_tools = "--two-tools" in argv
    argv = [a for a in argv if a != "--two-tools"]
    if len(argv) != 3 or argv[0] not in HANDLINGS or argv[1] not in KEYS or argv[2] not in ("start", "resume"):
        print(
            f"usage: python -m plugpull.targets.openai_agents_tool_error {{{','.join(HANDLINGS)}}} "
            f"{{{','.join(KEYS)}}} [--two-tools] {{start,resume}}",
            file=sys.stderr,
        )
        return 2
    set_tracing_disabled(True)
    announce(framework="openai-agents", version=importlib.metadata.version("openai-agents"))  # plugpull
    return asyncio.run(run(argv[2], build_agent(argv[0], argv[1], two_tools), two_tools))


if __name__ == "__main__":
    sys.exit(main())
