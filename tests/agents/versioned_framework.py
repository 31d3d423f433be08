"""A tiny fake framework with releases: what it saves names the release that saved it.

    python versioned_framework.py RELEASE POLICY start|resume   (or python -m versioned_framework)

start saves {"release": RELEASE, "key": ...} in $PLUGPULL_WORKDIR/state.json before the tool runs
and charges with the saved key (idempotent, so only the upgrade can break the run). resume loads the
state and charges again unless the tool is done. POLICY says what resume does with a state another
release saved: "accept" loads it; "refuse" raises, as a framework that checks the saved version does;
"broken" cannot even import (every phase, clean runs too), as a release whose environment lacks a module.
"""

import json
import os
import sys
import uuid
from pathlib import Path

from plugpull.client import announce, record_effect, record_result


def main():
    release, policy, phase = sys.argv[1], sys.argv[2], sys.argv[3]
    if policy == "broken":
        raise ImportError(f"cannot import name 'Workflow' from 'fakefw' (release {release})")
    announce(framework="fakefw", version=release)
    state_file = Path(os.environ["PLUGPULL_WORKDIR"]) / "state.json"
    if phase == "start":
        state = {"release": release, "tool": "started", "key": uuid.uuid4().hex}
        state_file.write_text(json.dumps(state))
    else:
        state = json.loads(state_file.read_text())
        if state["release"] != release and policy == "refuse":
            raise ValueError(f"state saved by fakefw {state['release']} is not compatible with fakefw {release}")
    if state["tool"] != "done":
        record_effect("charge", key=state["key"])
        state["tool"] = "done"
        state_file.write_text(json.dumps(state))
    record_result({"charge": "done"})


# A main guard: tests run this as ``python -m versioned_framework`` from a fork server (tests/conftest.py,
# AgentForks), which imports the module once before it forks each phase.
if __name__ == "__main__":
    main()
