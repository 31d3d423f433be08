"""An event SqliteSessionService.append_event returned from is on disk: another service on the file reads it.

Exit 0 when it does, 1 when the session on disk does not hold it.
"""

import asyncio
import sys

from _session import event, service


async def main() -> int:
    session = await service().create_session(app_name="app", user_id="u", session_id="s")
    await service().append_event(session, event("refund A-1001"))
    back = await service().get_session(app_name="app", user_id="u", session_id="s")
    print("events on disk:", len(back.events))
    return 0 if len(back.events) == 1 else 1


sys.exit(asyncio.run(main()))
