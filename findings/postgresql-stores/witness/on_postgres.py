"""Run a framework-only witness against a throwaway PostgreSQL server: initdb, start, run, stop, remove.

    python on_postgres.py WITNESS [--driver asyncpg] [WITNESS ARGS...]

WITNESS is a witness script relative to this folder (e.g. ../../kill-mid-tool-more-frameworks/witness/
dbos_kill_step.py) that takes ``--db-url``: it runs with the URL of a fresh database on a PostgreSQL cluster
made for this run alone (Debian's server binaries, /usr/lib/postgresql/<major>/bin, or initdb and pg_ctl on
PATH; as root the server runs as the ``postgres`` user, since initdb refuses root), on 127.0.0.1 at a free port,
trust authentication. ``--driver asyncpg`` puts the driver in the URL (``postgresql+asyncpg://``, for Google ADK's
DatabaseSessionService). The witness's stdout and exit code are passed on: its last stdout line is its JSON
verdict. The cluster is stopped and its folder removed afterwards, whatever happened. Standard library only.

Exit: the witness's; 2 (with a JSON ERROR line) when no server could be started.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path


def server_user(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb is None:
        raise RuntimeError("no PostgreSQL server binaries (Debian: apt-get install postgresql)")
    return Path(initdb).parent


def check(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, start_new_session=True)
    if done.returncode != 0:
        raise RuntimeError(f"{Path(argv[argv.index('--') + 1 if '--' in argv else 0]).name}: {done.stderr[-300:]}")


def without_repeat(argv: list[str]) -> list[str]:
    """``argv`` without its ``--repeat N`` (or ``--repeat=N``): the arguments of one run."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--repeat":
            skip = True
        elif not arg.startswith("--repeat="):
            out.append(arg)
    return out


def repeated(argv: list[str], n: int) -> int:
    """--repeat N: this script N times with ``argv``, each run a new process as a run without --repeat is; one line
    per run, then the count and rate of FAIL runs as the last line (JSON). Exit 1 if any run failed, 0 if all
    passed, 2 otherwise. A race fails in some runs only: one run is one sample of a rate."""
    tally = {"PASS": 0, "FAIL": 0, "ERROR": 0}
    last: dict = {}
    for i in range(n):
        done = subprocess.run([sys.executable, os.path.abspath(__file__), *argv], capture_output=True, text=True)
        lines = [line for line in done.stdout.splitlines() if line.strip()]
        try:
            out = json.loads(lines[-1]) if lines else {}
        except ValueError:
            out = {}
        out = out if isinstance(out, dict) else {}
        verdict = out.get("verdict") if out.get("verdict") in ("PASS", "FAIL") else "ERROR"
        tally[verdict] += 1
        last = out or last
        why = f": {str(out.get('did') or done.stderr.strip()[-300:])[:300]}" if verdict == "ERROR" else ""
        print(
            f"run {i + 1}/{n}: {verdict} {json.dumps(out.get('counts') or {})} (exit {done.returncode}){why}",
            flush=True,
        )
    failed, finished = tally["FAIL"], tally["PASS"] + tally["FAIL"]
    rate = f"{100 * failed / finished:.0f} %" if finished else "no run finished"
    verdict = "FAIL" if failed else "PASS" if tally["PASS"] == n else "ERROR"
    summary = {
        "witness": last.get("witness"),
        "framework": last.get("framework"),
        "version": last.get("version"),
        "verdict": verdict,
        "repeat": {"runs": n, **tally},
        "did": f"FAIL in {failed} of {finished} finished runs ({rate}); {tally['ERROR']} did not run as designed",
    }
    print(json.dumps(summary))
    return {"PASS": 0, "FAIL": 1}.get(verdict, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("witness")
    parser.add_argument("--driver", help="SQLAlchemy driver to name in the URL (asyncpg)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run it N times, each on a server of its own, and print how many failed (a race: one run is one sample)",
    )
    args, rest = parser.parse_known_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.repeat > 1:
        return repeated(without_repeat(sys.argv[1:]), args.repeat)
    script = (Path(__file__).parent / args.witness).resolve()
    # As root the server runs as postgres, which cannot enter a private TMPDIR (the witness runner's is 0700).
    base = tempfile.gettempdir()
    if os.geteuid() == 0 and not all(os.stat(p).st_mode & 0o001 for p in (Path(base), *Path(base).parents)):
        base = "/tmp"
    root = Path(tempfile.mkdtemp(prefix="witness-pg-", dir=base))
    data = root / "data"
    started = False
    try:
        if os.geteuid() == 0:
            shutil.chown(root, user="postgres")
        bins = bindir()
        check(server_user([str(bins / "initdb"), "-D", str(data), "-U", "witness", "--auth=trust", "--no-sync"]))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='{root}'"
        pg_ctl = [str(bins / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", options, "-w", "start"]
        check(server_user(pg_ctl))
        started = True
        check([str(bins / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "witness", "witness"])
        scheme = f"postgresql+{args.driver}" if args.driver else "postgresql"
        url = f"{scheme}://witness@127.0.0.1:{port}/witness"
        return subprocess.run([sys.executable, str(script), *rest, "--db-url", url]).returncode
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as error:
        print(json.dumps({"witness": script.stem, "verdict": "ERROR", "did": f"no PostgreSQL server: {error}"}))
        return 2
    finally:
        if started:
            stop = [str(bins / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]
            subprocess.run(server_user(stop), capture_output=True, timeout=120, start_new_session=True)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
