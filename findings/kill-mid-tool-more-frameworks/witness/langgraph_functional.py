"""LangGraph's functional API runs a @task again when its process was SIGKILLed after the task's side effect.

An @entrypoint with two tasks and SqliteSaver: draft_refund draws a request id (new on every run, as a model
call gives a new answer), refund inserts a row into a sqlite table, keyed by that request id with --key
checkpointed (so a re-run with the same id adds none), and start SIGKILLs itself right before or after it.
A new process resumes with invoke(None, config) (the message again if the thread has no checkpoint); one row
is PASS. A finished task's result is saved by put_writes in the background while the next task runs: --draft
aims the kill at that write: "unsaved" blocks it until the kill, "saved" waits for it, "raced" for nothing.
--fork imports LangGraph once and forks each phase from this process.

Last stdout line: one JSON object. Exit 0: the refund row was inserted once and resume finished; 1: it was
inserted 0 or 2+ times, or resume failed; 2: did not run as designed.
"""

import argparse
import contextlib
import importlib
import importlib.metadata
import json
import os
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import traceback
import uuid

CONFIG = {"configurable": {"thread_id": "refund-A-1001"}}
PHASE_IMPORTS = ("langgraph.checkpoint.sqlite", "langgraph.func")  # what child() imports: once, with --fork


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


def fork_phase(argv, out, err):
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


def wait_phase(pid, timeout, cmd):
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


def run_forked(argv, timeout):
    """What subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True, timeout=timeout)
    returns, with the phase forked from this process."""
    cmd = [sys.executable, __file__, *argv]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        code = wait_phase(fork_phase(argv, out, err), timeout, cmd)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(cmd, code, out.read().decode(), err.read().decode())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", choices=("none", "checkpointed"), default="none")
    parser.add_argument("--point", choices=("before-effect", "after-effect"), default="after-effect")
    parser.add_argument("--draft", choices=("raced", "unsaved", "saved"), default="raced")
    parser.add_argument("--durability", choices=("sync", "async"), default="sync")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="import LangGraph once and fork each phase from this process (default: each phase a new "
        "interpreter, as the records ran)",
    )
    parser.add_argument("--phase", choices=("start", "resume"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fork and sys.platform != "linux":
        parser.error("--fork: needs Linux (os.fork, os.pidfd_open)")
    if args.phase:
        return child(args)
    out = {
        "witness": "langgraph_functional",
        "framework": "langgraph",
        "version": importlib.metadata.version("langgraph"),
    }
    if args.fork:
        for name in PHASE_IMPORTS:
            importlib.import_module(name)
        if threading.active_count() != 1:
            did = f"--fork: {threading.active_count()} threads after the imports; fork() copies only this one"
            out.update(verdict="ERROR", counts={}, did=did)
            return finish(out, 2)
    workdir = tempfile.mkdtemp(prefix="witness-")
    try:
        payments = os.path.join(workdir, "payments.sqlite")
        with contextlib.closing(sqlite3.connect(payments)) as db:  # closed: no connection open across a fork
            db.execute("CREATE TABLE refunds (id INTEGER PRIMARY KEY, key TEXT UNIQUE)")
            db.commit()
        how = ["--key", args.key, "--point", args.point, "--draft", args.draft, "--durability", args.durability]
        phase_args = [*how, "--workdir", workdir, "--phase"]

        def phase(name):
            if args.fork:
                return run_forked([*phase_args, name], timeout=240)
            return subprocess.run(
                [sys.executable, __file__, *phase_args, name], capture_output=True, text=True, timeout=240
            )

        start = phase("start")
        if start.returncode != -signal.SIGKILL:
            why = (start.stderr.strip().splitlines() or ["no output"])[-1]
            out.update(
                verdict="ERROR", counts={}, did=f"start was not killed in the task (exit {start.returncode}: {why})"
            )
            return finish(out, 2)
        resume = phase("resume")
        with contextlib.closing(sqlite3.connect(payments)) as db:
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
