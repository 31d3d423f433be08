"""An OpenAI Agents SDK app that stages input on a paused run: the built-in `openai-agents` target.

    python -m plugpull.targets.openai_agents_app start
    python -m plugpull.targets.openai_agents_app resume

It does what the SDK docs say an app does with a human-in-the-loop pause and new input
(docs "Human-in-the-loop" and "Results", "Add input before resuming"):

start:  ``Runner.run(agent, text, session=...)`` pauses on a tool that needs approval
        (``function_tool(needs_approval=True)``); the app takes ``result.to_state()``,
        stages new input with ``RunState.add_input`` (a text carrying a random token),
        approves, and runs the state again with the same Session. On an exception it saves
        ``RunState.to_json()`` to ``$PLUGPULL_WORKDIR/state.json`` and exits 1.
resume: ``await RunState.from_json(agent, saved)`` and ``Runner.run`` again with the Session.

The Session is remote: every Session method is exactly one call to plugpull's store (a
database on another machine), which may lose a write or its acknowledgement. That is the
fault of openai/openai-agents-python#4775. The model is scripted and offline, and decides
from the conversation, so a fresh process makes the same choice (no API key): it, the RunState
file and the phase command line are plugpull.targets.openai_agents_support's, which the SDK's
other built-in apps share.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import secrets
import sys
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from plugpull.client import announce, call_store, record_result
from plugpull.targets.openai_agents_support import (
    ORDER,
    ScriptedModel,
    finish,
    load_state,
    outcome,
    phase_and_option,
    plugpull_prefork,  # noqa: F401 (--fork-server's hook)
    save_state,
    workdir,
)

SESSION_ID = "plugpull"
STATE_FILE = "state.json"
#: Every staged input carries this marker and a fresh random token; the token is what the
#: harness counts in the store (an item's identity, whatever shape the SDK writes it in).
STAGED_MARK = "staged-input"


def log(message: str) -> None:
    print(f"openai_agents_app: {message}", file=sys.stderr, flush=True)


class StoreSession:
    """The SDK's Session protocol over plugpull's store: one method call, one store call.

    Nothing is cached or retried here: a failed call raises ``ChannelClosed`` (a
    ConnectionError) into the SDK exactly as a dropped database connection would.
    """

    session_settings = None

    def __init__(self, session_id: str = SESSION_ID) -> None:
        self.session_id = session_id

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return call_store("get_items", self.session_id, limit=limit)

    async def add_items(self, items: list[Any]) -> None:
        # JSON round trip: the SDK hands dicts that may hold pydantic objects; the store keeps
        # exactly the JSON the wire carries.
        call_store("add_items", self.session_id, items=json.loads(json.dumps(items, default=_plain)))

    async def pop_item(self) -> Any:
        return call_store("pop_item", self.session_id)

    async def clear_session(self) -> None:
        call_store("clear_session", self.session_id)


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(exclude_unset=True)
    raise TypeError(f"cannot store {type(value).__name__}")


@function_tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order (a human approves first)."""
    return f"refunded {order}"


def build_agent() -> Agent:
    return Agent(name="Refunds", instructions="Refund the order the user names.", model=ScriptedModel(), tools=[refund])


async def start() -> int:
    agent, session = build_agent(), StoreSession()
    run_token = secrets.token_hex(6)
    announce(run_value=run_token)
    result = await Runner.run(agent, f"Refund order {ORDER}, please. [run {run_token}]", session=session)
    interruptions = result.interruptions
    if len(interruptions) != 1:
        log(f"expected one approval interruption, got {len(interruptions)}")
        return 3
    state = result.to_state()
    # The documented way to add input to a paused run (Results, "Add input before resuming").
    token = secrets.token_hex(8)
    state.add_input(f"Also email the receipt to the customer. [{STAGED_MARK} {token}]")
    announce(staged_input=token)
    log(f"staged input token {token}")
    state.approve(interruptions[0])
    try:
        result = await Runner.run(agent, state, session=session)
    except Exception as exc:
        # What an app does with a failed run: keep the state to retry it later (docs,
        # "Human-in-the-loop", long-running approvals: RunState is designed to be durable).
        save_state(state, workdir() / STATE_FILE)
        log(f"run failed ({type(exc).__name__}: {exc}); state saved to {STATE_FILE}")
        return 1
    record_result(outcome(result.final_output))  # plugpull: the run's outcome
    log(f"done: {result.final_output}")
    return 0


async def resume() -> int:
    path = workdir() / STATE_FILE
    if not path.exists():
        log(f"nothing to resume: no {STATE_FILE}")
        return 4
    agent = build_agent()
    state = await load_state(agent, path)
    log(f"resuming; pending input: {len(state.pending_input)} item(s)")
    return await finish(agent, state, log, session=StoreSession())


PHASES = {"start": start, "resume": resume}


def main(argv: list[str] | None = None) -> int:
    phase, _ = phase_and_option(argv, PHASES, prog="python -m plugpull.targets.openai_agents_app")
    set_tracing_disabled(True)
    announce(framework="openai-agents", version=importlib.metadata.version("openai-agents"))  # plugpull
    return asyncio.run(PHASES[phase]())


if __name__ == "__main__":
    sys.exit(main())
