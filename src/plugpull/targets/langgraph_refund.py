"""A LangGraph refund agent that plugpull can break: the built-in `langgraph` target.

    python -m plugpull.targets.langgraph_refund [no-key|tool-call-id|ledger] [--durability sync|async|exit] start
    python -m plugpull.targets.langgraph_refund [no-key|tool-call-id|ledger] [--durability sync|async|exit] resume

Written as a user would write it; run it through plugpull as your own agent (docs/examples.md):
    plugpull --agent "python src/plugpull/targets/langgraph_refund.py tool-call-id"

A real StateGraph (model node + ToolNode) with a real SqliteSaver in $PLUGPULL_WORKDIR
and a scripted, offline chat model. The lines marked ``# plugpull`` are all an agent
needs to be tested: report each outside action with ``record_effect``.

Tool variants (what the refund tool passes as the idempotency key):
- ``no-key``: none, so every call is a new refund (a real API without keys).
- ``tool-call-id``: the tool call id LangGraph injects (InjectedToolCallId). Stable across
  a resume only if the model's message that made the call was checkpointed.
- ``ledger``: no key; the tool writes "refunded" to its own file first, then calls the
  API, and skips the call when the file says it is done (a common, broken pattern).

start: ``graph.invoke(input, config, durability=D)``; resume: ``graph.invoke(None, config,
durability=D)``, LangGraph's own way to continue a thread from its last checkpoint. A thread with
no checkpoint at all (killed before LangGraph wrote the input's) has nothing to continue:
``invoke(None)`` raises EmptyInputError there by design (langgraph/pregel/_loop.py), so resume
submits the input again, as a correct app does when nothing of the run was saved.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sqlite3
import sys
import time
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

from plugpull.client import announce, boundary, record_effect, record_result  # plugpull

THREAD = {"configurable": {"thread_id": "refund-A-1001"}}


class ScriptedChatModel(BaseChatModel):
    """An offline model that decides from the conversation, like a real LLM would.

    langchain_core's fake chat models raise from ``bind_tools`` and count replies in the
    process, so a resumed process would replay the wrong one (docs/architecture.md). This one
    asks for the refund tool until the conversation holds a tool result, and makes a new
    tool call id every time it runs, as a real LLM does.
    """

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self

    @property
    def _llm_type(self) -> str:
        return "plugpull-scripted"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        if any(isinstance(m, ToolMessage) for m in messages):
            reply = AIMessage(content="Refund for order A-1001 is done.")
        else:
            call = {
                "name": "refund",
                "args": {"order_id": "A-1001", "cents": 1999},
                "id": f"call_{uuid.uuid4().hex[:16]}",
            }
            reply = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


class Phase:
    """What the refund tool reads of the phase it runs in, filled in when the phase starts.

    The tool and the graph can be built before the phase exists: plugpull's fork server builds them
    once, before it forks each phase's process (``plugpull_prefork`` below).
    """

    def __init__(self, wait_checkpoint: bool = False) -> None:
        self.workdir = Path(".")
        self.graph: Any = None
        self.wait_checkpoint = wait_checkpoint

    def wait_for_checkpoint(self, limit: float = 30.0) -> None:
        deadline = time.monotonic() + limit
        while self.graph.get_state(THREAD).next != ("tools",):
            if time.monotonic() > deadline:
                raise RuntimeError("the checkpoint before the tool step was never saved")
            time.sleep(0.01)


def make_refund_tool(variant: str, phase: Phase):
    @tool
    def refund(order_id: str, cents: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
        """Refund an order at the payment provider."""
        if phase.wait_checkpoint:
            phase.wait_for_checkpoint()
        if variant == "ledger":
            ledger = phase.workdir / f"refunded-{order_id}"
            if ledger.exists():
                return f"order {order_id} was already refunded"
            ledger.write_text("refunded")
        key = tool_call_id if variant == "tool-call-id" else None
        record_effect("refund", key=key)  # plugpull
        return f"refunded {cents} cents on order {order_id}"

    return refund


class MarkedSqliteSaver(SqliteSaver):
    """LangGraph's own SqliteSaver, each write marked as a boundary for plugpull's every-boundary map.

    ``put`` saves a checkpoint, ``put_writes`` a task's pending writes; both still do the saving
    (the marks only tell plugpull where the run is). Outside every-boundary the marks send nothing.
    """

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        with boundary("checkpoint-save"):  # plugpull
            return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        with boundary("pending-writes"):  # plugpull
            return super().put_writes(config, writes, task_id, task_path)


def build_graph(checkpointer: SqliteSaver | None, refund_tool: Any):
    model = ScriptedChatModel()

    def call_model(state: MessagesState) -> dict:
        with boundary("model-call"):  # plugpull: a step a crash can land next to
            return {"messages": [model.bind_tools([refund_tool]).invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode([refund_tool]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=checkpointer)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant", choices=("no-key", "tool-call-id", "ledger"))
    parser.add_argument("--durability", choices=("sync", "async", "exit"), default="sync")
    parser.add_argument(
        "--wait-checkpoint",
        action="store_true",
        help="the tool waits until LangGraph has saved the checkpoint it runs from (async durability "
        "saves it in the background, so without this the outcome depends on timing)",
    )
    parser.add_argument("phase", choices=("start", "resume"))
    return parser.parse_args(argv)


def run(args: argparse.Namespace, phase: Phase, prebuilt: Any = None, version: str | None = None) -> int:
    """One phase; ``prebuilt`` is the graph compiled without a checkpointer before this process existed,
    ``version`` langgraph's version read there (the same installation)."""
    phase.workdir = workdir = Path(os.environ.get("PLUGPULL_WORKDIR", "."))
    announce(framework="langgraph", version=version or importlib.metadata.version("langgraph"))  # plugpull
    conn = sqlite3.connect(workdir / "checkpoints.sqlite", check_same_thread=False)
    checkpointer = MarkedSqliteSaver(conn)
    if prebuilt is None:
        graph = build_graph(checkpointer, make_refund_tool(args.variant, phase))
    else:
        # This process's own copy of the graph (a fork's): the checkpointer opened here, in the phase's workdir.
        graph, graph.checkpointer = prebuilt, checkpointer
    phase.graph = graph
    request = {"messages": [HumanMessage("Please refund order A-1001.")]}
    # Resume continues from the last checkpoint; with none saved yet, the run starts over from its input.
    payload = request if args.phase == "start" or checkpointer.get_tuple(THREAD) is None else None
    final = graph.invoke(payload, THREAD, durability=args.durability)
    answer = final["messages"][-1].content
    record_result({"answer": answer})  # plugpull: the run's outcome, compared with the clean run's
    print(answer)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return run(args, Phase(args.wait_checkpoint))


def plugpull_prefork(argv: list[str]):  # plugpull (optional): what --fork-server builds once, before it forks
    """Build the tool and the graph in plugpull's fork server; the forked phase only opens its checkpointer.

    Called with the phase's arguments before the fork (docs/DECISIONS.md, "Throughput"); what
    it returns runs in the forked process instead of this module as ``__main__``. Nothing here may open a
    file or a socket of the phase: the workdir and the channel are the forked process's.
    """
    # What the first invoke would import in every forked phase (langchain_core's callback manager
    # imports its tracer hooks on first use, a message its content-block translator): imported once here.
    import langchain_core.messages.block_translators.langchain_v0  # noqa: F401
    import langchain_core.tracers.context  # noqa: F401
    import langchain_core.tracers.stdout  # noqa: F401

    args = parse(argv)
    phase = Phase(args.wait_checkpoint)
    graph = build_graph(None, make_refund_tool(args.variant, phase))
    version = importlib.metadata.version("langgraph")  # reads the installation's metadata files: once
    return lambda: run(args, phase, graph, version)


if __name__ == "__main__":
    sys.exit(main())
