"""An OpenAI Agents SDK refund whose run is saved as RunState JSON before the tool runs: `openai-agents-runstate`.

    python -m plugpull.targets.openai_agents_runstate start
    python -m plugpull.targets.openai_agents_runstate resume

Made for resume-after-upgrade (a run saved by one release, restored by another): the SDK docs
("Human-in-the-loop", long-running approvals) make ``RunState.to_json()`` the durable record of a
paused run, to be restored later with ``await RunState.from_json(agent, saved)`` - by whatever
release the app runs then.

start:  ``Runner.run`` pauses on ``function_tool(needs_approval=True)``; the app approves, saves
        ``state.to_json()`` to ``$PLUGPULL_WORKDIR/state.json`` (the saved run), and runs the state on.
        The refund tool calls ``record_effect("refund", key=<the model's tool call id>)``: the
        call id is in the saved state, so a restored run that re-runs the tool reuses it.
resume: ``RunState.from_json(agent, saved)`` and ``Runner.run(agent, state)``: the SDK's way to continue.
        A state the SDK refuses to load raises out of ``from_json``: the traceback's last line is
        the SDK's own message.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import sys
from typing import Any

from agents.tool_context import ToolContext

from agents import Agent, Runner, function_tool, set_tracing_disabled
from plugpull.client import announce, record_effect
from plugpull.targets.openai_agents_support import (
    ORDER,
    ScriptedModel,
    finish,
    load_state,
    phase_and_option,
    plugpull_prefork,  # noqa: F401 (--fork-server's hook)
    save_state,
    workdir,
)

STATE_FILE = "state.json"


def log(message: str) -> None:
    print(f"openai_agents_runstate: {message}", file=sys.stderr, flush=True)


@function_tool(needs_approval=True)
def refund(ctx: ToolContext[Any], order: str) -> str:
    """Refund an order (a human approves first)."""
    record_effect("refund", key=ctx.tool_call_id)  # plugpull: the side effect, keyed by the saved call id
    return f"refunded {order}"


def build_agent() -> Agent:
    return Agent(name="Refunds", instructions="Refund the order the user names.", model=ScriptedModel(), tools=[refund])


async def start(agent: Agent) -> int:
    result = await Runner.run(agent, f"Refund order {ORDER}, please.")
    if len(result.interruptions) != 1:
        log(f"expected one approval interruption, got {len(result.interruptions)}")
        return 1
    state = result.to_state()
    state.approve(result.interruptions[0])
    save_state(state, workdir() / STATE_FILE)
    log(f"approved {result.interruptions[0].name}; state saved to {STATE_FILE}")
    return await finish(agent, state, log)


async def resume(agent: Agent) -> int:
    path = workdir() / STATE_FILE
    if not path.exists():
        log(f"nothing to resume: no {STATE_FILE}")
        return 1
    return await finish(agent, await load_state(agent, path), log)


PHASES = {"start": start, "resume": resume}


def main(argv: list[str] | None = None) -> int:
    phase, _ = phase_and_option(argv, PHASES, prog="python -m plugpull.targets.openai_agents_runstate")
    set_tracing_disabled(True)
    announce(framework="openai-agents", version=importlib.metadata.version("openai-agents"))  # plugpull
    return asyncio.run(PHASES[phase](build_agent()))


if __name__ == "__main__":
    sys.exit(main())
