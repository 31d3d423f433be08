"""A fake framework whose tool meets a failed outside call, for tool-error (plugpull.ToolFault from record_effect).

    python tool_error_agent.py HANDLING start|resume   (or python -m tool_error_agent, tests/agents on the path)

Like fake_framework.py it saves "tool started" in $PLUGPULL_WORKDIR/state.json before the tool and "tool done"
after, and on resume runs an unfinished tool again. HANDLING is what the framework does when the call raises:

- crash: nothing; the error ends start (resume runs the tool again, without a key);
- crash-keyed: the same, the call keyed by a key saved before the tool ran;
- retry: the framework's retry policy calls the tool again once, without a key;
- retry-keyed: the same with the saved key (the framework's own call id);
- report: the error goes to the model, which gives up: the result claims the refund failed;
- claims-done: the error goes to the model, and the model's answer says the refund is done anyway (a framework that
  dropped the error from the history would read so);
- no-claims: as report, but the result says nothing of what the run claims;
- timeout-retry, timeout-retry-keyed: the call runs in a thread the framework waits 0.5 s for (its own tool
  timeout); if it has not returned, the framework gives up on it and calls again (hang-after-effect);
- slow-HANDLING: HANDLING after 2 s in the error handler, as a framework busy with the error (its retry's backoff,
  the model told), so raise-after-effect-then-sigkill's kill lands in the handling every time.

A finished run reports ``{"answer": ..., "claims": {"refund": "done" | "failed"}}``.
"""

import json
import os
import sys
import threading
import time
import uuid
from pathlib import Path

from plugpull import ToolFault, ToolTimeout, record_effect, record_result


def refund(handling, state):
    key = state["key"] if handling.endswith("-keyed") else None
    if handling.startswith("timeout-"):
        call = threading.Thread(target=record_effect, args=("refund",), kwargs={"key": key})
        call.start()
        call.join(0.5)
        if call.is_alive():  # its tool timeout: it gives up on the call and calls again (the thread ends with it)
            record_effect("refund", key=key)
        return "done"
    try:
        record_effect("refund", key=key)
        return "done"
    except (ToolFault, ToolTimeout):
        if handling.startswith("slow-"):
            time.sleep(2)
            handling = handling.removeprefix("slow-")
        if handling.startswith("crash"):
            raise
        if handling.startswith("retry"):
            record_effect("refund", key=key)
            return "done"
        return "done" if handling == "claims-done" else "failed"


def main():
    handling, phase = sys.argv[1], sys.argv[2]
    state_file = Path(os.environ["PLUGPULL_WORKDIR"]) / "state.json"
    if phase == "start":
        state = {"tool": "started", "key": uuid.uuid4().hex}
        state_file.write_text(json.dumps(state))
    else:
        state = json.loads(state_file.read_text())
    if state["tool"] != "done":
        state["said"] = refund(handling, state)
        state["tool"] = "done"
        state_file.write_text(json.dumps(state))
    answer = "The refund is done." if state["said"] == "done" else "The refund could not be done."
    record_result(
        {"answer": answer} if handling == "no-claims" else {"answer": answer, "claims": {"refund": state["said"]}}
    )


if __name__ == "__main__":
    main()
