"""What the power-cut mount costs a store: a SQLite workload on the mount against the plain directory.

    uv run python -m plugpull.powercut.overhead [--transactions 200] [--reps 3]

One run, ratios only (this machine is shared and noisy): for each journal mode (WAL and
DELETE, ``synchronous=FULL``), ``--transactions`` committed transactions of one 300-byte row
into a new database, timed on a plain directory and on a power-cut mount over another plain
directory, alternately, median of ``--reps``. Mounting and cutting are timed apart: they are
paid once per run of a scenario, the workload is paid on every write.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from plugpull.powercut.mount import PowerCutError, PowerCutMount


def workload(directory: Path, journal_mode: str, transactions: int) -> float:
    """Seconds for ``transactions`` commits into a new database in ``directory``."""
    began = time.monotonic()
    connection = sqlite3.connect(directory / "store.db", isolation_level=None)
    connection.execute(f"PRAGMA journal_mode={journal_mode}")
    connection.execute("PRAGMA synchronous=FULL")
    connection.execute("CREATE TABLE effects (id INTEGER PRIMARY KEY, payload BLOB)")
    for _ in range(transactions):
        connection.execute("BEGIN")
        connection.execute("INSERT INTO effects (payload) VALUES (randomblob(300))")
        connection.execute("COMMIT")
    connection.close()
    return time.monotonic() - began


def measure(journal_mode: str, transactions: int, reps: int) -> dict[str, float]:
    plain, mounted, mounting, cutting = [], [], [], []
    for _ in range(reps):
        with tempfile.TemporaryDirectory(prefix="plugpull-overhead-") as scratch:
            root = Path(scratch)
            for name in ("plain", "backing", "mnt"):
                (root / name).mkdir()
            plain.append(workload(root / "plain", journal_mode, transactions))
            began = time.monotonic()
            mount = PowerCutMount(root / "backing", root / "mnt").start()
            try:
                mounting.append(time.monotonic() - began)
                mounted.append(workload(root / "mnt", journal_mode, transactions))
                began = time.monotonic()
                mount.cut()
                cutting.append(time.monotonic() - began)
            finally:
                mount.stop()
    return {
        "plain": statistics.median(plain),
        "mounted": statistics.median(mounted),
        "mount": statistics.median(mounting),
        "cut": statistics.median(cutting),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m plugpull.powercut.overhead", description=__doc__.split("\n")[0])
    parser.add_argument("--transactions", type=int, default=200)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    if args.transactions < 1 or args.reps < 1:
        parser.error("--transactions and --reps must be at least 1")
    for journal_mode in ("WAL", "DELETE"):
        try:
            m = measure(journal_mode, args.transactions, args.reps)
        except PowerCutError as error:  # FuseUnavailable included: one line, exit 2, as plugpull's ERROR
            print(f"python -m plugpull.powercut.overhead: {error}", file=sys.stderr)
            return 2
        print(
            f"{journal_mode:6} synchronous=FULL, {args.transactions} transactions: "
            f"mounted/plain = {m['mounted'] / m['plain']:.2f} "
            f"(mount + cut once = {(m['mount'] + m['cut']) / m['plain']:.2f} x the plain workload)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
