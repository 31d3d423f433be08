"""A finished task's writes saved with SqliteSaver.put_writes come back as the checkpoint's pending writes.

Exit 0 when they do (what LangGraph promises: a resumed superstep skips the finished task), 1 when lost.
"""

import sqlite3
import sys

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

saver = SqliteSaver(sqlite3.connect("checkpoints.sqlite", check_same_thread=False))
config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
saved = saver.put(config, empty_checkpoint(), {"step": 0}, {})
saver.put_writes(saved, [("messages", "the refund tool's answer")], task_id="finished-task")
writes = saver.get_tuple(config).pending_writes
print("pending writes:", writes)
sys.exit(0 if ("finished-task", "messages", "the refund tool's answer") in writes else 1)
