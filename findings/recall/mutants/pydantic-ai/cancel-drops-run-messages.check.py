"""A run cancelled with its CancellationToken after its tool finished hands back the tool's result.

The model asks for the refund tool; the tool runs; at the model's next request the app cancels the run (the
token). Exit 0 when RunCancelled.all_messages() holds the tool's return (its docstring: everything the run
completed before the cancellation, "including ... the results of tool calls that finished", to pass as
message_history to a new run), 1 when it was dropped.
"""

import asyncio
import sys

from pydantic_ai import Agent, CancellationToken
from pydantic_ai.exceptions import RunCancelled
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel

token = CancellationToken()


async def respond(messages, info):
    if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
        token.cancel()  # the client walks away while the model answers
        await asyncio.sleep(0.5)
        return ModelResponse(parts=[TextPart("refunded")])
    return ModelResponse(parts=[ToolCallPart("refund", {}, tool_call_id="call_1")])


agent = Agent(FunctionModel(respond))


@agent.tool_plain
def refund() -> str:
    return "refunded 1999 cents"


async def main() -> int:
    try:
        await agent.run("refund my order", cancellation_token=token)
    except RunCancelled as cancelled:
        kept = [type(p).__name__ for m in cancelled.all_messages() for p in m.parts]
        print("cancelled; kept:", kept)
        return 0 if "ToolReturnPart" in kept else 1
    print("the run was not cancelled")
    return 2


sys.exit(asyncio.run(main()))
