"""LlamaIndex Workflows: a run SIGKILLed inside a step, resumed from the Context saved after the step before.

    python llama_index_kill_step.py --point before-effect|after-effect [--key none|checkpointed]

Needs only llama-index-workflows. A Workflow runs two steps: draft (a fresh request id), then refund, whose
side effect is a line in effects.txt (with the key, one line per distinct key). Child process 1 runs it,
saving ``handler.ctx.to_dict()`` to context.json each time a step stops running (StepStateChanged in
``stream_events(expose_internal=True)``), and SIGKILLs itself inside refund, before or after the line, once
the save after draft is on disk. Child 2 restores ``Context.from_dict`` and continues with
``workflow.run(ctx=...)``. Context.to_dict saves "active work" (its docstring): the refund step, with its
input event, is resumed from its start.

Exit 0: one refund after the resume; 1: two refunds (or none); 2: the kill did not land as designed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import time
import uuid

from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StepState, StepStateChanged, StopEvent

NAME = "llama_index_kill_step"
EFFECTS = "effects.txt"
SAVED = "context.json"


KEYED = False  # --key checkpointed: a refund is one per distinct request id, as at a payment API with keys


def effects() -> int:
    try:
        with open(EFFECTS) as f:
            lines = [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return 0
    return len(set(lines)) if KEYED else len(lines)


class Drafted(Event):  # at module level: Context.from_dict finds a saved event's class by its qualified name
    request_id: str


def child(phase: str, point: str) -> int:
    class Flow(Workflow):
        @step
        async def draft(self, ev: StartEvent) -> Drafted:
            return Drafted(request_id=uuid.uuid4().hex)

        @step
        async def refund(self, ev: Drafted) -> StopEvent:
            if phase == "start":
                while not os.path.exists(SAVED):  # the save after draft is written by the stream loop
                    await asyncio.sleep(0.01)
                if point == "before-effect":
                    os.kill(os.getpid(), signal.SIGKILL)
            with open(EFFECTS, "a") as f:
                f.write((ev.request_id if KEYED else "refund") + "\n")
                f.flush()
                os.fsync(f.fileno())
            if phase == "start" and point == "after-effect":
                os.kill(os.getpid(), signal.SIGKILL)
            return StopEvent(result="refunded")

    async def run() -> str:
        flow = Flow(timeout=60)
        if phase == "start":
            handler = flow.run()
        else:
            with open(SAVED) as f:
                handler = flow.run(ctx=Context.from_dict(flow, json.load(f)))
        async for ev in handler.stream_events(expose_internal=True):
            if isinstance(ev, StepStateChanged) and ev.step_state == StepState.NOT_RUNNING:
                with open(SAVED + ".tmp", "w") as f:
                    json.dump(handler.ctx.to_dict(), f)
                os.replace(SAVED + ".tmp", SAVED)
        return str(await handler)

    print(json.dumps({"result": asyncio.run(run())}))
    return 0


def main() -> int:
    global KEYED
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=("before-effect", "after-effect"), default="after-effect")
    parser.add_argument("--key", choices=("none", "checkpointed"), default="none")
    parser.add_argument("--phase", choices=("start", "resume"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    KEYED = args.key == "checkpointed"
    if args.phase:
        return child(args.phase, args.point)

    def run(phase: str) -> subprocess.CompletedProcess:
        argv = [sys.executable, __file__, "--point", args.point, "--key", args.key, "--phase", phase]
        return subprocess.run(argv, capture_output=True, text=True, timeout=240)

    version = importlib.metadata.version("llama-index-workflows")
    out = {"witness": NAME, "framework": "llama-index-workflows", "version": version}
    for stale in (EFFECTS, SAVED):
        if os.path.exists(stale):  # a run starts from nothing
            os.remove(stale)
    began = time.monotonic()
    start = run("start")
    if start.returncode != -signal.SIGKILL:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"start was not SIGKILLed: {start.stderr[-300:]}")
        print(json.dumps(out))
        return 2
    resume = run("resume")
    if resume.returncode != 0:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"resume crashed: {resume.stderr[-300:]}")
        print(json.dumps(out))
        return 2
    refunds = effects()
    ok = refunds == 1
    out.update(
        verdict="PASS" if ok else "FAIL",
        counts={"refund": refunds},
        did=(
            f"run SIGKILLed inside its refund step ({args.point}, key {args.key}) after the Context was saved; "
            f"Context.from_dict + workflow.run(ctx=...) in a new process finished it; {refunds} refund(s) "
            f"in {time.monotonic() - began:.1f}s"
        ),
    )
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
