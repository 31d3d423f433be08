"""A tiny fake framework that runs an unfinished tool again on resume.

    python fake_framework.py BODY start|resume   (or python -m fake_framework, tests/agents on the path)

It saves "tool started" in $PLUGPULL_WORKDIR/state.json before running the tool and
"tool done" after, and on resume runs the tool again unless it is done: the
at-least-once recovery most frameworks have. BODY is what the tool does:
no-key, stable-key (a key saved with the state before the tool ran), random-key (a new
key every run), ledger (writes its own "done" file, then calls the provider) or
email-then-charge (sends an email without a key, then charges with the saved key: two effects
in one step, so a kill in the charge leaves the email done). Two bodies
charge like stable-key but end the run their own way: idle-resume (resume exits 0 at once,
doing nothing and reporting no result) and phase-result (the result names the phase that
finished the run, so a resumed run's result differs from the clean run's), and silent
(reports no result, as an agent written before record_result). Two more charge like stable-key and
keep the recovery protocol on a finished run (resume reports the result again) but not after a kill:
idle-when-unfinished (resume of an unfinished run exits 0 at once, without a result) and
crash-when-unfinished (it raises: a recovery that crashes only after a kill).

Every other finished run reports its result: {"charge": "done"} (record_result).
"""

import json
import os
import sys
import uuid
from pathlib import Path

from plugpull import record_effect, record_result


def tool(body, workdir, state):
    if body == "no-key":
        record_effect("charge")
    elif body in (
        "stable-key",
        "idle-resume",
        "phase-result",
        "silent",
        "idle-when-unfinished",
        "crash-when-unfinished",
    ):
        record_effect("charge", key=state["key"])
    elif body == "random-key":
        record_effect("charge", key=uuid.uuid4().hex)
    elif body == "ledger":
        ledger = workdir / "ledger"
        if ledger.exists():
            return
        ledger.write_text("done")
        record_effect("charge")
    elif body == "email-then-charge":
        record_effect("send_email")
        record_effect("charge", key=state["key"])
    else:
        raise SystemExit(f"unknown body {body}")


def main():
    body, phase = sys.argv[1], sys.argv[2]
    workdir = Path(os.environ["PLUGPULL_WORKDIR"])
    state_file = workdir / "state.json"
    if phase == "resume" and body == "idle-resume":
        sys.exit(0)
    if phase == "start":
        state = {"tool": "started", "key": uuid.uuid4().hex}
        state_file.write_text(json.dumps(state))
    else:
        state = json.loads(state_file.read_text())
    if phase == "resume" and state["tool"] != "done":
        if body == "idle-when-unfinished":
            sys.exit(0)
        if body == "crash-when-unfinished":
            raise RuntimeError("recovery crashed: the saved state has no charge result")
    if state["tool"] != "done":
        tool(body, workdir, state)
        state["tool"] = "done"
        state_file.write_text(json.dumps(state))
    if body != "silent":
        record_result({"charge": "done", "finished_in": phase} if body == "phase-result" else {"charge": "done"})
    print("run finished")


# A main guard: tests run this as ``python -m fake_framework`` from a fork server (tests/conftest.py, AgentForks),
# which imports the module once before it forks each phase.
if __name__ == "__main__":
    main()
