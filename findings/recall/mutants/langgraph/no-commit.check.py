"""A checkpoint SqliteSaver.put returned from is on disk: a second connection (another process's view) reads it.

Exit 0 when it does, 1 when only the saving connection sees it (uncommitted: a SIGKILL loses it).
"""

import sqlite3
import sys

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

saver = SqliteSaver(sqlite3.connect("checkpoints.sqlite", check_same_thread=False))
config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
saver.put(config, empty_checkpoint(), {"step": 0}, {})
other = SqliteSaver(sqlite3.connect("checkpoints.sqlite", check_same_thread=False))
found = other.get_tuple(config)
print("another connection reads:", found and found.checkpoint["id"])
sys.exit(0 if found is not None else 1)
