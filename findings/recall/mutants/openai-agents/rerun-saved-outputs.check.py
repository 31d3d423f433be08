"""A tool that finished before the approval pause does not run again when the saved RunState is restored.

Two tool calls in one model turn: lookup (no approval) runs, refund pauses for approval; the state is approved,
saved with to_json, restored with from_json and run. Exit 0 when lookup ran once, 1 when it ran again.
"""

import asyncio
import json
import sys

from _scripted import Scripted

from agents import Agent, Runner, RunState, function_tool

runs = {"lookup": 0, "refund": 0}


@function_tool
def lookup() -> str:
    runs["lookup"] += 1
    return "order found"


@function_tool(needs_approval=True)
def refund() -> str:
    runs["refund"] += 1
    return "refunded"


async def main() -> int:
    agent = Agent(name="a", model=Scripted(["lookup", "refund"]), tools=[lookup, refund])
    result = await Runner.run(agent, "refund my order")
    state = result.to_state()
    for item in state.get_interruptions():
        state.approve(item)
    restored = await RunState.from_json(agent, json.loads(json.dumps(state.to_json())))
    await Runner.run(agent, restored)
    print("tool runs:", runs)
    return 0 if runs == {"lookup": 1, "refund": 1} else 1


sys.exit(asyncio.run(main()))
