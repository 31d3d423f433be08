"""A tiny fake framework with approval pauses, for resume-after-approval.

    python approval_framework.py HOW [MARKER] start|approve|recover   (or python -m approval_framework)

start writes the run ($PLUGPULL_WORKDIR/run.json, with an idempotency key drawn once) and a
pending-approval file, and exits 0 with no effect. approve claims the pending approval by
renaming it (atomic on one filesystem: exactly one renamer wins), runs the tool
(record_effect("refund", key=the run's key)) and marks the run done; a lost claim exits 3.
recover re-runs the tool of a claimed, unfinished run with the same key.

HOW is "correct" or one way to break a boundary:
- in-memory: the pause is never written down, so another process finds nothing to approve;
- no-claim: approve never claims the pause (a second approval runs the tool again);
- racy-claim: check, then claim later (sequential approvals are refused, racing ones are not);
- no-key: the tool calls without a key (recovery after the effect refunds again);
- stuck: recover refuses a claimed run ("already resumed"), as a framework whose claim
  cannot be taken back would;
- idle-recover: recover exits 0 at once, finishing nothing and reporting no result;
- setsid-helper: correct, but the tool starts a helper in a new session around its call and
  tells it to stop after; a helper whose tool died goes on as a background writer.
- recover-leaves-helper: correct, but recover leaves a helper in a new session running.
- pauses-again: approve claims the pause and then, instead of running the tool, writes the pause back
  and exits 5 (the run paused again), as a framework that lost the approval on resume would
  (https://github.com/openai/openai-agents-python/issues/4244);
- recover-pauses-again: correct approve, but recover of a claimed run pauses it again (exit 5).

A phase that finishes the run reports its result: {"refund": "done"} (record_result).
"""

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from plugpull.client import gate, record_effect, record_result

REFUSED = 3
PAUSED_AGAIN = 5


def refuse(why: str) -> None:
    print(f"refused: {why}", file=sys.stderr)
    sys.exit(REFUSED)


def pause_again(pending: Path) -> None:
    pending.write_text("refund needs approval")
    print("paused for approval again: the approval was lost", file=sys.stderr)
    sys.exit(PAUSED_AGAIN)


def tool(how: str, phase: str, run_file: Path, done: Path) -> None:
    key = None if how == "no-key" else json.loads(run_file.read_text())["key"]
    helper = None
    if how == "setsid-helper":
        code = "import sys, time; sys.stdin.buffer.readline() == b'done\\n' or time.sleep(600)"
        helper = subprocess.Popen(
            [sys.executable, "-c", code, *sys.argv[2:-1]], stdin=subprocess.PIPE, start_new_session=True
        )
    record_effect("refund", key=key)
    if helper is not None:
        helper.communicate(b"done\n")
    done.write_text("done")
    if how == "recover-leaves-helper" and phase == "recover":
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)", *sys.argv[2:-1]], start_new_session=True
        )
    record_result({"refund": "done"})


def main():
    # A marker may stand between HOW and the phase, so tests can find their own processes.
    how, phase = sys.argv[1], sys.argv[-1]
    workdir = Path(os.environ["PLUGPULL_WORKDIR"])
    run_file, pending, claimed, done = (workdir / n for n in ("run.json", "pending", "claimed", "done"))
    if phase == "start":
        run_file.write_text(json.dumps({"key": uuid.uuid4().hex}))
        if how != "in-memory":
            pending.write_text("refund needs approval")
        print("paused for approval")
    elif phase == "approve":
        gate()
        if how == "no-claim":
            if not run_file.exists():
                refuse("no paused run")
        elif how == "racy-claim":
            if not pending.exists():
                refuse("already resumed")
            time.sleep(0.3)
            claimed.write_text("claimed")
            pending.unlink(missing_ok=True)
        else:
            try:
                os.rename(pending, claimed)
            except FileNotFoundError:
                refuse("already resumed (no pending approval to claim)")
        if how == "pauses-again":
            pause_again(pending)
        tool(how, phase, run_file, done)
    elif phase == "recover":
        if how == "idle-recover":
            print("recovered (nothing done)")
        elif done.exists():
            print("nothing to do: the run is finished")
            record_result({"refund": "done"})
        elif how == "stuck":
            refuse("already resumed: the approval was claimed and cannot be resumed again")
        elif not claimed.exists() and how != "no-claim":
            refuse("no approved run to recover")
        elif how == "recover-pauses-again":
            pause_again(pending)
        else:
            tool(how, phase, run_file, done)
    else:
        raise SystemExit(f"unknown phase {phase}")


# A main guard: tests run this as ``python -m approval_framework`` from a fork server (tests/conftest.py, AgentForks),
# which imports the module once before it forks each phase.
if __name__ == "__main__":
    main()
