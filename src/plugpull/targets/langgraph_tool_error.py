"""A LangGraph refund agent whose tool's outside call can fail: the built-in `langgraph-tool-error` target.

    python -m plugpull.targets.langgraph_tool_error HANDLING KEY [--two-tools] start|resume

A real StateGraph (model node + ToolNode) with a real SqliteSaver in $PLUGPULL_WORKDIR and a scripted, offline
model, as langgraph_refund.py, configured one of the ways LangGraph offers for a tool that raises (HANDLING):

- ``raise``: ToolNode's default ``handle_tool_errors``, which turns only a ToolInvocationError (bad arguments) into
  a message and raises anything else (langgraph/prebuilt/tool_node.py, ``_default_handle_tool_errors``): the error
  ends the run, and resume continues the thread from its last checkpoint (``invoke(None)``);
- ``retry-policy``: the same ToolNode added with ``retry_policy=RetryPolicy(...)``, LangGraph's own node retry,
  which retries a ConnectionError by default (``default_retry_on``);
- ``to-model``: ``ToolNode(handle_tool_errors=True)``: the error becomes the tool's message (status "error") and
  the model, which reads it, asks for the refund again once (a new tool call, as a real LLM does);
- ``to-model-give-up``: the same, and the model answers that the refund could not be done.

KEY is what the tool passes as the idempotency key: ``none`` or ``tool-call-id`` (InjectedToolCallId).

With ``--two-tools`` the model asks for ``send_email`` (no key: a mail API takes none) and ``refund`` in one turn:
two tool calls of one AIMessage, which the ToolNode runs in parallel inside one node (one task of the superstep,
so its writes are saved together or not at all). The model asks again only for what is not answered yet.

The result claims what the history says: the refund is "done" when the last refund ToolMessage the model read is
not an error, else "failed" (docs/agent-protocol.md, "Tool errors").
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sqlite3
import sys
import uuid
from pathlib import Path
from typing import Annotated, Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import RetryPolicy

from plugpull.client import announce, record_effect, record_result  # plugpull

THREAD = {"configurable": {"thread_id": "refund-A-1001"}}
HANDLINGS = ("raise", "retry-policy", "to-model", "to-model-give-up")


def refund_messages(messages: list[BaseMessage]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage) and m.name == "refund"]


class ScriptedChatModel(BaseChatModel):
    """Asks for the refund; reads the tool's answer. An error answer is retried once (a new tool call) unless the
    model gives up; then it says what the last answer said."""

    give_up: bool = False
    two_tools: bool = False

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    @property
    def _llm_type(self) -> str:
        return "plugpull-scripted"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        answers = refund_messages(messages)
        errors = [m for m in answers if m.status == "error"]
        if answers and (answers[-1].status != "error" or self.give_up or len(errors) >= 2):
            done = answers[-1].status != "error"
            reply = AIMessage(content="Refund for order A-1001 is done." if done else "The refund could not be done.")
        else:
            call = {
                "name": "refund",
                "args": {"order_id": "A-1001", "cents": 1999},
                "id": f"call_{uuid.uuid4().hex[:16]}",
            }
            emailed = any(isinstance(m, ToolMessage) and m.name == "send_email" for m in messages)
            email = {"name": "send_email", "args": {"order_id": "A-1001"}, "id": f"call_{uuid.uuid4().hex[:16]}"}
            # As a real model would, it asks only for what is not answered yet.
            reply = AIMessage(content="", tool_calls=[email, call] if self.two_tools and not emailed else [call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def claim(messages: list[BaseMessage], name: str) -> str:
    """What the history says of tool ``name``: done when its last ToolMessage is not an error, else failed."""
    answers = [m for m in messages if isinstance(m, ToolMessage) and m.name == name]
    return "done" if answers and answers[-1].status != "error" else "failed"


def make_refund_tool(key: str):
    @tool
    def refund(order_id: str, cents: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Refund an order at the payment provider."""
        record_effect("refund", key=tool_call_id if key == "tool-call-id" else None)  # plugpull: may raise
        return f"refunded {cents} cents on order {order_id}"

    return refund


@tool
def send_email(order_id: str) -> str:
    """Tell the customer the order is being refunded."""
    record_effect("send_email")  # plugpull: the mail API takes no key
    return f"emailed the customer of order {order_id}"


def build_graph(checkpointer: SqliteSaver | None, handling: str, key: str, two_tools: bool = False):
    model = ScriptedChatModel(give_up=handling == "to-model-give-up", two_tools=two_tools)
    refund_tool = make_refund_tool(key)
    tools = [send_email, refund_tool] if two_tools else [refund_tool]

    def call_model(state: MessagesState) -> dict:
        return {"messages": [model.bind_tools(tools).invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    if handling == "retry-policy":
        # LangGraph's node retry, its documented defaults but for a short first interval (0.5 s by default).
        builder.add_node("tools", ToolNode(tools), retry_policy=RetryPolicy(initial_interval=0.05))
    elif handling in ("to-model", "to-model-give-up"):
        builder.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    else:
        builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=checkpointer)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("handling", choices=HANDLINGS)
    parser.add_argument("key", choices=("none", "tool-call-id"))
    parser.add_argument("--two-tools", action="store_true", help="send_email and refund in one model turn")
    parser.add_argument("phase", choices=("start", "resume"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    workdir = Path(os.environ.get("PLUGPULL_WORKDIR", "."))
    announce(framework="langgraph", version=importlib.metadata.version("langgraph"))  # plugpull
    conn = sqlite3.connect(workdir / "checkpoints.sqlite", check_same_thread=False)
    checkpointer = SqliteSaver(conn)
    graph = build_graph(checkpointer, args.handling, args.key, args.two_tools)
    request = {"messages": [HumanMessage("Please refund order A-1001.")]}
    payload = request if args.phase == "start" or checkpointer.get_tuple(THREAD) is None else None
    final = graph.invoke(payload, THREAD, durability="sync")
    names = ["send_email", "refund"] if args.two_tools else ["refund"]
    answer = final["messages"][-1].content
    claims = {name: claim(final["messages"], name) for name in names}
    record_result({"answer": answer, "claims": claims})  # plugpull: what the history says was done
    print(answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
