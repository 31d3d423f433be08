"""An append from a stale copy of a session (another process appended since it was read) is refused.

Exit 0 when append_event raises, 1 when the stale append succeeds.
"""

import asyncio
import sys

from _session import event, service


async def main() -> int:
    await service().create_session(app_name="app", user_id="u", session_id="s")
    first = await service().get_session(app_name="app", user_id="u", session_id="s")
    stale = await service().get_session(app_name="app", user_id="u", session_id="s")
    await service().append_event(first, event("approve"))
    try:
        await service().append_event(stale, event("approve again"))
    except Exception as exc:
        print("stale append refused:", type(exc).__name__)
        return 0
    print("stale append accepted")
    return 1


sys.exit(asyncio.run(main()))
