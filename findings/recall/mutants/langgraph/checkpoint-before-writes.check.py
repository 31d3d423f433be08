"""A finished run's newest checkpoint holds every node's writes and nothing left to run.

A two-node graph (draft, then refund) runs to its end with SqliteSaver (durability "sync"); a second connection
reads the thread back. Exit 0 when the newest checkpoint holds both nodes' writes and no next node, 1 when it was
saved before the last node's writes were applied (a resume would run that node again).
"""

import operator
import sqlite3
import sys
from typing import Annotated, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph


class State(TypedDict):
    done: Annotated[list, operator.add]


def build(conn: sqlite3.Connection):
    builder = StateGraph(State)
    builder.add_node("draft", lambda state: {"done": ["draft"]})
    builder.add_node("refund", lambda state: {"done": ["refund"]})
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "refund")
    return builder.compile(checkpointer=SqliteSaver(conn))


config = {"configurable": {"thread_id": "t"}}
build(sqlite3.connect("checkpoints.sqlite", check_same_thread=False)).invoke({"done": []}, config, durability="sync")
state = build(sqlite3.connect("checkpoints.sqlite", check_same_thread=False)).get_state(config)
print("saved:", state.values, "next:", state.next)
sys.exit(0 if state.values.get("done") == ["draft", "refund"] and state.next == () else 1)
