"""DBOS's SQLite system database across a power cut (no plugpull): killed after a keyed refund, then the cut.

    python dbos_power_cut.py [--cut unsynced|namespace|lazyfs|none] [--fork]

Needs dbos and mfusepy (with libfuse 3 and fusermount3, Debian's fuse3, and permission to mount FUSE). The system
database lives on cutfs.py, beside this script: a passthrough FUSE file system that keeps what a disk would hold
after a power cut (its docstring says exactly what each cut loses). A @DBOS.workflow runs two @DBOS.step()s:
draft_refund draws a request id, refund passes it as the idempotency key to a payment provider (a SQLite table
outside the mount, one row per key) - the key is a completed step's saved output, which DBOS replays on recovery.
Each phase is its own process:

1. ``start``: runs the workflow; the process SIGKILLs itself inside refund, right after the provider recorded it;
2. the power cut (``--cut``; ``none``: no cut, a plain SIGKILL) of the system database's directory;
3. ``resume``: on a fresh mount of what the disk kept, DBOS.launch() recovers the pending workflow; it waits for it.

DBOS's SQLite system database uses SQLite's defaults (rollback journal, synchronous=FULL): SQLite fsyncs the
directory after creating a journal but, unless synchronous=EXTRA, not after the unlink that commits
(https://www.sqlite.org/pragma.html#pragma_synchronous). A cut that loses that unlink brings the journal back and
SQLite rolls the last transaction back. Exit 0: recovery finished the workflow with one refund; 1: otherwise;
2: did not run as designed (FUSE unavailable included).
With --fork (Linux) the script imports DBOS once and forks each phase from itself instead of starting a new
interpreter per phase (the default, as the records ran): the same phase code and argv, a fresh process each time.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from power_cut_fork import prefork, run_forked

WORKFLOW_ID = "refund-A-1001"
WAIT = 60.0  # recovery of this workflow takes well under a second after launch
HERE = Path(__file__).resolve().parent
# --fork: what the phases import, imported once before forking them: dbos, then what DBOS.launch() imports on first
# use for its SQLite system database. A module another release lacks is skipped.
PHASE_IMPORTS = ("dbos", "dbos._sys_db_sqlite", "sqlalchemy.dialects.sqlite")


def child(phase: str, workdir: str, counter: str) -> int:
    import uuid

    from dbos import DBOS, SetWorkflowID

    @DBOS.step()
    def draft_refund(order_id: str) -> dict:
        return {"order_id": order_id, "cents": 1999, "request_id": str(uuid.uuid4())}

    @DBOS.step()
    def refund(draft: dict) -> str:
        with sqlite3.connect(counter, timeout=30) as db:
            db.execute("INSERT OR IGNORE INTO refunds (key) VALUES (?)", (draft["request_id"],))
        if phase == "start":
            os.kill(os.getpid(), signal.SIGKILL)  # right after the refund: the power is cut next
        return f"refunded {draft['cents']} cents on order {draft['order_id']}"

    @DBOS.workflow()
    def refund_workflow(order_id: str) -> str:
        return refund(draft_refund(order_id))

    DBOS(
        config={
            "name": "witness-refunds",
            "system_database_url": f"sqlite:///{os.path.join(workdir, 'dbos.sqlite')}",
            # One version for both processes: DBOS recovers only workflows of its own application_version.
            "application_version": "refunds-1",
        }
    )
    try:
        DBOS.launch()  # recovers this executor's PENDING workflows
        if phase == "start":
            with SetWorkflowID(WORKFLOW_ID):
                refund_workflow("A-1001")
            return 0
        handle = DBOS.retrieve_workflow(WORKFLOW_ID)
        deadline = time.monotonic() + WAIT
        status = handle.get_status()
        while status.status in ("PENDING", "ENQUEUED") and time.monotonic() < deadline:
            time.sleep(0.2)
            status = handle.get_status()
        print(json.dumps({"status": status.status}))
        return 0
    finally:
        DBOS.destroy()


class Mount:
    """cutfs.py over ``disk`` at ``path``; ``cut(variant)`` unmounts and rewrites ``disk`` to what a disk kept."""

    def __init__(self, disk: Path, stash: Path, path: Path) -> None:
        argv = [sys.executable, str(HERE / "cutfs.py"), str(disk), str(stash), str(path)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.proc.kill()
            raise RuntimeError(f"cutfs did not mount (exit {self.proc.wait()}): FUSE unavailable here?")

    def cut(self, variant: str) -> list[str]:
        self.proc.stdin.write(f"cut {variant}\n")
        self.proc.stdin.flush()
        lost = json.loads(self.proc.stdout.readline())["lost"]
        self.proc.wait(60)
        return lost

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("stop\n")
            self.proc.stdin.flush()
            self.proc.wait(60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cut", choices=("unsynced", "namespace", "lazyfs", "none"), default="unsynced")
    parser.add_argument("--phase", choices=("start", "resume"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork each phase from this process after one DBOS import (Linux; default: each phase is a new "
        "interpreter, as the records ran)",
    )
    parser.add_argument("--counter", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        return child(args.phase, args.workdir, args.counter)
    out = {"witness": "dbos_power_cut", "framework": "dbos", "version": importlib.metadata.version("dbos")}

    def report(verdict: str, refunds: int | None, did: str, **detail) -> int:
        counts = {} if refunds is None else {"refund": refunds}
        print(json.dumps(out | {"verdict": verdict, "counts": counts, "did": did, "detail": detail}))
        return {"PASS": 0, "FAIL": 1}.get(verdict, 2)

    if args.fork and sys.platform != "linux":
        parser.error("--fork needs Linux")
    problem = prefork(PHASE_IMPORTS) if args.fork else None
    if problem:
        return report("ERROR", None, problem)

    def spawn(argv: list[str]) -> subprocess.CompletedProcess:
        if args.fork:  # the phase holds this process's pipes to cutfs while it runs, and never uses them
            return run_forked(main, argv, timeout=240)
        return subprocess.run(argv, capture_output=True, text=True, timeout=240)

    with tempfile.TemporaryDirectory(prefix="dbos-power-") as tmp:
        root = Path(tmp)
        disk, stash, mnt, counter = root / "disk", root / "stash", root / "mnt", root / "provider.sqlite"
        for d in (disk, stash, mnt):
            d.mkdir()
        with sqlite3.connect(counter) as db:
            db.execute("CREATE TABLE refunds (key TEXT PRIMARY KEY)")
        db.close()  # no open connection is copied into a forked phase
        me = [sys.executable, __file__, "--workdir", str(mnt), "--counter", str(counter), "--phase"]
        try:
            mount = Mount(disk, stash, mnt)
        except (RuntimeError, OSError) as e:
            return report("ERROR", None, str(e))
        try:
            start = spawn([*me, "start"])
            if start.returncode != -signal.SIGKILL:
                mount.stop()
                did = f"start was not SIGKILLed in the step (exit {start.returncode})"
                return report("ERROR", None, did, stderr=start.stderr[-800:])
            if args.cut == "none":
                mount.stop()
                lost = []
            else:
                lost = mount.cut(args.cut)
            mount = Mount(disk, stash, mnt)
            try:
                resume = spawn([*me, "resume"])
            finally:
                mount.stop()
        except subprocess.TimeoutExpired as e:
            mount.stop()
            return report("ERROR", None, f"a phase outlived its 240 s: {e.cmd[-1]}")
        with sqlite3.connect(counter) as db:
            refunds = db.execute("SELECT count(*) FROM refunds").fetchone()[0]
    said = [json.loads(line) for line in resume.stdout.splitlines() if line.startswith("{")]
    status = said[-1]["status"] if said else None
    if resume.returncode != 0 or status is None:
        error = (resume.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        return report(
            "FAIL", refunds, f"the power cut ({args.cut}) lost: {'; '.join(lost) or 'nothing'}; resume crashed: {error}"
        )
    ok = refunds == 1 and status == "SUCCESS"
    did = (
        f"start SIGKILLed inside its refund step right after the refund keyed by the draft step's request id; "
        f"the power cut ({args.cut}) lost: {'; '.join(lost) or 'nothing'}; DBOS.launch() left the workflow {status}; "
        f"the provider saw {refunds} refund(s)"
    )
    return report("PASS" if ok else "FAIL", refunds, did, lost=lost)


if __name__ == "__main__":
    sys.exit(main())
