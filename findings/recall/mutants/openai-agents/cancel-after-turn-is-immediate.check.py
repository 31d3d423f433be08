"""A streamed run cancelled with cancel(mode="after_turn") finishes its turn: the tool runs and the Session has it.

The model streams a sentence and asks for the refund tool; at the first streamed chunk the client cancels with
mode="after_turn" ("Complete current turn gracefully before stopping ... Executes pending tool calls ... Saves
session state properly", RunResultStreaming.cancel's docstring) and reads the stream to its end. Exit 0 when the
tool ran once and the Session holds its output, 1 when the turn was dropped as by an immediate cancel.
"""

import asyncio
import json
import sys

from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
)

from agents import Agent, Model, Runner, SQLiteSession, function_tool, set_tracing_disabled

set_tracing_disabled(True)
runs = {"refund": 0}


def response(output):
    return Response(
        id="resp_1", created_at=0, model="scripted", object="response", output=output, tool_choice="auto",
        tools=[], top_p=None, parallel_tool_calls=False, status="completed",
    )  # fmt: skip


class Streaming(Model):
    async def get_response(self, *args, **kwargs):
        raise NotImplementedError

    async def stream_response(self, system_instructions, input, *args, **kwargs):
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        done = any((i.get("type") if isinstance(i, dict) else getattr(i, "type", None)) == "function_call_output"
                   for i in items)  # fmt: skip
        text = "Refunded." if done else "I will refund order A-1001 now."
        yield ResponseCreatedEvent(type="response.created", response=response([]), sequence_number=0)
        for n, word in enumerate(text.split(" ")):
            yield ResponseTextDeltaEvent(
                type="response.output_text.delta", item_id="msg_1", output_index=0, content_index=0,
                delta=word + " ", logprobs=[], sequence_number=1 + n,
            )  # fmt: skip
            await asyncio.sleep(0.01)
        content = [ResponseOutputText(type="output_text", text=text, annotations=[])]
        output = [
            ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed", content=content)
        ]
        if not done:
            output.append(ResponseFunctionToolCall(
                type="function_call", id="fc_1", call_id="call_1", name="refund", arguments=json.dumps({}),
                status="completed",
            ))  # fmt: skip
        for index, item in enumerate(output):
            yield ResponseOutputItemDoneEvent(
                type="response.output_item.done", item=item, output_index=index, sequence_number=50 + index
            )
        yield ResponseCompletedEvent(type="response.completed", response=response(output), sequence_number=60)


@function_tool
def refund() -> str:
    runs["refund"] += 1
    return "refunded 1999 cents"


async def main() -> int:
    session = SQLiteSession("s", "session.sqlite")
    result = Runner.run_streamed(Agent(name="a", model=Streaming(), tools=[refund]), "refund my order", session=session)
    async for event in result.stream_events():
        if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
            result.cancel(mode="after_turn")
    kept = [i.get("type") or i.get("role") for i in await SQLiteSession("s", "session.sqlite").get_items()]
    print("tool runs:", runs, "session holds:", kept)
    return 0 if runs["refund"] == 1 and "function_call_output" in kept else 1


sys.exit(asyncio.run(main()))
