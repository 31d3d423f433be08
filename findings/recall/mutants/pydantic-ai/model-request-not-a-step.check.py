"""A DBOSAgent run killed (SIGKILL) inside its tool is recovered with the model's saved tool call, not a new one.

The first process runs the agent and dies in the tool; the second launches DBOS, which recovers the run. Exit 0
when the tool ran both times for the same tool call id (the model's answer came from DBOS's record), 1 when the
recovered run asked the model again and got a new call.
"""

import os
import signal
import subprocess
import sys
import uuid
import warnings
from pathlib import Path

from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel


def respond(messages, info):
    if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
        return ModelResponse(parts=[TextPart("refunded")])
    return ModelResponse(parts=[ToolCallPart("refund", {}, tool_call_id=f"call_{uuid.uuid4().hex[:12]}")])


agent = Agent(FunctionModel(respond), name="refund_agent")


@agent.tool
def refund(ctx: RunContext[None]) -> str:
    with open("calls.log", "a") as log:
        log.write(ctx.tool_call_id + "\n")
    if sys.argv[1:] == ["start"]:
        os.kill(os.getpid(), signal.SIGKILL)
    return "done"


if sys.argv[1:]:
    DBOS(config={"name": "recall-check", "system_database_url": "sqlite:///dbos.sqlite", "application_version": "1"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pydantic_ai.durable_exec.dbos import DBOSAgent

        durable = DBOSAgent(agent)
    DBOS.launch()
    if sys.argv[1] == "start":
        with SetWorkflowID("wf-1"):
            durable.run_sync("refund my order")
    else:
        print(DBOS.retrieve_workflow("wf-1").get_result().output)
    DBOS.destroy()
    sys.exit(0)

subprocess.run([sys.executable, __file__, "start"], capture_output=True)
subprocess.run([sys.executable, __file__, "recover"], capture_output=True, timeout=120)
calls = Path("calls.log").read_text().split()
print("tool call ids the tool ran for:", calls)
sys.exit(0 if len(calls) == 2 and len(set(calls)) == 1 else 1)
