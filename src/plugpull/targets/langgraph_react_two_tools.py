"""A LangGraph prebuilt ReAct agent whose model asks for two tools in one turn: the `langgraph-siblings` target.

    python -m plugpull.targets.langgraph_react_two_tools [--durability sync|async] start|resume

Written as a user would write it; run it through plugpull as your own agent (docs/examples.md):
    plugpull --agent "python src/plugpull/targets/langgraph_react_two_tools.py"
    plugpull --agent "python src/plugpull/targets/langgraph_react_two_tools.py" --hold charge_card

What a user writes: ``create_react_agent`` (langgraph.prebuilt) with a SqliteSaver in
$PLUGPULL_WORKDIR and two tools, ``send_email`` (the mail API takes no key, so every call
sends one) and ``charge_card`` (keyed by the tool call id LangGraph injects). The offline
scripted model asks for both in its first turn, so LangGraph runs them as two parallel tasks;
which one reaches ``record_effect`` first varies run to run, hence ``--hold`` to choose the one
the kill lands in. The lines marked ``# plugpull`` are all plugpull needs.

start: ``agent.invoke(input, config, durability=D)``; resume: ``agent.invoke(None, config,
durability=D)``, LangGraph's way to continue a thread from its last checkpoint. Never decide
"done" from ``get_state(config).next == ()``: after a kill with async durability the only
checkpoint may be the input one, whose ``next`` is empty although nothing ran.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sqlite3
import sys
import uuid
import warnings
from pathlib import Path
from typing import Annotated, Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.prebuilt import create_react_agent

from plugpull.client import announce, record_effect, record_result  # plugpull

THREAD = {"configurable": {"thread_id": "order-B-2002"}}


class TwoToolModel(BaseChatModel):
    """An offline model that decides from the conversation: both tools first, then a summary.

    Each turn that asks for tools makes new tool call ids, as a real LLM would.
    """

    def bind_tools(self, tools: Any, **kwargs: Any) -> TwoToolModel:
        return self

    @property
    def _llm_type(self) -> str:
        return "scripted-two-tools"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        if any(isinstance(m, ToolMessage) for m in messages):
            reply = AIMessage(content="Charged the card and emailed the receipt.")
        else:
            reply = AIMessage(
                content="",
                tool_calls=[
                    {"name": "send_email", "args": {"to": "b@example.com"}, "id": f"call_{uuid.uuid4().hex[:12]}"},
                    {"name": "charge_card", "args": {"cents": 4200}, "id": f"call_{uuid.uuid4().hex[:12]}"},
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def send_email(to: str) -> str:
    """Email the receipt to the customer."""
    record_effect("send_email")  # plugpull: the mail API has no idempotency key
    return f"receipt sent to {to}"


@tool
def charge_card(cents: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
    """Charge the customer's card."""
    record_effect("charge_card", key=tool_call_id)  # plugpull: keyed by the tool call id
    return f"charged {cents} cents"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--durability", choices=("sync", "async"), default="sync")
    parser.add_argument("phase", choices=("start", "resume"))
    args = parser.parse_args(argv)

    announce(framework="langgraph", version=importlib.metadata.version("langgraph"))  # plugpull
    workdir = Path(os.environ.get("PLUGPULL_WORKDIR", "."))  # plugpull: the checkpoints live here
    checkpointer = SqliteSaver(sqlite3.connect(workdir / "checkpoints.sqlite", check_same_thread=False))
    with warnings.catch_warnings():
        # create_react_agent still works in 1.x; it warns that it moved to langchain.agents.create_agent.
        warnings.simplefilter("ignore")
        agent = create_react_agent(TwoToolModel(), [send_email, charge_card], checkpointer=checkpointer)
    payload = {"messages": [HumanMessage("Charge order B-2002 and email the receipt.")]}
    final = agent.invoke(payload if args.phase == "start" else None, THREAD, durability=args.durability)
    print(final["messages"][-1].content)
    record_result({"answer": final["messages"][-1].content})  # plugpull: the run's outcome
    return 0


if __name__ == "__main__":
    sys.exit(main())
