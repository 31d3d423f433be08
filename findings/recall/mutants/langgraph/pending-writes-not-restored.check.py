"""A superstep killed after one of its two tasks finished: the resume runs only the other task.

Two nodes run in the same superstep; ``finished`` returns, ``killed`` dies with the process (SIGKILL). The
finished task's writes are saved as the checkpoint's pending writes (langgraph/pregel/_loop.py, put_writes), and a
new process that resumes the thread (``invoke(None, config)``) applies them instead of running the node again.
Exit 0 when ``finished`` ran once in all, 1 when the resume ran it again.
"""

import operator
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph


class State(TypedDict):
    done: Annotated[list, operator.add]


def ran(name: str) -> None:
    with open("runs.log", "a") as log:
        log.write(name + "\n")


def finished(state: State) -> dict:
    ran("finished")
    return {"done": ["finished"]}


def killed(state: State) -> dict:
    ran("killed")
    if sys.argv[1] == "start":
        while "finished" not in Path("runs.log").read_text().split():
            time.sleep(0.01)
        time.sleep(0.5)  # the finished task's writes are saved once its node returns
        os.kill(os.getpid(), signal.SIGKILL)
    return {"done": ["killed"]}


if sys.argv[1:]:
    builder = StateGraph(State)
    builder.add_node("finished", finished)
    builder.add_node("killed", killed)
    builder.add_edge(START, "finished")
    builder.add_edge(START, "killed")
    graph = builder.compile(checkpointer=SqliteSaver(sqlite3.connect("checkpoints.sqlite", check_same_thread=False)))
    config = {"configurable": {"thread_id": "t"}}
    if sys.argv[1] == "start":
        graph.invoke({"done": []}, config, durability="sync")
    else:
        print(graph.invoke(None, config, durability="sync"))
    sys.exit(0)

subprocess.run([sys.executable, __file__, "start"], capture_output=True)
subprocess.run([sys.executable, __file__, "resume"], capture_output=True, timeout=120)
runs = Path("runs.log").read_text().split()
print("node runs:", runs)
sys.exit(0 if runs.count("finished") == 1 and runs.count("killed") == 2 else 1)
