"""Agents that get the --agent protocol wrong (docs/agent-protocol.md), for the hints plugpull prints about them.

    python protocol_mistakes.py HOW [STATE_DIR] start|resume

HOW:
- start-only: its argparse knows only `start`, so `resume` exits 2 with argparse's usage.
- state-outside: keeps its run in STATE_DIR instead of $PLUGPULL_WORKDIR; a run found there
  finished is not started again (start exits 0 without calling the tool).
- forgets-on-resume: start calls the tool; resume says the run is already finished and exits 0.
"""

import argparse
import json
import sys
from pathlib import Path

from plugpull import record_effect


def main():
    how = sys.argv[1]
    if how == "start-only":
        parser = argparse.ArgumentParser(prog="protocol_mistakes.py start-only")
        parser.add_argument("phase", choices=("start",))
        parser.parse_args(sys.argv[2:])
        record_effect("charge", key="order-1")
    elif how == "state-outside":
        state = Path(sys.argv[2]) / "run.json"
        if state.exists() and json.loads(state.read_text())["done"]:
            print(f"{sys.argv[-1]}: run already finished", file=sys.stderr)
            sys.exit(0)
        record_effect("charge", key="order-1")
        state.write_text(json.dumps({"done": True}))
    elif how == "forgets-on-resume":
        if sys.argv[-1] == "resume":
            print("resume: run already finished", file=sys.stderr)
            sys.exit(0)
        record_effect("charge", key="order-1")
    else:
        raise SystemExit(f"unknown HOW {how}")


# A main guard: tests run this as ``python -m protocol_mistakes`` from a fork server (tests/conftest.py, AgentForks),
# which imports the module once before it forks each phase.
if __name__ == "__main__":
    main()
