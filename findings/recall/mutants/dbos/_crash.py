"""A two-step DBOS workflow on SQLite killed (SIGKILL) in its second step, then recovered by DBOS.launch().

``python _crash.py start`` runs it and dies in step two; ``python _crash.py recover`` launches DBOS, which
recovers the workflow, and prints its status. steps.log counts each step's runs.
"""

import os
import signal
import sys
import time

from dbos import DBOS, SetWorkflowID

DBOS(config={"name": "recall-check", "system_database_url": "sqlite:///dbos.sqlite", "application_version": "1"})


def ran(name: str) -> None:
    with open("steps.log", "a") as log:
        log.write(name + "\n")


@DBOS.step()
def first() -> str:
    ran("first")
    return "drafted"


@DBOS.step()
def second(draft: str) -> str:
    ran("second")
    if sys.argv[1] == "start":
        os.kill(os.getpid(), signal.SIGKILL)
    return draft + ", refunded"


@DBOS.workflow()
def refund() -> str:
    return second(first())


DBOS.launch()
if sys.argv[1] == "start":
    with SetWorkflowID("wf-1"):
        refund()
else:
    handle = DBOS.retrieve_workflow("wf-1")
    deadline = time.monotonic() + 60
    while handle.get_status().status in ("PENDING", "ENQUEUED") and time.monotonic() < deadline:
        time.sleep(0.05)
    print(handle.get_status().status)
    DBOS.destroy()
