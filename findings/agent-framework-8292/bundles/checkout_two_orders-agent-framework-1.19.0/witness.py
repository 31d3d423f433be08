"""microsoft/agent-framework#8292 with a real SIGKILL (no plugpull): concurrent calls to one @step, restored.

    python checkout_two_orders.py [--variant swap|control] [--kill "after checkpoint-save 2"] [--start-python PY]

Needs only agent-framework-core. A functional workflow checks out orders A and B at once (asyncio.gather):
each opens a payment with the same ``@step open_payment`` (it draws the idempotency key, so a restart reuses
it) and charges it with the same ``@step capture_payment``. The card network is a ledger file making one
charge per idempotency key. The script runs itself twice, as child processes, in a fresh directory:
  1. start: ``run(["A", "B"])`` with FileCheckpointStorage; the process SIGKILLs itself at --kill, before or
     after the n-th open_payment call, checkpoint save or charge of a customer (default: before A's charge).
  2. resume: ``storage.get_latest(workflow_name=...)``, ``run(checkpoint_id=...)`` (nothing saved: start over).
On resume order B reaches open_payment first in ``swap``, A in ``control`` (A first on start in both).
--start-python runs the start under another interpreter (an older release's venv: an upgrade).
--fork forks each phase run by this interpreter from this process (Agent Framework imported once); a start
under another --start-python still runs there.

Last stdout line: one JSON object. Exit 0: each customer charged once, each order's receipt names its own
customer; 1: not so (#8292), or the resuming release refused the checkpoint; 2: did not run as designed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import re
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

WORKFLOW_NAME = "checkout_two_orders"
ORDERS = ["A", "B"]
# Set from argv before the run and read at run time: start and resume run the same workflow code
# (changed code fails the restore on graph_signature_hash). "arrival": which order reaches open_payment first.
STATE = {"phase": "start", "kill": "", "arrival": "AB", "ledger": Path("ledger.jsonl")}
SEEN: dict[str, int] = {}


def boundary(edge: str, name: str) -> None:
    """Count this edge of a step ("before checkpoint-save"); SIGKILL this process at the one --kill names."""
    SEEN[f"{edge} {name}"] = n = SEEN.get(f"{edge} {name}", 0) + 1
    if STATE["phase"] == "start" and STATE["kill"] == f"{edge} {name} {n}":
        os.kill(os.getpid(), signal.SIGKILL)


def charge_card(customer: str, key: str) -> None:
    """The card network: one charge per idempotency key, appended to the ledger."""
    boundary("before", f"effect charge_card:{customer}")
    ledger: Path = STATE["ledger"]
    seen = {json.loads(line)["key"] for line in ledger.read_text().splitlines()} if ledger.exists() else set()
    if key not in seen:
        with ledger.open("a") as f:
            f.write(json.dumps({"customer": customer, "key": key}) + "\n")
            f.flush()
            os.fsync(f.fileno())
    boundary("after", f"effect charge_card:{customer}")


class Storage(FileCheckpointStorage):
    async def save(self, checkpoint):  # the framework's own save, with a kill point on each side
        boundary("before", "checkpoint-save")
        saved = await super().save(checkpoint)
        boundary("after", "checkpoint-save")
        return saved


@step
async def open_payment(order_id: str) -> dict:
    return {"order_id": order_id, "customer": order_id, "idempotency_key": f"pay_{order_id}_{uuid.uuid4().hex[:12]}"}


@step
async def capture_payment(payment: dict) -> str:
    charge_card(payment["customer"], payment["idempotency_key"])
    return f"charged customer {payment['customer']} ({payment['idempotency_key']})"


async def checkout(order_id: str, first_done: asyncio.Event) -> str:
    if order_id == STATE["arrival"][1]:
        # A certain order, not a race: the second order's earlier work ends once the first has its payment
        # (in real life: work whose duration differs after a restart).
        await first_done.wait()
    boundary("before", "open-payment")
    payment = await open_payment(order_id)
    boundary("after", "open-payment")
    if order_id == STATE["arrival"][0]:
        first_done.set()
    return await capture_payment(payment)


@workflow(name=WORKFLOW_NAME)
async def checkout_two_orders(orders: list) -> dict:
    first_done = asyncio.Event()
    receipts = await asyncio.gather(*(checkout(o, first_done) for o in orders))
    return dict(zip(orders, receipts, strict=True))


async def run_phase(workdir: Path) -> None:
    storage = Storage(str(workdir / "checkpoints"))
    wf = checkout_two_orders.build(checkpoint_storage=storage)
    latest = await storage.get_latest(workflow_name=WORKFLOW_NAME) if STATE["phase"] == "resume" else None
    if latest is None:
        result = await wf.run(list(ORDERS))
    else:
        result = await wf.run(checkpoint_id=latest.checkpoint_id)
    print(json.dumps(result.get_outputs()[-1]))


def parent(args: argparse.Namespace) -> int:
    version = importlib.metadata.version("agent-framework-core")
    start_python = args.start_python or sys.executable
    ask = "import importlib.metadata as m; print(m.version('agent-framework-core'))"
    start_version = subprocess.run([start_python, "-c", ask], capture_output=True, text=True).stdout.strip()
    out = {"witness": "checkout_two_orders", "framework": "agent-framework-core", "version": version}
    out |= {"start_version": start_version or None, "variant": args.variant, "kill": args.kill}
    where = f"start on {start_version or '?'} SIGKILLed at '{args.kill}', resumed on {version}"

    def report(verdict: str, counts: dict, did: str, **detail) -> int:
        print(json.dumps(out | {"verdict": verdict, "counts": counts, "did": f"{where}: {did}", "detail": detail}))
        return {"PASS": 0, "FAIL": 1}.get(verdict, 2)

    if args.fork and threading.active_count() != 1:
        return report("ERROR", {}, f"--fork: {threading.active_count()} threads; fork() copies only this one")
    with tempfile.TemporaryDirectory(prefix="af8292-") as tmp:

        def spawn(python: str, phase: str) -> subprocess.CompletedProcess:
            phase_args = ["--variant", args.variant, "--kill", args.kill, "_phase", phase, tmp]
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
    wrong = [f"order {o}'s receipt: {r}" for o, r in receipts.items() if f"customer {o} " not in r]
    ok = all(n == 1 for n in counts.values()) and not wrong
    did = "; ".join([said, *wrong])
    return report("PASS" if ok else "FAIL", counts, did, receipts=receipts)


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
    parser.add_argument("--variant", choices=("swap", "control"), default="swap")
    parser.add_argument("--kill", default="before effect charge_card:A 1", help="where the start is SIGKILLed")
    parser.add_argument("--start-python", help="interpreter that runs the start (another release); default: this one")
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
    if not re.fullmatch(
        r"(before|after) (open-payment|checkpoint-save|effect charge_card:[AB]) [1-9][0-9]*", args.kill
    ):
        parser.error(
            f"--kill {args.kill!r}: not '(before|after) (open-payment|checkpoint-save|effect charge_card:X) N'"
        )
    if args.internal:
        _, phase, workdir = args.internal
        arrival = "BA" if (args.variant, phase) == ("swap", "resume") else "AB"
        STATE.update(phase=phase, kill=args.kill, arrival=arrival, ledger=Path(workdir) / "ledger.jsonl")
        asyncio.run(run_phase(Path(workdir)))
        return 0
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
