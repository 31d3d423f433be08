"""A reloaded session holds its events in the order they were appended (oldest first).

Exit 0 when get_session returns them in order, 1 when reordered.
"""

import asyncio
import sys

from _session import event, service


async def main() -> int:
    session = await service().create_session(app_name="app", user_id="u", session_id="s")
    for text in ("the user's request", "the tool call", "the tool's response"):
        await service().append_event(session, event(text))
    back = await service().get_session(app_name="app", user_id="u", session_id="s")
    texts = [e.content.parts[0].text for e in back.events]
    print("reloaded:", texts)
    return 0 if texts == ["the user's request", "the tool call", "the tool's response"] else 1


sys.exit(asyncio.run(main()))
