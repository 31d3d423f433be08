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
from the conversation, so a fresh process makes the same choice (no API key).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import re
import secrets
import sys
from pathlib import Path
from typing import Any

from agents.run_state import RunState
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from agents import Agent, Model, ModelResponse, Runner, function_tool, set_tracing_disabled
from plugpull.client import WORKDIR_ENV, announce, call_store, record_result

SESSION_ID = "plugpull"
STATE_FILE = "state.json"
ORDER = "A-1001"
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


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def _text(item: Any) -> str:
    content = _field(item, "content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(_field(part, "text") or "") for part in content)
    return ""


class ScriptedModel(Model):
    """Asks for the refund until the conversation holds its output, then answers.

    Chooses from the conversation, not a call counter, so start and resume (two processes)
    agree; makes new ids on every call, as a real model does.
    """

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        refunded = any(_field(i, "type") == "function_call_output" for i in items)
        if not refunded:
            call_id = f"call_{secrets.token_hex(6)}"
            # An id made up per run: the harness names it when it compares sessions (store.run_names).
            announce(run_value=call_id)
            output: list[Any] = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=call_id,
                    name="refund",
                    arguments=json.dumps({"order": ORDER}),
                    status="completed",
                )
            ]
        else:
            # The reply never quotes the user (a quoted token would look like the staged
            # input to a reader of the store), and names its own id, so a second answer from
            # a second model call is a different item, while the same answer written twice is
            # a duplicate.
            notes = sum(1 for i in items if _field(i, "role") == "user") - 1
            reply_id = f"msg_{secrets.token_hex(6)}"
            announce(run_value=reply_id)
            text = f"Refunded {ORDER} ({notes} later note(s) read; reply {reply_id})."
            output = [
                ResponseOutputMessage(
                    id=reply_id,
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("this app runs Runner.run, not run_streamed")


def outcome(final_output: Any) -> dict[str, Any]:
    """The run's result for record_result: the final answer, with the reply id the model made up apart.

    ScriptedModel's answer names its own id (a fresh one per model call, as a real model's), so
    the id moves to ``reply_id``, which the built-in targets leave out of the golden comparison
    (Target.result_ignore), and the answer keeps its place as ``<reply id>``.
    """
    text = str(final_output)
    match = re.search(r"reply (msg_[0-9a-f]+)", text)
    reply_id = match.group(1) if match else None
    return {"answer": text.replace(reply_id, "<reply id>") if reply_id else text, "reply_id": reply_id}


@function_tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order (a human approves first)."""
    return f"refunded {order}"


def build_agent() -> Agent:
    return Agent(name="Refunds", instructions="Refund the order the user names.", model=ScriptedModel(), tools=[refund])


def workdir() -> Path:
    path = os.environ.get(WORKDIR_ENV)
    if not path:
        raise SystemExit(f"openai_agents_app: {WORKDIR_ENV} is not set")
    return Path(path)


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
        (workdir() / STATE_FILE).write_text(json.dumps(state.to_json()))
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
    state = await RunState.from_json(agent, json.loads(path.read_text()))
    log(f"resuming; pending input: {len(state.pending_input)} item(s)")
    result = await Runner.run(agent, state, session=StoreSession())
    record_result(outcome(result.final_output))  # plugpull: the run's outcome
    log(f"done: {result.final_output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv not in (["start"], ["resume"]):
        print("usage: python -m plugpull.targets.openai_agents_app {start,resume}", file=sys.stderr)
        return 2
    set_tracing_disabled(True)
    announce(framework="openai-agents", version=importlib.metadata.version("openai-agents"))
    return asyncio.run(start() if argv == ["start"] else resume())


if __name__ == "__main__":
    sys.exit(main())
