"""A streaming chat agent on a 100-line asyncio framework, for cancel-mid-stream.

    python stream_agent.py dangling|closes-turn|drops-results start|resume   (or python -m stream_agent)

start: one turn ("Please refund order A-1001."): the scripted model streams a sentence and asks for
the refund tool; the tool refunds (record_effect); the model streams the answer. The conversation is
saved in $PLUGPULL_WORKDIR/conversation.json after each whole message, as a checkpointer saves each
step. resume: the next turn on the same conversation ("Is my refund done?").

The client cancels the way an SSE server does when the browser goes away: a watcher thread
(plugpull.client.wait_for_cancel) cancels the asyncio task that consumes the stream.

- ``dangling``: the framework saves nothing when a turn is cancelled. A cancel inside the tool leaves
  the assistant's tool call without a result, and the next turn's request is refused (HTTP 400).
- ``closes-turn``: on a cancel the framework closes the turn: it saves the text streamed so far and a
  "cancelled" result for every call not answered, and its tool keys the refund by order, so a refund
  asked for again after a cancel is the same refund at the provider.
- ``drops-results``: ``closes-turn`` whose store silently drops tool results, cancelled or not: the next turn's
  history holds the tool call without its result even after a turn nothing cancelled (a bug with no fault).
"""

import asyncio
import json
import os
import sys
import threading
import uuid
from pathlib import Path

from plugpull.client import (
    check_model_request,
    mark_boundary,
    record_cancel,
    record_conversation,
    record_effect,
    record_result,
    wait_for_cancel,
)

ANSWER = "Order A-1001 is refunded."


def load() -> list:
    return json.loads(saved.read_text()) if saved.exists() else []


def save(conversation: list) -> None:
    kept = [m for m in conversation if m["role"] != "tool"] if how == "drops-results" else conversation
    saved.write_text(json.dumps(kept))


async def mark(name: str, edge: str) -> None:
    # In a thread: a held mark must not block the event loop, or the client's cancel could not land.
    await asyncio.to_thread(mark_boundary, name, edge)


def refunded(conversation: list) -> bool:
    return any(m["role"] == "tool" and m["content"].startswith("refunded") for m in conversation)


async def model(conversation: list):
    """Streams ("text", chunk) items, then yields ("message", the whole assistant message)."""
    await mark("model-call", "before")
    await asyncio.to_thread(check_model_request, conversation)  # a strict provider: refuses a bad history
    if conversation[-1]["role"] == "tool" or refunded(conversation):
        text, calls = ANSWER, []
    else:
        text, calls = "I will refund order A-1001 now.", [{"id": f"call_{uuid.uuid4().hex[:8]}", "name": "refund"}]
    for word in text.split(" "):
        await mark("model-chunk", "before")
        yield "text", word + " "
    yield "message", {"role": "assistant", "content": text, "tool_calls": calls}
    await mark("model-call", "after")


async def refund_tool(call: dict) -> dict:
    key = "refund-A-1001" if how != "dangling" else None
    await asyncio.to_thread(record_effect, "refund", key=key)
    return {"role": "tool", "content": "refunded 1999 cents", "tool_call_id": call["id"]}


async def run_turn(conversation: list, seen: dict):
    """The framework: model and tool steps until the model answers without a tool call."""
    streamed = ""
    try:
        while True:
            streamed = ""
            async for kind, item in model(conversation):
                if kind == "text":
                    streamed += item
                    yield "text", item
                else:
                    conversation.append(item)
                    save(conversation)
                    streamed = ""
            last = conversation[-1]
            if not last.get("tool_calls"):
                return
            for call in last["tool_calls"]:
                yield "tool_call", call["id"]
                conversation.append(await refund_tool(call))
                save(conversation)
                yield "tool_result", call["id"]
    except asyncio.CancelledError:
        if how != "dangling":
            if streamed.strip():
                conversation.append({"role": "assistant", "content": streamed.strip(), "tool_calls": []})
            answered = {m.get("tool_call_id") for m in conversation if m["role"] == "tool"}
            last_calls = next((m["tool_calls"] for m in reversed(conversation) if m["role"] == "assistant"), [])
            for call in last_calls:
                if call["id"] not in answered:
                    conversation.append({"role": "tool", "content": "cancelled", "tool_call_id": call["id"]})
            save(conversation)
        raise


async def consume(conversation: list, seen: dict) -> str:
    """The client: shows each event as it comes."""
    text = ""
    async for kind, item in run_turn(conversation, seen):
        if kind == "text":
            text += item
            if not seen["text"] or seen.get("_done"):
                seen["text"].append("")
                seen["_done"] = False
            seen["text"][-1] += item
        else:
            seen["_done"] = True
            seen["tool_calls" if kind == "tool_call" else "tool_results"].append(item)
            if kind == "tool_call":
                text = ""
    return text.strip()


async def main() -> int:
    conversation = load()
    if phase == "resume":
        record_conversation(list(conversation))
        conversation.append({"role": "user", "content": "Is my refund done?"})
    else:
        conversation = [{"role": "user", "content": "Please refund order A-1001."}]
    save(conversation)
    seen = {"text": [], "tool_calls": [], "tool_results": []}
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(consume(conversation, seen))

    def watch() -> None:
        if wait_for_cancel():
            loop.call_soon_threadsafe(task.cancel)

    threading.Thread(target=watch, daemon=True).start()
    try:
        answer = await task
    except asyncio.CancelledError:
        seen.pop("_done", None)
        record_cancel("task-cancel", seen)
        print("cancelled by the client", file=sys.stderr)
        return 0
    record_result({"answer": answer})
    print(answer)
    return 0


# A main guard: tests run this as ``python -m stream_agent`` from a fork server (tests/forked_agents.py), which
# imports the module once before it forks each phase. What it sets here are the module's globals, as before.
if __name__ == "__main__":
    how, phase = sys.argv[1], sys.argv[2]
    if how not in ("dangling", "closes-turn", "drops-results") or phase not in ("start", "resume"):
        raise SystemExit("usage: stream_agent.py dangling|closes-turn|drops-results start|resume")
    saved = Path(os.environ["PLUGPULL_WORKDIR"]) / "conversation.json"
    sys.exit(asyncio.run(main()))
