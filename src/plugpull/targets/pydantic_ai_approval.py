"""A Pydantic AI refund agent whose tool needs a human's approval: the built-in `pydantic-ai-approval` target.

    python -m plugpull.targets.pydantic_ai_approval start|approve|recover

The agent of the `pydantic-ai` target (plugpull.targets.pydantic_ai_support: ``DBOSAgent`` over a
scripted offline ``FunctionModel``, DBOS's system database in SQLite in $PLUGPULL_WORKDIR) with the refund tool
declared ``requires_approval=True``: Pydantic AI's deferred tools. The model's call to it ends the
run with a ``DeferredToolRequests`` output; a new run with the original run's message history and
``deferred_tool_results=DeferredToolResults(approvals={tool_call_id: True})`` continues it where it
left off and runs the tool (Pydantic AI docs, "Deferred Tools"). The tool calls
``record_effect("refund")`` with no key, so the framework's own behaviour shows.

start:   the run, as DBOS workflow ``refund-A-1001``; it ends with ``DeferredToolRequests``. The app
         keeps the message history in $PLUGPULL_WORKDIR/messages.json (``ModelMessagesTypeAdapter``,
         as the "Messages and chat history" docs store it), written before start exits 0.
approve: from that file alone: the pending call's id, then the approving run under workflow id
         ``approve-<tool_call_id>`` (one DBOS workflow per approval, so DBOS can recover it and an
         app can find it again). Pydantic AI and DBOS document no refusal of a second approval, so
         this never exits 3.
recover: what an app does after a crash: ``DBOS.launch()`` recovers this executor's pending
         workflows of the same application version by itself, then the approval's workflow is
         waited on (``DBOS.retrieve_workflow(id).get_result()``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys

from dbos import SetWorkflowID
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, RunContext
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ToolCallPart, ToolReturnPart
from pydantic_core import to_jsonable_python

from plugpull.client import PAUSED_AGAIN_EXIT, announce, gate, record_effect, record_result  # plugpull
from plugpull.targets.pydantic_ai_support import (
    REQUEST,
    durable,
    plugpull_prefork,  # noqa: F401 (--fork-server's hook)
    scripted_model,
    workdir,
    workflow_output,
)

WORKFLOW_ID = "refund-A-1001"
APP_VERSION = "refunds-approval-1"
MESSAGES = "messages.json"


def log(message: str) -> None:
    print(f"pydantic_ai_approval: {message}", file=sys.stderr, flush=True)


agent = Agent(
    scripted_model(log),
    name="refund_approval_agent",
    instructions="Refund the order the customer names.",
    output_type=[str, DeferredToolRequests],
)


@agent.tool(requires_approval=True)
def refund(ctx: RunContext[None], order_id: str, cents: int) -> str:
    """Refund an order at the payment provider (runs only once a human approved the call)."""
    log(f"refund runs for call {ctx.tool_call_id}")
    record_effect("refund")  # plugpull: the side effect, after the approval
    return f"refunded {cents} cents on order {order_id}"


def pending_approval(messages: list[ModelMessage]) -> str | None:
    """The id of the last call to ``refund`` that no message answered yet."""
    answered = {p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolReturnPart)}
    calls = [
        p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolCallPart) and p.tool_name == "refund"
    ]
    pending = [c for c in calls if c not in answered]
    return pending[-1] if pending else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=("start", "approve", "recover"))
    args = parser.parse_args(argv)
    announce(framework="pydantic-ai-slim", version=importlib.metadata.version("pydantic-ai-slim"))  # plugpull
    history = workdir() / MESSAGES
    with durable(agent, name="plugpull-refund-approvals", application_version=APP_VERSION) as dbos_agent:
        if args.phase == "start":
            with SetWorkflowID(WORKFLOW_ID):
                result = dbos_agent.run_sync(REQUEST)
            if not isinstance(result.output, DeferredToolRequests) or not result.output.approvals:
                log(f"start did not end with an approval request: {result.output!r}")
                return 1
            tmp = history.with_suffix(".tmp")
            tmp.write_text(json.dumps(to_jsonable_python(result.all_messages())))
            os.replace(tmp, history)
            log(f"paused for approval of {[c.tool_call_id for c in result.output.approvals]}")
            return 0
        if not history.exists():
            log(f"no saved message history in {history.parent}")
            return 2
        messages = ModelMessagesTypeAdapter.validate_python(json.loads(history.read_text()))
        call_id = pending_approval(messages)
        if call_id is None:
            log("no pending approval in the saved message history")
            return 1
        approval_id = f"approve-{call_id}"
        if args.phase == "approve":
            gate()  # plugpull: racing approvers are released together here
            with SetWorkflowID(approval_id):
                result = dbos_agent.run_sync(
                    message_history=messages,
                    deferred_tool_results=DeferredToolResults(approvals={call_id: True}),
                )
            final = result.output
        else:
            final = workflow_output(approval_id, log, "recover")
    if isinstance(final, DeferredToolRequests):  # the approved run asks for approval again: it did not finish
        log(f"paused again: approvals pending for {[c.tool_call_id for c in final.approvals]}")
        return PAUSED_AGAIN_EXIT
    log(f"done: {final}")
    record_result({"answer": final})  # plugpull: the run's outcome, compared with the clean approval's
    print(final, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
