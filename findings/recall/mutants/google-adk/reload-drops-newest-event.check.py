"""A reloaded session holds every event appended to it, the newest too.

Exit 0 when get_session returns both events, 1 when one is missing.
"""

import asyncio
import sys

from _session import event, service


async def main() -> int:
    session = await service().create_session(app_name="app", user_id="u", session_id="s")
    await service().append_event(session, event("the tool call"))
    await service().append_event(session, event("the tool's response"))
    back = await service().get_session(app_name="app", user_id="u", session_id="s")
    texts = [e.content.parts[0].text for e in back.events]
    print("reloaded:", texts)
    return 0 if texts == ["the tool call", "the tool's response"] else 1


sys.exit(asyncio.run(main()))
