"""Agent Framework's FileCheckpointStorage across a power cut (no plugpull): killed after a charge, then the cut.

    python agent_framework_power_cut.py [--cut unsynced|namespace|lazyfs|none] [--fork]

Needs only agent-framework-core. A functional workflow checks out orders A and B (the control variant of
agent-framework-8292's witness: A reaches open_payment first on start and on resume): ``@step open_payment`` draws
the idempotency key, ``@step capture_payment`` charges it at a card network that makes one charge per key (a
ledger file outside the store, fsynced). The script runs itself twice, as child processes:

1. start: ``run(["A", "B"])`` with ``FileCheckpointStorage(<store>/checkpoints)``; the process SIGKILLs itself
   right after the network recorded A's charge. While it runs, every ``os.fsync``/``os.fdatasync`` call it
   makes is logged (the path of the descriptor): FileCheckpointStorage is pure Python, so that log is every
   fsync it asks for.
2. the power cut, simulated on the store directory from that log, under the POSIX model crash-consistency
   tools test against (ALICE, OSDI '14; CrashMonkey, OSDI '18): ``lazyfs`` empties every file that was never
   fsynced (its bytes never reached the disk; its name stays, as LazyFS keeps names); ``namespace`` removes every
   name whose directory was never fsynced (a create, mkdir or rename is durable only once its directory is);
   ``unsynced`` does both; ``none`` nothing (a plain SIGKILL). The store directory itself was made and fsynced
   before the start, as a long-lived app's would be. Simplification: an fsync at any time in the run counts,
   whatever it came before; a store that fsyncs its file and its directory after each save keeps the save.
3. resume: ``storage.get_latest(workflow_name=...)``, ``run(checkpoint_id=...)`` (nothing found: start over).

With --fork (Linux) each child is forked from this process, which imported Agent Framework already, instead of
being a new interpreter (the default, as the records ran): the same phase code and argv, a fresh process each time.
Last stdout line: one JSON object. Exit 0: each customer charged once and resume finished; 1: not so;
2: did not run as designed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from pathlib import Path

from agent_framework import FileCheckpointStorage, step, workflow

#: What this script simulates and how, in a maintainer's words (a bundle's ISSUE.md shows it first).
SIMULATES = (
    "The power cut is simulated, not real: the script logs every fsync the process makes, SIGKILLs it right after "
    "the first charge, then removes from the checkpoint folder what a power cut would lose under the POSIX crash "
    "model (ALICE, OSDI '14; CrashMonkey, OSDI '18): --cut lazyfs empties every file that was never fsynced, "
    "--cut namespace removes every name whose directory was never fsynced, --cut unsynced (the default) does both, "
    "--cut none nothing (a plain kill)"
)
WORKFLOW_NAME = "checkout_two_orders"
ORDERS = ["A", "B"]
STATE = {"phase": "start", "ledger": Path("ledger.jsonl")}


def observe_fsyncs(log: Path) -> None:
    """Log the path of every fsync/fdatasync this process makes, then make it: the cut reads the log."""
    for name in ("fsync", "fdatasync"):
        original = getattr(os, name)

        def logged(fd, original=original):
            with log.open("a") as f:
                f.write(os.readlink(f"/proc/self/fd/{fd}") + "\n")
            return original(fd)

        setattr(os, name, logged)


def charge_card(customer: str, key: str) -> None:
    """The card network: one charge per idempotency key, appended to the ledger (durably: it is not the store)."""
    ledger: Path = STATE["ledger"]
    seen = {json.loads(line)["key"] for line in ledger.read_text().splitlines()} if ledger.exists() else set()
    if key not in seen:
        with ledger.open("a") as f:
            f.write(json.dumps({"customer": customer, "key": key}) + "\n")
            f.flush()
            os.fsync(f.fileno())
    if STATE["phase"] == "start" and customer == "A":
        os.kill(os.getpid(), signal.SIGKILL)  # right after the charge: the power is cut next


@step
async def open_payment(order_id: str) -> dict:
    return {"order_id": order_id, "customer": order_id, "idempotency_key": f"pay_{order_id}_{uuid.uuid4().hex[:12]}"}


@step
async def capture_payment(payment: dict) -> str:
    charge_card(payment["customer"], payment["idempotency_key"])
    return f"charged customer {payment['customer']} ({payment['idempotency_key']})"


async def checkout(order_id: str, first_done: asyncio.Event) -> str:
    if order_id == "B":
        await first_done.wait()  # a certain order: A opens its payment first, on start and on resume
    payment = await open_payment(order_id)
    if order_id == "A":
        first_done.set()
    return await capture_payment(payment)


@workflow(name=WORKFLOW_NAME)
async def checkout_two_orders(orders: list) -> dict:
    first_done = asyncio.Event()
    receipts = await asyncio.gather(*(checkout(o, first_done) for o in orders))
    return dict(zip(orders, receipts, strict=True))


async def run_phase(store: Path) -> None:
    storage = FileCheckpointStorage(str(store / "checkpoints"))
    wf = checkout_two_orders.build(checkpoint_storage=storage)
    latest = await storage.get_latest(workflow_name=WORKFLOW_NAME) if STATE["phase"] == "resume" else None
    if latest is None:
        result = await wf.run(list(ORDERS))
    else:
        result = await wf.run(checkpoint_id=latest.checkpoint_id)
    print(json.dumps({"from_checkpoint": latest is not None, "receipts": result.get_outputs()[-1]}))


def cut(store: Path, synced: set[str], variant: str) -> list[str]:
    """The store as a disk could hold it after the power cut; one sentence per loss."""
    lost: list[str] = []
    for here, dirs, files in os.walk(store, topdown=False):
        for name in files + dirs:
            path = Path(here) / name
            shown = path.relative_to(store).as_posix()
            if variant in ("namespace", "unsynced") and str(Path(here).resolve()) not in synced:
                (shutil.rmtree if path.is_dir() and not path.is_symlink() else os.remove)(path)
                lost.append(f"{shown} is gone: its directory was never fsynced")
            elif variant in ("lazyfs", "unsynced") and path.is_file() and str(path.resolve()) not in synced:
                size = path.stat().st_size
                os.truncate(path, 0)
                lost.append(f"{shown} lost all its {size} bytes: it was never fsynced")
    return lost


def run_forked(argv: list[str], timeout: float) -> subprocess.CompletedProcess:
    """--fork: what subprocess.run(argv, capture_output=True, text=True, timeout=timeout) gives, the phase
    (main(argv[2:])) running in a process forked from this one instead of a new interpreter (-9: SIGKILLed)."""
    assert threading.active_count() == 1, "a forked child would have only the forking thread"
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()  # nothing buffered here is written twice
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the phase; it never returns
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                code = main(argv[2:])
            except SystemExit as stop:  # as the interpreter takes it: None is 0, a message is printed and 1
                if stop.code is None or isinstance(stop.code, int):
                    code = stop.code or 0
                else:
                    print(stop.code, file=sys.stderr)
            except BaseException:
                traceback.print_exc()
            finally:  # os._exit: the parent's exit handlers (its temp dirs' removal) are not the phase's
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        deadline = time.monotonic() + timeout
        while not (done := os.waitpid(pid, os.WNOHANG))[0]:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired(argv, timeout)
            time.sleep(0.005)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            argv, os.waitstatus_to_exitcode(done[1]), out.read().decode(), err.read().decode()
        )


def parent(args: argparse.Namespace) -> int:
    version = importlib.metadata.version("agent-framework-core")
    out = {"witness": "agent_framework_power_cut", "framework": "agent-framework-core", "version": version}

    def report(verdict: str, counts: dict, did: str, **detail) -> int:
        print(json.dumps(out | {"verdict": verdict, "counts": counts, "did": did, "detail": detail}))
        return {"PASS": 0, "FAIL": 1}.get(verdict, 2)

    if args.fork and threading.active_count() != 1:  # this module imports all a phase needs (0.01 CPU-s more)
        return report("ERROR", {}, f"--fork: {threading.active_count()} threads; a forked phase would have only one")
    with tempfile.TemporaryDirectory(prefix="af-power-") as tmp:
        store, log = Path(tmp) / "store", Path(tmp) / "fsynced.log"
        store.mkdir()
        fd = os.open(store, os.O_RDONLY)  # the store directory exists, durably, before the run
        os.fsync(fd)
        os.close(fd)

        def spawn(phase: str) -> subprocess.CompletedProcess:
            argv = [sys.executable, __file__, "_phase", phase, tmp]
            if args.fork:
                return run_forked(argv, timeout=120)
            return subprocess.run(argv, capture_output=True, text=True, timeout=120)

        try:
            start = spawn("start")
            if start.returncode != -signal.SIGKILL:
                return report(
                    "ERROR", {}, f"start was not SIGKILLed (exit {start.returncode})", stderr=start.stderr[-800:]
                )
            synced = {line for line in (log.read_text().splitlines() if log.exists() else []) if line}
            ours = sorted(s for s in synced if not s.endswith("ledger.jsonl"))
            lost = cut(store, synced, args.cut)
            resume = spawn("resume")
        except subprocess.TimeoutExpired as e:
            return report("ERROR", {}, f"a phase outlived its 120 s: {e.cmd[-2]}")
        ledger = Path(tmp) / "ledger.jsonl"
        rows = [json.loads(line) for line in ledger.read_text().splitlines()] if ledger.exists() else []
    counts = {f"charge_card:{o}": sum(1 for r in rows if r["customer"] == o) for o in ORDERS}
    said = ", ".join(f"{k}={v}" for k, v in counts.items())
    head = (
        f"start SIGKILLed right after A's charge; FileCheckpointStorage made {len(ours)} fsync(s) of the store; "
        f"the power cut ({args.cut}) lost: {'; '.join(lost[:3]) or 'nothing'}"
        + (f" (and {len(lost) - 3} more)" if len(lost) > 3 else "")
    )
    if resume.returncode != 0:
        error = (resume.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        return report("FAIL", counts, f"{head}; resume crashed: {error}; {said}", lost=lost, fsynced=ours)
    seen = json.loads(resume.stdout.strip().splitlines()[-1])
    ok = all(n == 1 for n in counts.values())
    start_over = "" if seen["from_checkpoint"] else "; resume found no checkpoint and started over"
    return report("PASS" if ok else "FAIL", counts, f"{head}{start_over}; {said}", lost=lost, fsynced=ours)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cut", choices=("unsynced", "namespace", "lazyfs", "none"), default="unsynced")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork each child from this process, which imported Agent Framework (Linux; default: each child is a "
        "new interpreter, as the records ran)",
    )
    parser.add_argument("internal", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.internal:
        _, phase, tmp = args.internal
        STATE.update(phase=phase, ledger=Path(tmp) / "ledger.jsonl")
        if phase == "start":
            observe_fsyncs(Path(tmp) / "fsynced.log")
        asyncio.run(run_phase(Path(tmp) / "store"))
        return 0
    if args.fork and sys.platform != "linux":
        parser.error("--fork needs Linux")
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
