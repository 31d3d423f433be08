"""A LangGraph order flow with three effects in sequence, each written its own way.

    python langgraph_order_flow.py start|resume

A StateGraph of three nodes, each one tool call at an outside API: ``reserve_stock`` (idempotent by
the order id: its key), ``charge_card`` (no key: every call charges) and ``send_receipt`` (keyed by a
uuid drawn on every run of the node, so a re-run is a new receipt). A real SqliteSaver in
$PLUGPULL_WORKDIR and ``durability="sync"``: each node's checkpoint is on disk before the next node
starts. start: ``graph.invoke(order, config)``; resume: ``graph.invoke(None, config)`` (LangGraph
re-runs the node the last checkpoint had not finished; on a finished thread it runs nothing and
returns the final state). A crash after charge_card's or send_receipt's effect makes resume run
that node again: a second charge, a second receipt; reserve_stock's key keeps it at one.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import uuid
from pathlib import Path
from typing import TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from plugpull import record_effect, record_result  # plugpull

CONFIG = {"configurable": {"thread_id": "order-A-1001"}}


class Order(TypedDict, total=False):
    order_id: str
    reserved: bool
    charged: bool
    receipt: bool


def reserve_stock(order: Order) -> Order:
    record_effect("reserve_stock", key=order["order_id"])  # plugpull: idempotent by order id
    return {"reserved": True}


def charge_card(order: Order) -> Order:
    record_effect("charge_card")  # plugpull: no key, every call charges
    return {"charged": True}


def send_receipt(order: Order) -> Order:
    record_effect("send_receipt", key=uuid.uuid4().hex)  # plugpull: a fresh key on every run
    return {"receipt": True}


def build(checkpointer: SqliteSaver):
    builder = StateGraph(Order)
    for node in (reserve_stock, charge_card, send_receipt):
        builder.add_node(node.__name__, node)
    builder.add_edge(START, "reserve_stock")
    builder.add_edge("reserve_stock", "charge_card")
    builder.add_edge("charge_card", "send_receipt")
    builder.add_edge("send_receipt", END)
    return builder.compile(checkpointer=checkpointer)


def main(phase: str) -> int:
    workdir = Path(os.environ.get("PLUGPULL_WORKDIR", "."))
    conn = sqlite3.connect(workdir / "orders.sqlite", check_same_thread=False)
    saver = SqliteSaver(conn)
    graph = build(saver)
    # With no checkpoint at all (killed before the input's was written) there is nothing to continue.
    payload = {"order_id": "A-1001"} if phase == "start" or saver.get_tuple(CONFIG) is None else None
    final = graph.invoke(payload, CONFIG, durability="sync")
    record_result({k: final.get(k) for k in ("order_id", "reserved", "charged", "receipt")})  # plugpull
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
