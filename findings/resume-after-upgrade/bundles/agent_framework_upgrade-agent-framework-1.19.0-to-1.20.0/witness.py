"""A Microsoft Agent Framework functional workflow checkpointed by one release, resumed by the next (no plugpull).

    /path/to/venv-B/bin/python agent_framework_upgrade.py --start-python /path/to/venv-A/bin/python \
        [--kill before-charge|after-charge]

Needs only agent-framework-core, installed at release A in one venv and at release B in another. The workflow
checks out orders A and B one after the other (no concurrency): ``@step open_payment`` draws the payment's
idempotency key, ``@step capture_payment`` charges it. The card network is a ledger file that, like a real
payment API, makes one charge per idempotency key. The steps are defined at module level, and the same file
runs on both sides: the workflow code does not change across the upgrade.

  1. start, under --start-python (release A): ``run(["A", "B"])`` with FileCheckpointStorage; inside order A's
     capture_payment the process SIGKILLs itself, before or after the charge (--kill).
  2. resume, under this interpreter (release B): ``storage.get_latest(workflow_name=...)`` then
     ``run(checkpoint_id=...)``.

--fork forks each phase run by this interpreter from this process (Agent Framework imported once); a start
under another --start-python still runs there.

1.20.0's ``@step`` docstring: "Legacy order-based checkpoints replay sequential steps, but concurrent legacy
cache hits fail explicitly rather than returning a potentially mismatched result."

Last stdout line: one JSON object. Exit 0: resumed, each customer charged once; 1: release B refused the
checkpoint or a customer was charged 0 or 2+ times; 2: did not run as designed.
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
import traceback
import uuid
from pathlib import Path
from typing import IO

from agent_framework import FileCheckpointStorage, step, workflow

WORKFLOW_NAME = "checkout_orders"
ORDERS = ["A", "B"]
# Set from argv and read at run time, so both phases run the same workflow code.
STATE = {"phase": "start", "kill": "before-charge", "ledger": Path("ledger.jsonl")}


def charge_card(customer: str, key: str) -> None:
    """The card network: one charge per idempotency key, appended to the ledger."""
    ledger: Path = STATE["ledger"]
    seen = {json.loads(line)["key"] for line in ledger.read_text().splitlines()} if ledger.exists() else set()
    if key not in seen:
        with ledger.open("a") as f:
            f.write(json.dumps({"customer": customer, "key": key}) + "\n")
            f.flush()
            os.fsync(f.fileno())


@step
async def open_payment(order_id: str) -> dict:
    return {"customer": order_id, "idempotency_key": f"pay_{order_id}_{uuid.uuid4().hex[:12]}"}


@step
async def capture_payment(payment: dict) -> str:
    killing = STATE["phase"] == "start" and payment["customer"] == "A"
    if killing and STATE["kill"] == "before-charge":
        os.kill(os.getpid(), signal.SIGKILL)
    charge_card(payment["customer"], payment["idempotency_key"])
    if killing and STATE["kill"] == "after-charge":
        os.kill(os.getpid(), signal.SIGKILL)
    return f"charged customer {payment['customer']} ({payment['idempotency_key']})"


@workflow(name=WORKFLOW_NAME)
async def checkout_orders(orders: list) -> dict:
    receipts = {}
    for order_id in orders:
        payment = await open_payment(order_id)
        receipts[order_id] = await capture_payment(payment)
    return receipts


async def run_phase(workdir: Path) -> None:
    storage = FileCheckpointStorage(str(workdir / "checkpoints"))
    wf = checkout_orders.build(checkpoint_storage=storage)
    if STATE["phase"] == "start":
        await wf.run(list(ORDERS))
        return
    latest = await storage.get_latest(workflow_name=WORKFLOW_NAME)
    if latest is None:
        raise SystemExit("resume: no checkpoint to resume from")
    result = await wf.run(checkpoint_id=latest.checkpoint_id)
    print(json.dumps(result.get_outputs()[-1]))


def parent(args: argparse.Namespace) -> int:
    version = importlib.metadata.version("agent-framework-core")
    start_python = args.start_python or sys.executable
    ask = "import importlib.metadata as m; print(m.version('agent-framework-core'))"
    start_version = subprocess.run([start_python, "-c", ask], capture_output=True, text=True).stdout.strip() or None
    out = {"witness": "agent_framework_upgrade", "framework": "agent-framework-core", "version": version}
    out |= {"start_version": start_version, "kill": args.kill}
    where = f"start on {start_version} SIGKILLed inside capture_payment ({args.kill}), resumed on {version}"

    def report(verdict: str, counts: dict, did: str, **detail) -> int:
        print(json.dumps(out | {"verdict": verdict, "counts": counts, "did": f"{where}: {did}", "detail": detail}))
        return {"PASS": 0, "FAIL": 1}.get(verdict, 2)

    if args.fork and threading.active_count() != 1:
        return report("ERROR", {}, f"--fork: {threading.active_count()} threads; fork() copies only this one")
    with tempfile.TemporaryDirectory(prefix="af-upgrade-") as tmp:

        def spawn(python: str, phase: str) -> subprocess.CompletedProcess:
            phase_args = ["--kill", args.kill, "_phase", phase, tmp]
            if args.fork and python == sys.executable:
                return run_forked(phase_args, timeout=120)
            return subprocess.run([python, __file__, *phase_args], capture_output=True, text=True, timeout=120)

        try:
            start = spawn(start_python, "start")
            if start.returncode != -signal.SIGKILL:
                did = f"start was not killed by SIGKILL (exit {start.returncode})"
                return report("ERROR", {}, did, stderr=start.stderr[-1000:])
            resume = spawn(sys.executable, "resume")
        except subprocess.TimeoutExpired as e:
            return report("ERROR", {}, f"a phase outlived its 120 s: {e.cmd[-2]}")
        ledger = Path(tmp) / "ledger.jsonl"
        rows = [json.loads(line) for line in ledger.read_text().splitlines()] if ledger.exists() else []
    counts = {f"charge_card:{o}": sum(1 for r in rows if r["customer"] == o) for o in ORDERS}
    said = ", ".join(f"{k}={v}" for k, v in counts.items())
    if resume.returncode != 0:
        error = (resume.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        if "created by a different version of workflow" in resume.stderr:
            did = f"run(checkpoint_id=...) refused the checkpoint, stuck at {said}"
            return report("FAIL", counts, did, refused=True, error=error)
        return report("ERROR", counts, f"resume exited {resume.returncode}", error=error)
    receipts = json.loads(resume.stdout.strip().splitlines()[-1])
    verdict = "PASS" if all(n == 1 for n in counts.values()) else "FAIL"
    return report(verdict, counts, f"resumed from the checkpoint: {said}", receipts=receipts)


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kill", choices=("before-charge", "after-charge"), default="before-charge")
    parser.add_argument("--start-python", help="interpreter of the release that starts the run; default: this one")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork each phase from this process, Agent Framework imported once (default: each phase a new "
        "interpreter, as the records ran); a start under another --start-python stays a new interpreter",
    )
    parser.add_argument("internal", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fork and sys.platform != "linux":
        parser.error("--fork: needs Linux (os.fork, os.pidfd_open)")
    if args.start_python and not os.access(args.start_python, os.X_OK):
        parser.error(f"--start-python {args.start_python}: not an executable file")
    if args.internal:
        _, phase, workdir = args.internal
        STATE.update(phase=phase, kill=args.kill, ledger=Path(workdir) / "ledger.jsonl")
        asyncio.run(run_phase(Path(workdir)))
        return 0
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
