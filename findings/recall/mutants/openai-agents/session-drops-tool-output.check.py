"""SQLiteSession.get_items returns every item add_items was given, a tool call and its output alike.

Exit 0 when both come back, 1 when one is missing.
"""

import asyncio
import sys

from agents import SQLiteSession

ITEMS = [
    {"type": "function_call", "call_id": "call_1", "name": "refund", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "refunded"},
]


async def main() -> int:
    session = SQLiteSession("s", "session.sqlite")
    await session.add_items(ITEMS)
    back = await SQLiteSession("s", "session.sqlite").get_items()
    print("types read back:", [i.get("type") for i in back])
    return 0 if [i.get("type") for i in back] == ["function_call", "function_call_output"] else 1


sys.exit(asyncio.run(main()))
