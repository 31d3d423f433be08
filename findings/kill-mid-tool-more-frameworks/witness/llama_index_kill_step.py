"""LlamaIndex Workflows: a run SIGKILLed inside a step, resumed from the Context saved after the step before.

    python llama_index_kill_step.py --point before-effect|after-effect [--key none|checkpointed] [--fork]

Needs only llama-index-workflows. A Workflow runs two steps: draft (a fresh request id), then refund, whose
side effect is a line in effects.txt (with the key, one line per distinct key). Child process 1 runs it,
saving ``handler.ctx.to_dict()`` to context.json each time a step stops running (StepStateChanged in
``stream_events(expose_internal=True)``), and SIGKILLs itself inside refund, before or after the line, once
the save after draft is on disk. Child 2 restores ``Context.from_dict`` and continues with
``workflow.run(ctx=...)``. Context.to_dict saves "active work" (its docstring): the refund step, with its
input event, is resumed from its start. --fork forks each child from this process (the framework imported once).

Exit 0: one refund after the resume; 1: two refunds (or none); 2: the kill did not land as designed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from typing import IO

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


def fork_phase(argv: list[str], out: IO, err: IO) -> int:
    """Run main(argv) in a child forked from this process, its stdout and stderr on the files out and err."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            sys.argv = [__file__, *argv]
            code = main(argv) or 0
        except SystemExit as stop:  # as the interpreter takes it: None is 0, a message is printed and 1
            if stop.code is None or isinstance(stop.code, int):
                code = stop.code or 0
            else:
                print(stop.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        finally:  # os._exit: the parent's exit handlers (its temp dir's removal) are not the child's
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    return pid


def wait_phase(pid: int, timeout: float, cmd: list[str]) -> int:
    """The forked phase's exit code as subprocess gives it (-9 when SIGKILLed); SIGKILLed after timeout s and,
    as subprocess.run does, TimeoutExpired naming cmd, the phase's command line when cold."""
    pidfd = os.pidfd_open(pid)
    exited = select.select([pidfd], [], [], timeout)[0]
    os.close(pidfd)
    if not exited:
        os.kill(pid, signal.SIGKILL)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if not exited:
        raise subprocess.TimeoutExpired(cmd, timeout)
    return code


def run_forked(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    """What subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True, timeout=timeout)
    returns, with the phase forked from this process."""
    cmd = [sys.executable, __file__, *argv]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        code = wait_phase(fork_phase(argv, out, err), timeout, cmd)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(cmd, code, out.read().decode(), err.read().decode())


def main(argv: list[str] | None = None) -> int:
    global KEYED
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=("before-effect", "after-effect"), default="after-effect")
    parser.add_argument("--key", choices=("none", "checkpointed"), default="none")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork each phase from this process, the framework imported once (default: each phase a new "
        "interpreter, as the records ran)",
    )
    parser.add_argument("--phase", choices=("start", "resume"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fork and sys.platform != "linux":
        parser.error("--fork: needs Linux (os.fork, os.pidfd_open)")
    KEYED = args.key == "checkpointed"
    if args.phase:
        return child(args.phase, args.point)

    def run(phase: str) -> subprocess.CompletedProcess:
        phase_args = ["--point", args.point, "--key", args.key, "--phase", phase]
        if args.fork:
            return run_forked(phase_args, timeout=240)
        return subprocess.run([sys.executable, __file__, *phase_args], capture_output=True, text=True, timeout=240)

    version = importlib.metadata.version("llama-index-workflows")
    out = {"witness": NAME, "framework": "llama-index-workflows", "version": version}
    if args.fork and threading.active_count() != 1:
        did = f"--fork: {threading.active_count()} threads after the imports; fork() copies only this one"
        print(json.dumps(out | {"verdict": "ERROR", "counts": {}, "did": did}))
        return 2
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
