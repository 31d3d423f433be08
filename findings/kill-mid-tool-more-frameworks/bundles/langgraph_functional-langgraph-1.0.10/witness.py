"""LangGraph's functional API runs a @task again when its process was SIGKILLed after the task's side effect.

An @entrypoint with two tasks and SqliteSaver: draft_refund draws a request id (new on every run, as a model
call gives a new answer), refund inserts a row into a sqlite table, keyed by that request id with --key
checkpointed (so a re-run with the same id adds none), and start SIGKILLs itself right before or after it.
A new process resumes with invoke(None, config) (the message again if the thread has no checkpoint); one row
is PASS. A finished task's result is saved by put_writes in the background while the next task runs: --draft
aims the kill at that write: "unsaved" blocks it until the kill, "saved" waits for it, "raced" for nothing.
"""

import argparse
import importlib.metadata
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import uuid

CONFIG = {"configurable": {"thread_id": "refund-A-1001"}}


def child(args):
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.func import entrypoint, task

    start = args.phase == "start"
    seen, changed = [], threading.Condition()  # "blocked" / "saved": the draft's write

    def is_draft(writes):
        return any(isinstance(value, dict) and "request_id" in value for _, value in writes)

    class Saver(SqliteSaver):
        def put_writes(self, config, writes, task_id, task_path=""):
            if start and args.draft == "unsaved" and is_draft(writes):
                with changed:
                    seen.append("blocked")
                    changed.notify_all()
                threading.Event().wait()  # held until the SIGKILL
            out = super().put_writes(config, writes, task_id, task_path)
            if is_draft(writes):
                with changed:
                    seen.append("saved")
                    changed.notify_all()
            return out

    @task
    def draft_refund(message: str) -> dict:
        return {"order_id": "A-1001", "cents": 1999, "request_id": f"rf_{uuid.uuid4().hex[:16]}"}

    @task
    def refund(draft: dict) -> str:
        if start:
            with changed:
                wanted = {"raced": None, "unsaved": "blocked", "saved": "saved"}[args.draft]
                if not changed.wait_for(lambda: wanted is None or wanted in seen, timeout=60):
                    print(f"the draft's write never stood as --draft {args.draft} asks", file=sys.stderr)
                    os._exit(3)
            if args.point == "before-effect":
                os.kill(os.getpid(), signal.SIGKILL)
        payments = sqlite3.connect(os.path.join(args.workdir, "payments.sqlite"))
        key = draft["request_id"] if args.key == "checkpointed" else None
        payments.execute("INSERT OR IGNORE INTO refunds (key) VALUES (?)", (key,))
        payments.commit()
        if start:
            os.kill(os.getpid(), signal.SIGKILL)
        return f"refunded {draft['cents']} cents on order {draft['order_id']}"

    saver = Saver(sqlite3.connect(os.path.join(args.workdir, "checkpoints.sqlite"), check_same_thread=False))

    @entrypoint(checkpointer=saver)
    def refund_workflow(message: str) -> str:
        return refund(draft_refund(message).result()).result()

    message = "Please refund order A-1001, 19.99 USD."
    payload = message if start or saver.get_tuple(CONFIG) is None else None
    print(refund_workflow.invoke(payload, CONFIG, durability=args.durability))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", choices=("none", "checkpointed"), default="none")
    parser.add_argument("--point", choices=("before-effect", "after-effect"), default="after-effect")
    parser.add_argument("--draft", choices=("raced", "unsaved", "saved"), default="raced")
    parser.add_argument("--durability", choices=("sync", "async"), default="sync")
    parser.add_argument("--phase", choices=("start", "resume"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        return child(args)
    out = {
        "witness": "langgraph_functional",
        "framework": "langgraph",
        "version": importlib.metadata.version("langgraph"),
    }
    workdir = tempfile.mkdtemp(prefix="witness-")
    try:
        db = sqlite3.connect(os.path.join(workdir, "payments.sqlite"))
        db.execute("CREATE TABLE refunds (id INTEGER PRIMARY KEY, key TEXT UNIQUE)")
        db.commit()
        how = ["--key", args.key, "--point", args.point, "--draft", args.draft, "--durability", args.durability]
        base = [sys.executable, __file__, *how, "--workdir", workdir, "--phase"]
        start = subprocess.run([*base, "start"], capture_output=True, text=True, timeout=240)
        if start.returncode != -signal.SIGKILL:
            why = (start.stderr.strip().splitlines() or ["no output"])[-1]
            out.update(
                verdict="ERROR", counts={}, did=f"start was not killed in the task (exit {start.returncode}: {why})"
            )
            return finish(out, 2)
        resume = subprocess.run([*base, "resume"], capture_output=True, text=True, timeout=240)
        refunds = db.execute("SELECT COUNT(*) FROM refunds").fetchone()[0]
        did = (
            f"killed {args.point.split('-')[0]} the refund in the refund task (key={args.key}, draft {args.draft}, "
            f"durability={args.durability}), resumed with invoke(None): {refunds} refund(s)"
        )
        if resume.returncode != 0:
            did += f"; resume crashed: {(resume.stderr.strip().splitlines() or ['no output'])[-1]}"
        verdict = "PASS" if refunds == 1 and resume.returncode == 0 else "FAIL"
        out.update(verdict=verdict, counts={"refund": refunds}, did=did)
        return finish(out, 0 if verdict == "PASS" else 1)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def finish(out, code):
    print(json.dumps(out))
    return code


if __name__ == "__main__":
    sys.exit(main())
