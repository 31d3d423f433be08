"""An OpenAI Agents SDK refund app with a tool that needs approval: the `openai-agents-approval` target.

    python -m plugpull.targets.openai_agents_approval [--design plain|claim-and-key] start|approve|recover

What the SDK docs ("Human-in-the-loop": long-running approvals) say an app does: the run
pauses on ``function_tool(needs_approval=True)``; the app saves ``result.to_state().to_json()``
and exits; later, another process restores it with ``await RunState.from_json(agent, saved)``,
calls ``state.approve(interruption)`` and ``Runner.run(agent, state)``. The scripted offline
model is the one of plugpull.targets.openai_agents_support (it decides from the conversation).

Two designs (``--design``), because a RunState is a snapshot the app stores: the docs promise no
claim on it and the SDK saves nothing while a tool runs:

plain:         the docs' steps and nothing more; the refund passes no idempotency key, so what a
               restore of the snapshot does shows (every restore runs the approved tool).
claim-and-key: what the app adds: approve first claims the stored pause (an atomic rename of
               paused.json to claimed.json; a loser exits 3, refused), and the refund is keyed by
               ``ToolContext.tool_call_id``, which the saved snapshot keeps, so a restore that runs the
               tool again refunds nothing new.

start:   run to the approval; save the paused state to $PLUGPULL_WORKDIR/paused.json; exit 0.
approve: restore the paused state (claimed first in claim-and-key), approve, save the approved state to
         approved.json (so a crash after the approval can be recovered), run to the end. In plain the
         SDK keeps no record of a resumed state and raises nothing like "already resumed", so this never
         exits 3.
recover: restore approved.json and run it again (the SDK's only way to continue). When approve died
         before it saved approved.json, the approval was never recorded and the run is still paused:
         recover applies it again to the paused (or claimed) state, as an app whose approvals arrive
         through a durable inbox does (a message is acknowledged only once the approved state is saved,
         so a crash before that redelivers it). A recover that gave up there ("nothing to
         recover") made the boundary map's "before state-save 1" lose the refund: the app's doing.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import sys
from pathlib import Path
from typing import Any

from agents.run_state import RunState
from agents.tool_context import ToolContext

from agents import Agent, Runner, function_tool, set_tracing_disabled
from plugpull.client import announce, boundary, gate, record_effect
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

PAUSED, CLAIMED, APPROVED = "paused.json", "claimed.json", "approved.json"
DESIGNS = ("plain", "claim-and-key")
REFUSED = 3  # docs/agent-protocol.md: approve refused (the pause was claimed by another approval)


def log(message: str) -> None:
    print(f"openai_agents_approval: {message}", file=sys.stderr, flush=True)


@function_tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order (a human approves first)."""
    record_effect("refund")  # plugpull: the side effect, after the approval
    return f"refunded {order}"


@function_tool(name_override="refund", needs_approval=True)
def keyed_refund(ctx: ToolContext[Any], order: str) -> str:
    """Refund an order (a human approves first)."""
    # The tool call id is in every RunState saved from the pause on: a restore repeats the same key.
    record_effect("refund", key=ctx.tool_call_id)  # plugpull: the side effect, keyed
    return f"refunded {order}"


class MarkedModel(ScriptedModel):
    """The scripted model, each call marked as a boundary for every-boundary (sends nothing elsewhere)."""

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        with boundary("model-call"):  # plugpull
            return await super().get_response(*args, **kwargs)


def build_agent(design: str) -> Agent:
    tool = keyed_refund if design == "claim-and-key" else refund
    return Agent(name="Refunds", instructions="Refund the order the user names.", model=MarkedModel(), tools=[tool])


def save(state: RunState, path: Path) -> None:
    with boundary("state-save"):  # plugpull: the app's own save of the SDK's RunState
        save_state(state, path)


async def start(agent: Agent, where: Path, design: str) -> int:
    result = await Runner.run(agent, f"Refund order {ORDER}, please.")
    if len(result.interruptions) != 1:
        log(f"expected one approval interruption, got {len(result.interruptions)}")
        return 1
    save(result.to_state(), where / PAUSED)
    log(f"paused for approval of {result.interruptions[0].name}")
    return 0


async def approved(agent: Agent, where: Path, pending: str) -> RunState | None:
    """The pending state with its approval applied and saved to approved.json (None: nothing to approve)."""
    state = await load_state(agent, where / pending)
    interruptions = state.get_interruptions()
    if not interruptions:
        log("the saved state has nothing to approve")
        return None
    for item in interruptions:
        state.approve(item)
    save(state, where / APPROVED)
    return state


async def approve(agent: Agent, where: Path, design: str) -> int:
    if design == "plain":
        state = await approved(agent, where, PAUSED)
        if state is None:
            return 1
        gate()  # plugpull: racing approvers are released together here
        return await finish(agent, state, log)
    gate()  # plugpull: racing approvers are released together here, before the claim they race for
    try:
        os.rename(where / PAUSED, where / CLAIMED)  # atomic: one approval takes the stored pause
    except FileNotFoundError:
        log(f"refused: no {PAUSED}, another approval claimed it")
        return REFUSED
    state = await approved(agent, where, CLAIMED)
    return 1 if state is None else await finish(agent, state, log)


async def recover(agent: Agent, where: Path, design: str) -> int:
    path = where / APPROVED
    if path.exists():
        return await finish(agent, await load_state(agent, path), log)
    pending = next((name for name in (CLAIMED, PAUSED) if (where / name).exists()), None)
    if pending is None:
        log(f"nothing to recover: no {APPROVED}, {CLAIMED} or {PAUSED}")
        return 1
    # approve died before it recorded the approval: the run is still paused; apply the approval again.
    log(f"no {APPROVED}: the approval was never saved; applying it again to {pending}")
    state = await approved(agent, where, pending)
    return 1 if state is None else await finish(agent, state, log)


PHASES = {"start": start, "approve": approve, "recover": recover}


def main(argv: list[str] | None = None) -> int:
    phase, design = phase_and_option(
        argv, PHASES, prog="python -m plugpull.targets.openai_agents_approval", option="--design", choices=DESIGNS
    )
    set_tracing_disabled(True)
    announce(framework="openai-agents", version=importlib.metadata.version("openai-agents"))  # plugpull
    return asyncio.run(PHASES[phase](build_agent(design), workdir(), design))


if __name__ == "__main__":
    sys.exit(main())
