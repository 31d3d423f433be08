"""FastAIAgent on SQLite: approvers racing in separate processes; one refunds, a loser may crash.

    python fastaiagent_racing_approvers.py [--racers 5] [--db-url postgresql://...]

Needs only fastaiagent. An Agent with SQLiteCheckpointer (one local.db) and an offline FunctionModel
pauses on interrupt() inside its refund tool (child process 1). Then --racers processes each build the
agent, wait at a start line (a file the parent creates once all are ready) and call
agent.resume(id, resume_value=Resume(approved=True)). The docs promise one winner: "Exactly one caller
gets the row back; everyone else gets None and raises AlreadyResumed" (docs/durability/concepts.md),
and say SQLite coordinates processes only through its file lock ("not for distributed use"). With --db-url
the store is FastAIAgent's PostgresCheckpointer on that database instead (its claim is one DELETE ... RETURNING;
../../postgresql-stores/witness/on_postgres.py starts a throwaway server and passes it).

Exit 0: one approver refunded, every other one got AlreadyResumed; 1: a loser crashed with another
error (e.g. sqlite3.OperationalError: database is locked) or the refund count is not 1; 2: the run did
not go as designed (no pause, an approver timed out).
"""

from __future__ import annotations

import argparse
import collections
import importlib.metadata
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

NAME = "fastaiagent_racing_approvers"


def effects() -> int:
    with sqlite3.connect("effects.db") as db:
        db.execute("create table if not exists effects (name text)")
        return db.execute("select count(*) from effects where name = 'refund'").fetchone()[0]


def child(phase: str, racer: int, db_url: str | None) -> int:
    os.environ["FASTAIAGENT_LOCAL_DB"] = os.path.abspath("local.db")
    from fastaiagent import Agent, AlreadyResumed, Resume, SQLiteCheckpointer, interrupt, tool
    from fastaiagent.testing import FunctionModel

    def reply(messages):
        if any(str(getattr(m, "role", "")).endswith("tool") for m in messages):
            return "Refund for order A-1001 is done."
        return "", [{"name": "refund", "arguments": {"order_id": "A-1001"}}]

    @tool
    def refund(order_id: str) -> str:
        """Refund an order once a human approves."""
        interrupt("refund needs approval", {"order_id": order_id})
        with sqlite3.connect("effects.db", timeout=30) as db:
            db.execute("insert into effects values ('refund')")
        return f"refunded order {order_id}"

    if db_url:
        from fastaiagent.checkpointers import PostgresCheckpointer

        store = PostgresCheckpointer(db_url)
    else:
        store = SQLiteCheckpointer()
    agent = Agent(name="refunds", llm=FunctionModel(reply), tools=[refund], checkpointer=store)
    if phase == "start":
        result = agent.run("Please refund order A-1001.")
        Path("execution_id").write_text(result.execution_id)
        return 0 if result.status == "paused" else 2
    execution_id = Path("execution_id").read_text()
    open(f"ready-{racer}", "w").close()
    while not os.path.exists("go"):
        time.sleep(0.002)
    try:
        result = agent.resume(execution_id, resume_value=Resume(approved=True))
    except AlreadyResumed:
        print(json.dumps({"outcome": "refused"}))
        return 3
    except Exception as exc:  # a loser that crashes instead of being refused
        print(json.dumps({"outcome": "crashed", "error": f"{type(exc).__name__}: {exc}"}))
        return 1
    print(json.dumps({"outcome": "ran", "status": result.status}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--racers", type=int, default=5)
    parser.add_argument("--phase", choices=("start", "approve"), help=argparse.SUPPRESS)
    parser.add_argument("--racer", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--db-url", help="PostgresCheckpointer's database (default: SQLiteCheckpointer, local.db)")
    args = parser.parse_args()
    if args.phase:
        return child(args.phase, args.racer, args.db_url)
    me = [sys.executable, __file__, *(["--db-url", args.db_url] if args.db_url else [])]
    out = {"witness": NAME, "framework": "fastaiagent", "version": importlib.metadata.version("fastaiagent")}
    for stale in ("effects.db", "dbos.sqlite", "local.db", "flow_states.db", "execution_id", "go"):
        if os.path.exists(stale):  # a run starts from nothing: no counts or state of an earlier one
            os.remove(stale)
    effects()
    start = subprocess.run(me + ["--phase", "start"], capture_output=True, text=True, timeout=240)
    if start.returncode != 0:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"start did not pause: {start.stderr[-300:]}")
        print(json.dumps(out))
        return 2
    racers = [
        subprocess.Popen(me + ["--phase", "approve", "--racer", str(i)], stdout=subprocess.PIPE, text=True)
        for i in range(args.racers)
    ]
    deadline = time.monotonic() + 240
    while sum(os.path.exists(f"ready-{i}") for i in range(args.racers)) < args.racers:
        if time.monotonic() > deadline or any(p.poll() is not None for p in racers):
            for p in racers:
                p.kill()
            out.update(
                verdict="ERROR", counts={"refund": effects()}, did="an approver died or hung before the start line"
            )
            print(json.dumps(out))
            return 2
        time.sleep(0.01)
    open("go", "w").close()  # release every approver at once
    outcomes, errors = collections.Counter(), []
    for p in racers:
        stdout, _ = p.communicate(timeout=240)
        lines = stdout.strip().splitlines()
        seen = json.loads(lines[-1]) if lines else {"outcome": "crashed", "error": f"exit {p.returncode}, no output"}
        outcomes[seen["outcome"]] += 1
        if "error" in seen:
            errors.append(seen["error"][:200])
    refunds = effects()
    ok = outcomes["ran"] == 1 and outcomes["refused"] == args.racers - 1 and refunds == 1
    out.update(
        verdict="PASS" if ok else "FAIL",
        counts={"refund": refunds},
        did=(
            f"{args.racers} approvers released together on one {'PostgreSQL' if args.db_url else 'SQLite'} store: "
            f"{outcomes['ran']} ran the tool, "
            f"{outcomes['refused']} got AlreadyResumed, {outcomes['crashed']} crashed; {refunds} refund(s)"
        ),
        detail={"errors": errors},
    )
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
