"""A tiny fake framework that saves its plan from a background thread while its tool runs.

    python background_saver.py background|main-thread|unmarked start|resume   (or python -m background_saver)

start draws the charge's idempotency key (as a model makes a new tool call id) and saves it to
$PLUGPULL_WORKDIR/plan.json, marked ``plan-save`` with plugpull.boundary: from a background thread
("background", like LangGraph's checkpoint writer under durability="async"), before the tool on the
main thread ("main-thread", like durability="sync"), or unmarked ("unmarked"). The tool charges with
that key. resume reuses the saved key, or draws a new one when the plan was never saved, so whether
the plan landed before the kill decides between one charge and two. A run that finishes waits for its
save first, so resume of a finished run finds the plan (plugpull checks that first).
"""

import json
import os
import sys
import threading
import uuid
from pathlib import Path

from plugpull import boundary, record_effect, record_result


def save(how: str, plan: Path, key: str) -> None:
    if how == "unmarked":
        plan.write_text(json.dumps({"key": key}))
        return
    with boundary("plan-save"):
        plan.write_text(json.dumps({"key": key}))


def main():
    how, phase = sys.argv[1], sys.argv[2]
    plan = Path(os.environ["PLUGPULL_WORKDIR"]) / "plan.json"
    saver = None
    if phase == "resume" and plan.exists():
        key = json.loads(plan.read_text())["key"]
    else:
        key = uuid.uuid4().hex
        if how == "main-thread":
            save(how, plan, key)
        else:
            saver = threading.Thread(target=save, args=(how, plan, key), daemon=True)
            saver.start()
    record_effect("charge", key=key)
    if saver is not None:
        saver.join()
    record_result({"charged": True})


# A main guard: tests run this as ``python -m background_saver`` from a fork server (tests/conftest.py, AgentForks),
# which imports the module once before it forks each phase.
if __name__ == "__main__":
    main()
