"""The next turn's history, judged the way real provider APIs judge a chat request. Pure functions.

A conversation is a neutral list of messages, each a dict: ``role`` ("system", "user", "assistant",
"tool"), ``content`` (text), on an assistant message ``tool_calls`` (each ``{"id", "name"}``), on a tool
message ``tool_call_id``. An agent reports the history it sends its model (``client.check_model_request``)
and the one its framework saved (``client.record_conversation``) in this shape (docs/agent-protocol.md).

A cancelled stream can leave a history that the next request's model call is refused for:
an assistant message whose tool call has no result, a tool result whose call is not there (its
assistant message was never saved), or two assistant turns in a row. :func:`request_problem` names the
first such shape and which provider rule refuses it; the scripted models of plugpull's targets are
strict in exactly these ways.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: The provider rules a request breaks, quoted from the error each API returns (HTTP 400).
#: OpenAI Chat Completions: every tool call of an assistant message needs a tool message before the
#: next other message, and a tool message needs the call it answers just before it.
OPENAI_MISSING_RESULT = (
    "OpenAI: \"An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'\""
)
OPENAI_ORPHAN_RESULT = (
    "OpenAI: \"messages with role 'tool' must be a response to a preceeding message with 'tool_calls'\""
)
#: Anthropic Messages: a tool_use block needs its tool_result in the next (user) message, and a
#: tool_result needs its tool_use in the message before.
ANTHROPIC_MISSING_RESULT = 'Anthropic: "tool_use ids were found without tool_result blocks immediately after"'
ANTHROPIC_ORPHAN_RESULT = 'Anthropic: "unexpected tool_use_id found in tool_result blocks"'
#: Gemini (generateContent) refuses a conversation whose turns do not alternate between user and model.
GEMINI_ALTERNATE = 'Gemini: "Please ensure that multiturn requests alternate between user and model"'

ROLES = ("system", "user", "assistant", "tool")


def _calls(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    calls = message.get("tool_calls") or []
    return [c for c in calls if isinstance(c, Mapping)]


def _named(call: Mapping[str, Any]) -> str:
    return f"{call.get('name') or '?'} ({call.get('id') or 'no id'})"


def shape_problem(messages: Any) -> str | None:
    """None when ``messages`` is a list of neutral messages; else what is wrong with it (a protocol error)."""
    if not isinstance(messages, list):
        return "a conversation must be a list of messages"
    for i, message in enumerate(messages, 1):
        if not isinstance(message, Mapping):
            return f"message {i} is not an object"
        if message.get("role") not in ROLES:
            return f"message {i} has role {message.get('role')!r}, not one of {', '.join(ROLES)}"
        if message.get("role") == "tool" and not isinstance(message.get("tool_call_id"), str):
            return f"message {i} is a tool result without a tool_call_id"
        for call in _calls(message):
            if not isinstance(call.get("id"), str):
                return f"message {i} has a tool call without an id"
    return None


def request_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every reason a provider would refuse a chat request with ``messages``, in order; [] for a valid one.

    - an assistant tool call without its tool result before the next user or assistant message (or at
      the end of the request);
    - a tool result whose call is not among the unanswered calls of the assistant message before it;
    - two assistant messages in a row.
    """
    problems: list[str] = []
    waiting: list[Mapping[str, Any]] = []  # calls of the last assistant message not yet answered
    waiting_at = 0
    last_role = None
    for i, message in enumerate(messages, 1):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            match = [c for c in waiting if c.get("id") == call_id]
            if match:
                waiting.remove(match[0])
            else:
                problems.append(
                    f"message {i} is a tool result for call {call_id}, which no assistant message before it made "
                    f"({OPENAI_ORPHAN_RESULT}; {ANTHROPIC_ORPHAN_RESULT})"
                )
            last_role = role
            continue
        if waiting:
            problems.append(_unanswered(waiting, waiting_at, f"message {i} ({role})"))
            waiting = []
        if role == "assistant":
            if last_role == "assistant":
                problems.append(f"messages {i - 1} and {i} are two assistant turns in a row ({GEMINI_ALTERNATE})")
            waiting, waiting_at = list(_calls(message)), i
        if role != "system":
            last_role = role
    if waiting:
        problems.append(_unanswered(waiting, waiting_at, "the end of the request"))
    return problems


def _unanswered(waiting: Sequence[Mapping[str, Any]], at: int, before: str) -> str:
    named = ", ".join(_named(c) for c in waiting)
    plural = "calls" if len(waiting) > 1 else "call"
    return (
        f"message {at}'s tool {plural} {named} had no tool result before {before} "
        f"({OPENAI_MISSING_RESULT}; {ANTHROPIC_MISSING_RESULT})"
    )


def request_problem(messages: Any) -> str | None:
    """The first reason a provider would refuse ``messages`` (or why they are not a conversation); None: valid."""
    return shape_problem(messages) or next(iter(request_problems(messages)), None)


def next_turn(saved: Sequence[Mapping[str, Any]], text: str = "next question") -> list[Mapping[str, Any]]:
    """The request a next turn sends: the saved conversation and one new user message."""
    return [*saved, {"role": "user", "content": text}]
