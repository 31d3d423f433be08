"""An OpenAI Agents SDK refund app with a tool that needs approval: the `openai-agents-approval` target.

    python -m plugpull.targets.openai_agents_approval start|approve|recover

What the SDK docs ("Human-in-the-loop": long-running approvals) say an app does: the run
pauses on ``function_tool(needs_approval=True)``; the app saves ``result.to_state().to_json()``
and exits; later, another process restores it with ``await RunState.from_json(agent, saved)``,
calls ``state.approve(interruption)`` and ``Runner.run(agent, state)``. The refund tool calls
``record_effect("refund")`` with no key, so the SDK's own behaviour shows. The scripted offline
model is the one of plugpull.targets.openai_agents_app (it decides from the conversation).

start:   run to the approval; save the paused state to $PLUGPULL_WORKDIR/paused.json; exit 0.
approve: restore paused.json, approve, save the approved state to approved.json (so a crash
         after the approval can be recovered), run to the end. The SDK keeps no record of a
         resumed state and raises nothing like "already resumed", so this never exits 3.
recover: restore approved.json and run it again (the SDK's only way to continue). When approve died
         before it saved approved.json, the approval was never recorded and the run is still paused:
         recover applies it again to paused.json, as an app whose approvals arrive through a durable
         inbox does (a message is acknowledged only once the approved state is saved, so a crash before
         that redelivers it). Until issue 20 recover gave up there ("nothing to recover"), and the
         boundary map's "before state-save 1" lost the refund: the app's doing, not the SDK's.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Any

from agents.run_state import RunState

from agents import Agent, Runner, function_tool, set_tracing_disabled
from plugpull.client import announce, boundary, gate, record_effect, record_result
from plugpull.targets.openai_agents_app import ORDER, ScriptedModel, outcome, workdir

PAUSED, APPROVED = "paused.json", "approved.json"


def log(message: str) -> None:
    print(f"openai_agents_approval: {message}", file=sys.stderr, flush=True)


@function_tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order (a human approves first)."""
    record_effect("refund")  # plugpull: the side effect, after the approval
    return f"refunded {order}"


class MarkedModel(ScriptedModel):
    """The scripted model, each call marked as a boundary for every-boundary (sends nothing elsewhere)."""

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        with boundary("model-call"):  # plugpull
            return await super().get_response(*args, **kwargs)


def build_agent() -> Agent:
    return Agent(name="Refunds", instructions="Refund the order the user names.", model=MarkedModel(), tools=[refund])


def save(state: RunState, path: Path) -> None:
    with boundary("state-save"):  # plugpull: the app's own save of the SDK's RunState
        path.write_text(json.dumps(state.to_json()))


async def start(agent: Agent, where: Path) -> int:
    result = await Runner.run(agent, f"Refund order {ORDER}, please.")
    if len(result.interruptions) != 1:
        log(f"expected one approval interruption, got {len(result.interruptions)}")
        return 1
    save(result.to_state(), where / PAUSED)
    log(f"paused for approval of {result.interruptions[0].name}")
    return 0


async def approved(agent: Agent, where: Path) -> RunState | None:
    """The paused state with its approval applied and saved to approved.json (None: nothing to approve)."""
    state = await RunState.from_json(agent, json.loads((where / PAUSED).read_text()))
    interruptions = state.get_interruptions()
    if not interruptions:
        log("the saved state has nothing to approve")
        return None
    for item in interruptions:
        state.approve(item)
    save(state, where / APPROVED)
    return state


async def approve(agent: Agent, where: Path) -> int:
    state = await approved(agent, where)
    if state is None:
        return 1
    gate()  # plugpull: racing approvers are released together here
    return await finish(agent, state)


async def recover(agent: Agent, where: Path) -> int:
    path = where / APPROVED
    if path.exists():
        return await finish(agent, await RunState.from_json(agent, json.loads(path.read_text())))
    if not (where / PAUSED).exists():
        log(f"nothing to recover: no {APPROVED} and no {PAUSED}")
        return 1
    # approve died before it recorded the approval: the run is still paused; apply the approval again.
    log(f"no {APPROVED}: the approval was never saved; applying it again to {PAUSED}")
    state = await approved(agent, where)
    return 1 if state is None else await finish(agent, state)


async def finish(agent: Agent, state: RunState) -> int:
    result = await Runner.run(agent, state)
    record_result(outcome(result.final_output))  # plugpull: the run's outcome
    log(f"done: {result.final_output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    phases = {"start": start, "approve": approve, "recover": recover}
    if len(argv) != 1 or argv[0] not in phases:
        print("usage: python -m plugpull.targets.openai_agents_approval {start,approve,recover}", file=sys.stderr)
        return 2
    set_tracing_disabled(True)
    announce(framework="openai-agents", version=importlib.metadata.version("openai-agents"))
    return asyncio.run(phases[argv[0]](build_agent(), workdir()))


if __name__ == "__main__":
    sys.exit(main())
