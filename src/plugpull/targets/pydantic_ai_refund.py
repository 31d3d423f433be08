"""A Pydantic AI refund agent made durable with DBOS (``DBOSAgent``): the built-in `pydantic-ai` target.

    python -m plugpull.targets.pydantic_ai_refund [--key none|tool-call-id] [--two-tools] start|resume

A Pydantic AI ``Agent`` with one function tool and a scripted offline model (``FunctionModel``:
it asks for the refund until the conversation holds the tool's answer, with a new tool call id
each time, as an LLM would), wrapped in ``pydantic_ai.durable_exec.dbos.DBOSAgent``; DBOS keeps its
system database in SQLite in $PLUGPULL_WORKDIR. The model and the DBOS setup are
plugpull.targets.pydantic_ai_support's, shared with the `pydantic-ai-approval` target.

``DBOSAgent``'s docstring says it makes the agent durable "by automatically offloading model
requests, tool calls, and MCP server communication to DBOS steps"; the source runs function tools
inline in the workflow ("DBOS runs function tools inline"). Which one holds decides what a kill
inside the tool does: a finished model request is replayed from the system database either way, so
the resumed run asks for the same tool call (same ``tool_call_id``), and the tool runs again.

``--two-tools``: the model's first turn asks for ``send_email`` (no key: a mail API takes none) and the refund,
two tool calls of one response (for tool-error's parallel-one-raised).

start:  ``DBOS.launch()``, then ``agent.run_sync(prompt)`` under ``SetWorkflowID``.
resume: ``DBOS.launch()`` (recovers this executor's pending workflows of the same application
        version), then ``DBOS.retrieve_workflow(id).get_result()``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys

from dbos import SetWorkflowID
from pydantic_ai import Agent, RunContext

from plugpull.client import announce, record_effect, record_result  # plugpull
from plugpull.targets.pydantic_ai_support import (
    REQUEST,
    durable,
    plugpull_prefork,  # noqa: F401 (--fork-server's hook)
    scripted_model,
    workflow_output,
)

WORKFLOW_ID = "refund-A-1001"
APP_VERSION = "refunds-1"
_key_variant = "none"


def log(message: str) -> None:
    print(f"pydantic_ai_refund: {message}", file=sys.stderr, flush=True)


def make_agent(two_tools: bool) -> Agent:
    built = Agent(
        scripted_model(log, two_tools), name="refund_agent", instructions="Refund the order the customer names."
    )
    built.tool(refund)
    if two_tools:
        built.tool(send_email)
    return built


def send_email(ctx: RunContext[None], order_id: str) -> str:
    """Tell the customer the order is being refunded."""
    record_effect("send_email")  # plugpull: the mail API takes no key
    return f"emailed the customer of order {order_id}"


def refund(ctx: RunContext[None], order_id: str, cents: int) -> str:
    """Refund an order at the payment provider."""
    key = ctx.tool_call_id if _key_variant == "tool-call-id" else None
    log(f"refund runs for call {ctx.tool_call_id}")
    record_effect("refund", key=key)  # plugpull: where the payment API call goes
    return f"refunded {cents} cents on order {order_id}"


def main(argv: list[str] | None = None) -> int:
    global _key_variant
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", choices=("none", "tool-call-id"), default="none")
    parser.add_argument("--two-tools", action="store_true", help="send_email and refund in one model turn")
    parser.add_argument("phase", choices=("start", "resume"))
    args = parser.parse_args(argv)
    _key_variant = args.key
    announce(framework="pydantic-ai-slim", version=importlib.metadata.version("pydantic-ai-slim"))  # plugpull
    agent = make_agent(args.two_tools)
    with durable(agent, name="plugpull-refunds", application_version=APP_VERSION) as dbos_agent:
        if args.phase == "start":
            with SetWorkflowID(WORKFLOW_ID):
                final = dbos_agent.run_sync(REQUEST).output
        else:
            final = workflow_output(WORKFLOW_ID, log, "resume")
    record_result({"answer": final})  # plugpull: the run's outcome, compared with the clean run's
    print(final, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
