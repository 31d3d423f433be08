"""durability="sync": a step's checkpoint is saved before the next step starts, even when the saver is slow.

A two-node graph (draft, then refund) on a SqliteSaver whose put takes 0.3 s (a database on another machine);
refund reads the thread from a second connection as it starts. Exit 0 when the newest saved checkpoint already
holds draft's write there (the docs: "sync": changes are persisted synchronously before the next step starts), 1
when it does not yet (the save still runs in the background, as with "async": a crash in refund loses draft).
"""

import operator
import sqlite3
import sys
import time
from typing import Annotated, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph

CONFIG = {"configurable": {"thread_id": "t"}}
seen = {}


class SlowSaver(SqliteSaver):
    def put(self, *args, **kwargs):
        time.sleep(0.3)
        return super().put(*args, **kwargs)


class State(TypedDict):
    done: Annotated[list, operator.add]


def refund(state: State) -> dict:
    saved = SqliteSaver(sqlite3.connect("checkpoints.sqlite", check_same_thread=False)).get_tuple(CONFIG)
    seen["done"] = saved.checkpoint["channel_values"].get("done") if saved else None
    return {"done": ["refund"]}


builder = StateGraph(State)
builder.add_node("draft", lambda state: {"done": ["draft"]})
builder.add_node("refund", refund)
builder.add_edge(START, "draft")
builder.add_edge("draft", "refund")
graph = builder.compile(checkpointer=SlowSaver(sqlite3.connect("checkpoints.sqlite", check_same_thread=False)))
graph.invoke({"done": []}, CONFIG, durability="sync")
print("saved when refund started:", seen["done"])
sys.exit(0 if seen["done"] == ["draft"] else 1)
