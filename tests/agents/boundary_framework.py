"""A fake framework with a file-based checkpoint and known unsafe boundaries.

    python boundary_framework.py VARIANT start|resume   (or python -m boundary_framework, tests/agents on the path)

The run: model-call 1 (asks for the refund), checkpoint-save 1 (saves "refund asked"), the
refund (``record_effect("refund")``, no key), checkpoint-save 2 (saves "refund done"),
model-call 2 (the answer), checkpoint-save 3 ("answered", with the answer). Resume reads the checkpoint and
continues after the last saved step, the at-least-once recovery most frameworks have.
Each step is marked with ``plugpull.boundary``; the checkpoint's own write is the step.

With VARIANT ``plain`` the only unsafe kills are the ones between the refund and the save that
records it: after effect refund 1 and before checkpoint-save 2 (the refund runs again: 2
refunds). ``lose-answer`` saves "answered" without the answer (kept only in memory), so a resume
from that checkpoint reports no answer (the run looks finished but its result differs): unsafe after checkpoint-save 3 too. Every finished run reports ``{"refund": "done", "answer": ...}``.
"""

import json
import os
import sys
import time
from pathlib import Path

from plugpull import boundary, record_effect, record_result


def save(checkpoint, state):
    with boundary("checkpoint-save"):
        tmp = checkpoint.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, checkpoint)


def model(variant, turn):
    with boundary("model-call"):
        if variant == "slow":
            time.sleep(0.2)
        return "call refund" if turn == 1 else "refunded"


def main():
    variant, phase = sys.argv[1], sys.argv[2]
    checkpoint = Path(os.environ["PLUGPULL_WORKDIR"]) / "checkpoint.json"
    answer = None
    state = json.loads(checkpoint.read_text()) if phase == "resume" and checkpoint.exists() else {"step": "new"}
    if state["step"] == "new":
        model(variant, 1)
        state = {"step": "asked"}
        save(checkpoint, state)
    if state["step"] == "asked":
        record_effect("refund")
        if variant == "slow":
            time.sleep(0.3)
        state = {"step": "refunded"}
        save(checkpoint, state)
    if state["step"] == "refunded":
        answer = model(variant, 2)
        state = {"step": "answered"} if variant == "lose-answer" else {"step": "answered", "answer": answer}
        save(checkpoint, state)
    record_result({"refund": "done", "answer": answer if answer is not None else state.get("answer")})
    print("run finished")


# A main guard: tests/scenarios/test_every_boundary.py runs this as ``python -m boundary_framework`` from a fork
# server, which imports the module once before it forks each phase.
if __name__ == "__main__":
    main()
