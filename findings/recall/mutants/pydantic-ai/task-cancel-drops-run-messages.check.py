"""A run driven with agent.iter whose asyncio task is cancelled after its tool finished keeps the tool's result.

The model asks for the refund tool; the tool runs; at the model's next request the task driving the run is
cancelled (as an ASGI server cancels a streaming response's task when the client goes away), and the app saves
AgentRun.all_messages() ("all messages for the run so far"). Exit 0 when they hold the tool's return, 1 when the
run's own messages were dropped.
"""

import asyncio
import sys

from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

kept: list[str] = []


async def respond(messages, info):
    if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
        asyncio.current_task().cancel()  # the client walks away while the model answers
        await asyncio.sleep(5)
        return ModelResponse(parts=[TextPart("refunded")])
    return ModelResponse(parts=[ToolCallPart("refund", {}, tool_call_id="call_1")])


agent = Agent(FunctionModel(respond))


@agent.tool_plain
def refund() -> str:
    return "refunded 1999 cents"


async def drive() -> None:
    run = None
    try:
        async with agent.iter("refund my order") as run:
            async for _node in run:
                pass
    except asyncio.CancelledError:
        if run is not None:
            kept.extend(type(p).__name__ for m in run.all_messages() for p in m.parts)
        raise


async def main() -> int:
    try:
        await asyncio.ensure_future(drive())
    except asyncio.CancelledError:
        print("cancelled; kept:", kept)
        return 0 if "ToolReturnPart" in kept else 1
    print("the run was not cancelled")
    return 2


sys.exit(asyncio.run(main()))
