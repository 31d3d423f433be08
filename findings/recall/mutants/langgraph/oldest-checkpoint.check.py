"""SqliteSaver.get_tuple with no checkpoint id returns the thread's newest checkpoint (what a resume continues).

Exit 0 when it does, 1 when it returns an older one.
"""

import sqlite3
import sys

from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

saver = SqliteSaver(sqlite3.connect("checkpoints.sqlite", check_same_thread=False))
config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
first = empty_checkpoint()
saved = saver.put(config, first, {"step": -1}, {})
second = create_checkpoint(first, None, 0)
saver.put(saved, second, {"step": 0}, {})
latest = saver.get_tuple(config).checkpoint["id"]
print("latest:", latest, "newest saved:", second["id"])
sys.exit(0 if latest == second["id"] else 1)
