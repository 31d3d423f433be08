"""A tiny app on plugpull's Session store, for lost-session-write's golden session.

    python session_app.py HOW start|resume   (or python -m session_app)

start announces a staged input's token (announce(staged_input=...)) and a run id
(announce(run_value=...)), then writes, one store call each: the user's request (it names the
run id), the staged input, the answer. A failed write saves "pending" and exits 1; resume reads
the session and writes what is missing (get_items first, so a lost ack is not written twice).

HOW:
- correct: as above; the resumed session is the fault-free one.
- duplicates: writes the answer twice even without a fault (the probe stores it twice).
- extra-on-resume: resume also writes an item the fault-free run never stores.

Every finished run reports its result (record_result).
"""

import json
import os
import secrets
import sys
from pathlib import Path

from plugpull.client import ChannelClosed, announce, call_store, record_result

SESSION = "s"


def items(run_id: str, token: str) -> list[dict]:
    answer = {"role": "assistant", "content": "Refunded A-1001."}
    return [
        {"role": "user", "content": f"Refund order A-1001. [run {run_id}]"},
        {"role": "user", "content": f"Also email the receipt. [staged-input {token}]"},
        answer,
        *([answer] if how == "duplicates" else []),
    ]


def write_missing(run_id: str, token: str) -> None:
    stored = call_store("get_items", SESSION)
    for item in items(run_id, token):
        if phase == "resume" and item in stored:
            stored.remove(item)
            continue
        call_store("add_items", SESSION, items=[item])


# A main guard: tests run this as ``python -m session_app`` from a fork server (tests/forked_agents.py), which
# imports the module once before it forks each phase. What it sets here are the module's globals, as before.
if __name__ == "__main__":
    how, phase = sys.argv[1], sys.argv[2]
    state_file = Path(os.environ["PLUGPULL_WORKDIR"]) / "pending.json"
    if phase == "start":
        run_id, token = secrets.token_hex(6), secrets.token_hex(8)
        announce(run_value=run_id)
        announce(staged_input=token)
        state_file.write_text(json.dumps({"run_id": run_id, "token": token}))
        try:
            write_missing(run_id, token)
        except ChannelClosed as exc:
            print(f"session write failed: {exc}", file=sys.stderr)
            sys.exit(1)
    else:
        saved = json.loads(state_file.read_text())
        write_missing(saved["run_id"], saved["token"])
        if how == "extra-on-resume":
            call_store("add_items", SESSION, items=[{"role": "assistant", "content": "Resumed after a failure."}])
    record_result({"answer": "Refunded A-1001."})
    print("done")
