"""SQLiteSession.get_items returns the whole history, its newest item too.

Exit 0 when the three items added come back, 1 when one is missing.
"""

import asyncio
import sys

from agents import SQLiteSession

ITEMS = [
    {"role": "user", "content": "refund order A-1001"},
    {"type": "function_call", "call_id": "call_1", "name": "refund", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "refunded"},
]


async def main() -> int:
    await SQLiteSession("s", "session.sqlite").add_items(ITEMS)
    back = await SQLiteSession("s", "session.sqlite").get_items()
    print("items read back:", len(back), "of", len(ITEMS))
    return 0 if len(back) == len(ITEMS) else 1


sys.exit(asyncio.run(main()))
