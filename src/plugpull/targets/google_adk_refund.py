"""A Google ADK refund agent with a resumable app: the built-in `google-adk` target.

    python -m plugpull.targets.google_adk_refund [--key none|function-call-id] start|resume

An ``LlmAgent`` with one function tool, a scripted offline model (a ``BaseLlm`` subclass that
asks for the refund until the conversation holds the tool's answer), an ``App`` with
``ResumabilityConfig(is_resumable=True)`` (those three are plugpull.targets.google_adk_support's,
shared with the `google-adk-approval` target) and a real ``SqliteSessionService`` in $PLUGPULL_WORKDIR.

start:  ``runner.run_async(user_id, session_id, new_message=...)`` on a new session.
resume: what an app does after a crash: read the session from the store, take the invocation
        id of its last event (the interrupted invocation) and ``run_async(user_id, session_id,
        invocation_id=...)``, ADK's documented way to resume an invocation that "failed midway".

The ``refund`` tool calls ``record_effect("refund", key=...)`` with no key (``none``: what ADK
itself does shows) or with ``tool_context.function_call_id`` (``function-call-id``: the id of
the model's function call, stable across a resume only if the call's event was saved before the
tool ran). ADK's ResumabilityConfig docstring (google/adk/apps/_configs.py): "Tool call to resume
needs to be idempotent because we only guarantee an at-least-once behavior once resumed."
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import sys
import warnings
from pathlib import Path

from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.adk.tools.tool_context import ToolContext

from plugpull.client import WORKDIR_ENV, announce, record_effect, record_result  # plugpull
from plugpull.targets.google_adk_support import (
    APP_NAME,
    SESSION_ID,
    USER_ID,
    build_runner,
    drain,
    preimport,
    request,
)

_key_variant = "none"


def log(message: str) -> None:
    print(f"google_adk_refund: {message}", file=sys.stderr, flush=True)


def refund(order_id: str, cents: int, tool_context: ToolContext) -> dict:
    """Refund an order at the payment provider."""
    key = tool_context.function_call_id if _key_variant == "function-call-id" else None
    log(f"refund runs for call {tool_context.function_call_id}")
    record_effect("refund", key=key)  # plugpull: where the payment API call goes
    return {"status": f"refunded {cents} cents on order {order_id}"}


async def run(phase: str, workdir: Path) -> int:
    sessions = SqliteSessionService(str(workdir / "sessions.sqlite"))
    runner = build_runner(refund, sessions)
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
    record_result({"answer": final})  # plugpull: the run's outcome, compared with the clean run's
    print(final, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    global _key_variant
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", choices=("none", "function-call-id"), default="none")
    parser.add_argument("phase", choices=("start", "resume"))
    args = parser.parse_args(argv)
    _key_variant = args.key
    # ResumabilityConfig is marked experimental and says so on every use.
    warnings.filterwarnings("ignore", message=r".*EXPERIMENTAL.*")
    announce(framework="google-adk", version=importlib.metadata.version("google-adk"))  # plugpull
    return asyncio.run(run(args.phase, Path(os.environ.get(WORKDIR_ENV, "."))))


def plugpull_prefork(argv: list[str]) -> None:  # plugpull (optional): what --fork-server imports once
    """Import what ADK imports only once a run starts, in plugpull's fork server (``google_adk_support.preimport``).

    Returns None: the forked phase runs this module as ``__main__``, as a cold one does (docs/DECISIONS.md,
    "Throughput").
    """
    preimport()
    return None


if __name__ == "__main__":
    sys.exit(main())
