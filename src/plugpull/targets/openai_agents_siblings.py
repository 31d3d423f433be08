"""An OpenAI Agents SDK app whose model asks for two tools in one turn: the `openai-agents-siblings` target.

    python -m plugpull.targets.openai_agents_siblings [--approval both|charge_card] start|resume

The scripted offline model answers the first turn with two function calls in one response,
``send_email`` (the mail API takes no key) and ``charge_card`` (keyed by the SDK's tool call id,
``ToolContext.tool_call_id``). The SDK runs the function tools of one response as concurrent
asyncio tasks; each tool awaits its blocking API call in a thread (``asyncio.to_thread``), as an
async tool over a blocking client does, so both calls are in flight at once.

A tool that needs approval (``function_tool(needs_approval=True)``) is what gives the app a durable
record to recover from, the way the SDK docs ("Human-in-the-loop", long-running approvals) describe:
the SDK saves nothing on its own while tools run. Two designs (``--approval``):

both:        both tools need approval. The app saves the approved state before either tool runs, so
             the snapshot holds neither output and a restore runs both again: a finished send_email
             is sent twice (where the app saves, not the SDK).
charge_card: only charge_card needs approval. The SDK runs send_email in the first turn and pauses
             on charge_card; send_email's output is in the state the app saves, and on restore the
             SDK skips every call whose output the state holds (``_function_output_exists`` in
             agents/run_internal/turn_resolution.py, 0.20.0 to 0.24.0).

start:  run to the approval(s); approve; save ``RunState.to_json()`` to $PLUGPULL_WORKDIR/approved.json;
        run the state to the end (the kill lands here).
resume: restore approved.json with ``await RunState.from_json(agent, saved)`` and run it again
        (the SDK's only way to continue a run it did not finish). A run that ended left its outcome in
        done.json: resume reports it and runs nothing (the approved state predates the tools, so running it
        again would send the email again).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import secrets
import sys
from pathlib import Path
from typing import Any

from agents.tool_context import ToolContext
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall

from agents import Agent, Model, ModelResponse, Runner, function_tool, set_tracing_disabled
from plugpull.client import announce, record_effect
from plugpull.targets.openai_agents_support import (
    field,
    finish,
    finished_already,
    load_state,
    phase_and_option,
    plugpull_prefork,  # noqa: F401 (--fork-server's hook)
    reply_message,
    save_state,
    workdir,
)

APPROVED = "approved.json"
DONE = "done.json"  # the run's outcome, written once it has ended
ORDER = "B-2002"


def log(message: str) -> None:
    print(f"openai_agents_siblings: {message}", file=sys.stderr, flush=True)


async def email(to: str) -> str:
    """Email the receipt to the customer."""
    await asyncio.to_thread(record_effect, "send_email")  # plugpull: the mail API has no idempotency key
    return f"receipt sent to {to}"


# One function, two tools: the same send_email with and without a human's approval (--approval).
send_email_approved = function_tool(email, name_override="send_email", needs_approval=True)
send_email_unattended = function_tool(email, name_override="send_email")


@function_tool(needs_approval=True)
async def charge_card(ctx: ToolContext[Any], cents: int) -> str:
    """Charge the customer's card."""
    await asyncio.to_thread(record_effect, "charge_card", key=ctx.tool_call_id)  # plugpull: keyed by call id
    return f"charged {cents} cents"


class TwoToolModel(Model):
    """Both tools in one response until the conversation holds their outputs, then a summary.

    Decides from the conversation (start and resume are two processes); new ids on every call.
    """

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        if not any(field(i, "type") == "function_call_output" for i in items):
            output: list[Any] = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"call_{secrets.token_hex(6)}",
                    name=name,
                    arguments=json.dumps(args),
                    status="completed",
                )
                for name, args in (("send_email", {"to": "b@example.com"}), ("charge_card", {"cents": 4200}))
            ]
        else:
            reply_id = f"msg_{secrets.token_hex(6)}"
            text = f"Charged the card and emailed the receipt (reply {reply_id})."
            output = [reply_message(reply_id, text)]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("this app runs Runner.run, not run_streamed")


APPROVALS = {"both": ["charge_card", "send_email"], "charge_card": ["charge_card"]}


def build_agent(approval: str) -> Agent:
    send_email = send_email_approved if approval == "both" else send_email_unattended
    return Agent(
        name="Orders",
        instructions="Charge the order and email the receipt.",
        model=TwoToolModel(),
        tools=[send_email, charge_card],
    )


async def start(agent: Agent, where: Path, approval: str) -> int:
    result = await Runner.run(agent, f"Charge order {ORDER} and email the receipt.")
    names = sorted(i.name for i in result.interruptions)
    if names != APPROVALS[approval]:
        log(f"expected approvals of {' and '.join(APPROVALS[approval])} in one turn, got {names}")
        return 1
    state = result.to_state()
    for item in state.get_interruptions():
        state.approve(item)
    save_state(state, where / APPROVED)
    return await finish(agent, state, log, done=where / DONE)


async def resume(agent: Agent, where: Path, approval: str) -> int:
    path = where / APPROVED
    if finished_already(where / DONE, log):
        return 0
    if not path.exists():
        log(f"nothing to resume: no {APPROVED}")
        return 1
    return await finish(agent, await load_state(agent, path), log, done=where / DONE)


PHASES = {"start": start, "resume": resume}


def main(argv: list[str] | None = None) -> int:
    phase, approval = phase_and_option(
        argv,
        PHASES,
        prog="python -m plugpull.targets.openai_agents_siblings",
        option="--approval",
        choices=tuple(APPROVALS),
    )
    set_tracing_disabled(True)
    announce(framework="openai-agents", version=importlib.metadata.version("openai-agents"))  # plugpull
    return asyncio.run(PHASES[phase](build_agent(approval), workdir(), approval))


if __name__ == "__main__":
    sys.exit(main())
