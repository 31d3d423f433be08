"""A Google ADK refund whose tool's outside call can fail: the built-in `google-adk-tool-error` target.

    python -m plugpull.targets.google_adk_tool_error HANDLING KEY start|resume

The resumable refund app of google_adk_refund.py (``App(resumability_config=ResumabilityConfig(is_resumable=True))``
on a SqliteSessionService in $PLUGPULL_WORKDIR, a scripted offline model), configured one of two ways (HANDLING):

- ``raise``: ADK's default: an exception in a function tool ends the invocation (``run_async`` raises; the session
  keeps an event with its ``error_code``); resume runs the same invocation again by its id, ADK's documented way to
  resume an invocation that failed midway (``run_async(invocation_id=...)``);
- ``reflect-retry``: ``App(plugins=[ReflectAndRetryToolPlugin(max_retries=1)])`` (google/adk/plugins): the error
  becomes the tool's response, with guidance for the model, which asks for the refund again (a new function call).

KEY is the refund's idempotency key: ``none``, or ``function-call-id`` (``ToolContext.function_call_id``).
With ``--two-tools`` the model asks for ``send_email`` (no key) and ``refund`` in one turn, two parallel function
calls in one event (tool-error's parallel-one-raised: the email answered, the refund raised).

The result claims what the session's history says of the last refund call (docs/agent-protocol.md, "Tool
errors"): "done" (a response without an error), "failed" (a response that is the plugin's error), or "dropped" (the
history holds the call and no response to it).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import sys
from pathlib import Path
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.reflect_retry_tool_plugin import ReflectAndRetryToolPlugin
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from plugpull.client import WORKDIR_ENV, announce, record_effect, record_result  # plugpull
from plugpull.targets.google_adk_support import APP_NAME, SESSION_ID, USER_ID, build_runner, drain, request

HANDLINGS = ("raise", "reflect-retry")
KEYS = ("none", "function-call-id")
#: How ReflectAndRetryToolPlugin marks the response it makes of a tool's error (google/adk/plugins).
REFLECTED = "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"
DONE = "Refund for order A-1001 is done."
FAILED = "The refund could not be done."


def log(message: str) -> None:
    print(f"google_adk_tool_error: {message}", file=sys.stderr, flush=True)


def is_error(response: Any) -> bool:
    return isinstance(response, dict) and response.get("response_type") == REFLECTED


class RetryingLlm(BaseLlm):
    """Asks for the refund (and the email, with two tools); reads its response. An error response is asked again
    once; then it says what the last response said."""

    model: str = "plugpull-scripted"
    two_tools: bool = False

    async def generate_content_async(self, llm_request: Any, stream: bool = False):
        responses = [
            part.function_response.response
            for content in llm_request.contents or []
            for part in content.parts or []
            if part.function_response is not None and part.function_response.name == "refund"
        ]
        errors = [r for r in responses if is_error(r)]
        if responses and (not is_error(responses[-1]) or len(errors) >= 2):
            part = types.Part(text=FAILED if is_error(responses[-1]) else DONE)
        else:
            part = types.Part(
                function_call=types.FunctionCall(name="refund", args={"order_id": "A-1001", "cents": 1999})
            )
            emailed = any(
                part.function_response is not None and part.function_response.name == "send_email"
                for content in llm_request.contents or []
                for part in content.parts or []
            )
            if self.two_tools and not emailed:  # as a real model would, it asks only for what is not answered yet
                email = types.Part(function_call=types.FunctionCall(name="send_email", args={"order_id": "A-1001"}))
                yield LlmResponse(content=types.Content(role="model", parts=[email, part]))
                return
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def make_runner(handling: str, key: str, sessions: SqliteSessionService, two_tools: bool = False) -> Runner:
    def refund(order_id: str, cents: int, tool_context: ToolContext) -> dict:
        """Refund an order at the payment provider."""
        record_effect("refund", key=tool_context.function_call_id if key == "function-call-id" else None)  # plugpull
        return {"status": f"refunded {cents} cents on order {order_id}"}

    def send_email(order_id: str) -> dict:
        """Tell the customer the order is being refunded."""
        record_effect("send_email")  # plugpull: the mail API takes no key
        return {"status": f"emailed the customer of order {order_id}"}

    return build_runner(
        refund,
        sessions,
        model=RetryingLlm(two_tools=two_tools),
        tools=[send_email, refund] if two_tools else [refund],
        plugins=[ReflectAndRetryToolPlugin(max_retries=1)] if handling == "reflect-retry" else [],
    )


def claim(events: list[Any], name: str = "refund") -> str:
    """What the session's history says of the last call of tool ``name``: done, failed, or dropped (no response)."""
    calls = [c for e in events for c in e.get_function_calls() if c.name == name]
    responses = {r.id: r.response for e in events for r in e.get_function_responses() if r.name == name}
    if not calls:
        return "dropped"
    last = calls[-1]
    if last.id not in responses:
        return "dropped"
    return "failed" if is_error(responses[last.id]) else "done"


async def run(phase: str, handling: str, key: str, workdir: Path, two_tools: bool = False) -> int:
    sessions = SqliteSessionService(str(workdir / "sessions.sqlite"))
    runner = make_runner(handling, key, sessions, two_tools)
    if phase == "start":
        await sessions.create_session(app_name=APP_NAME, user_id=USER_ID, session_id=SESSION_ID)
        final = await drain(runner, new_message=request())
    else:
        session = await sessions.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=SESSION_ID)
        if session is None or not session.events:
            log(f"resume: no saved session {SESSION_ID} in {workdir}")
            return 2
        invocation_id = session.events[-1].invocation_id
        log(f"resume: invocation {invocation_id} after {len(session.events)} saved events")
        final = await drain(runner, invocation_id=invocation_id)
    session = await sessions.get_session(app_name=APP_NAME, user_id=USER_ID, session_id=SESSION_ID)
    claims = {name: claim(session.events, name) for name in (["send_email", "refund"] if two_tools else ["refund"])}
    record_result({"answer": final, "claims": claims})  # plugpull: what the history says of each call
    print(final, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("handling", choices=HANDLINGS)
    parser.add_argument("key", choices=KEYS)
    parser.add_argument("--two-tools", action="store_true", help="send_email and refund in one model turn")
    parser.add_argument("phase", choices=("start", "resume"))
    args = parser.parse_args(argv)
    workdir = Path(os.environ.get(WORKDIR_ENV, "."))
    announce(framework="google-adk", version=importlib.metadata.version("google-adk"))  # plugpull
    return asyncio.run(run(args.phase, args.handling, args.key, workdir, args.two_tools))


if __name__ == "__main__":
    sys.exit(main())
