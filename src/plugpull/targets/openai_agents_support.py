"""What the OpenAI Agents SDK apps of the built-in targets share: a scripted model, a RunState kept in a file,
and one phase per process.

The SDK docs ("Human-in-the-loop", long-running approvals) make ``RunState.to_json()`` the durable record of
a paused or approved run, and ``await RunState.from_json(agent, saved)`` the way back to it from another
process; each app saves where its design says and restores from there. A user's app could keep a module like
this one beside it: of plugpull it uses ``announce`` and ``record_result`` only.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sys
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from agents.run_state import RunState
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from agents import Agent, Model, ModelResponse, Runner
from plugpull.client import PAUSED_AGAIN_EXIT, WORKDIR_ENV, announce, record_result

#: The order the scripted model refunds.
ORDER = "A-1001"


def field(item: Any, name: str) -> Any:
    """A field of a conversation item, whether the SDK hands it as a dict or as an object."""
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


class ScriptedModel(Model):
    """Asks for the refund until the conversation holds its output, then answers.

    Chooses from the conversation, not a call counter, so start and resume (two processes)
    agree; makes new ids on every call, as a real model does.
    """

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        refunded = any(field(i, "type") == "function_call_output" for i in items)
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
            notes = sum(1 for i in items if field(i, "role") == "user") - 1
            reply_id = f"msg_{secrets.token_hex(6)}"
            announce(run_value=reply_id)
            text = f"Refunded {ORDER} ({notes} later note(s) read; reply {reply_id})."
            output = [reply_message(reply_id, text)]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("this app runs Runner.run, not run_streamed")


def reply_message(reply_id: str, text: str) -> ResponseOutputMessage:
    """The scripted model's final answer: one completed assistant message with its own id."""
    return ResponseOutputMessage(
        id=reply_id,
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def outcome(final_output: Any) -> dict[str, Any]:
    """The run's result for record_result: the final answer, with the reply id the model made up apart.

    The scripted models' answers name their own id (a fresh one per model call, as a real model's), so
    the id moves to ``reply_id``, which the built-in targets leave out of the golden comparison
    (Target.result_ignore), and the answer keeps its place as ``<reply id>``.
    """
    text = str(final_output)
    match = re.search(r"reply (msg_[0-9a-f]+)", text)
    reply_id = match.group(1) if match else None
    return {"answer": text.replace(reply_id, "<reply id>") if reply_id else text, "reply_id": reply_id}


def workdir() -> Path:
    """Where the app keeps its saved runs: the run's $PLUGPULL_WORKDIR."""
    path = os.environ.get(WORKDIR_ENV)
    if not path:
        raise SystemExit(f"{WORKDIR_ENV} is not set: the app keeps its saved runs there")
    return Path(path)


def save_state(state: RunState, path: Path) -> None:
    """The run as the SDK serializes it (``RunState.to_json``), in a file."""
    path.write_text(json.dumps(state.to_json()))


async def load_state(agent: Agent, path: Path) -> RunState:
    """The run saved in ``path``, restored for ``agent`` (``RunState.from_json``)."""
    return await RunState.from_json(agent, json.loads(path.read_text()))


async def finish(
    agent: Agent, state: RunState, log: Callable[[str], None], done: Path | None = None, **run: Any
) -> int:
    """Run ``state`` to its end (``Runner.run``; ``run``: e.g. its ``session``) and record the outcome: exit 0.
    A run that ends paused at an approval again (``result.interruptions``) records nothing: exit 5.

    ``done``: where the app notes the run's outcome once it has ended, as an app marks an order done,
    so that resume of a finished run (:func:`finished_already`) does not run a saved state again."""
    result = await Runner.run(agent, state, **run)
    if result.interruptions:
        # The run stopped at an approval again instead of finishing: an approval that was given did not
        # reach the tool (as in https://github.com/openai/openai-agents-python/issues/4244).
        log(f"the run paused again: {len(result.interruptions)} approval(s) pending: {result.interruptions[0].name}")
        return PAUSED_AGAIN_EXIT
    if done is not None:
        done.write_text(json.dumps(outcome(result.final_output)))
    record_result(outcome(result.final_output))  # plugpull: the run's outcome
    log(f"done: {result.final_output}")
    return 0


def finished_already(done: Path, log: Callable[[str], None]) -> bool:
    """Resume of a run that ended (``done`` written by :func:`finish`): report its outcome again, run nothing.

    plugpull runs resume on a finished clean run first and asks for this no-op (docs/agent-protocol.md)."""
    if not done.exists():
        return False
    record_result(json.loads(done.read_text()))  # plugpull
    log("run already finished")
    return True


def phase_and_option(
    argv: Sequence[str] | None,
    phases: Collection[str],
    *,
    prog: str,
    option: str | None = None,
    choices: Sequence[str] = (),
) -> tuple[str, str | None]:
    """The phase of ``[OPTION VALUE] PHASE`` (docs/agent-protocol.md) and the option's value (its first choice
    when not given). Anything else: the usage line on stderr and exit 2, as a command line says it was misused."""
    argv = list(sys.argv[1:] if argv is None else argv)
    value = choices[0] if choices else None
    if option is not None and len(argv) == 3 and argv[0] == option:
        value, argv = argv[1], argv[2:]
    if len(argv) != 1 or argv[0] not in phases or (option is not None and value not in choices):
        given = f"[{option} {'|'.join(choices)}] " if option is not None else ""
        print(f"usage: {prog} {given}{{{','.join(phases)}}}", file=sys.stderr)
        raise SystemExit(2)
    return argv[0], value


def plugpull_prefork(argv: list[str]) -> None:  # plugpull (optional): what --fork-server builds once
    """Build the SDK's default trace provider in plugpull's fork server, once, instead of in every forked phase.

    Each app's ``main`` calls ``set_tracing_disabled(True)``, and that is the SDK's first call of
    ``get_trace_provider()``: the provider is built lazily, with a ``BackendSpanExporter`` whose ``httpx2.Client``
    imports its HTTP stack (httpcore2, h11, h2, truststore) and builds an SSL context (agents/tracing/setup.py and
    processors.py, openai-agents 0.22): 0.05-0.1 s of a forked phase's 0.12-0.19 s of CPU here. Built before the fork,
    every phase inherits it; the phase still disables tracing itself, as a cold one does. It opens no socket (the
    client connects on its first export, and a disabled provider exports nothing) and starts no thread (the batch
    processor starts its worker on the first span). A release without the lazy provider built it on import already.
    Returns None: the forked phase runs its module as ``__main__`` (docs/DECISIONS.md, "Throughput").
    """
    try:
        from agents.tracing import get_trace_provider
    except ImportError:
        return None
    get_trace_provider()
    return None
