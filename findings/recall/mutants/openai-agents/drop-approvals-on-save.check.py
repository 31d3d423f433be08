"""An approval given before RunState.to_json holds after from_json: the restored run runs the tool, no new pause.

Exit 0 when the restored run finishes with the tool run once, 1 when it pauses for the same approval again.
"""

import asyncio
import json
import sys

from _scripted import Scripted

from agents import Agent, Runner, RunState, function_tool

runs = {"refund": 0}


@function_tool(needs_approval=True)
def refund() -> str:
    runs["refund"] += 1
    return "refunded"


async def main() -> int:
    agent = Agent(name="a", model=Scripted(["refund"]), tools=[refund])
    state = (await Runner.run(agent, "refund my order")).to_state()
    for item in state.get_interruptions():
        state.approve(item)
    restored = await RunState.from_json(agent, json.loads(json.dumps(state.to_json())))
    result = await Runner.run(agent, restored)
    print("tool runs:", runs, "paused again:", bool(result.interruptions))
    return 0 if runs["refund"] == 1 and not result.interruptions else 1


sys.exit(asyncio.run(main()))
