"""A Pydantic AI refund agent made durable with Temporal (``TemporalAgent``): the built-in `pydantic-ai-temporal` target.

    python -m plugpull.targets.pydantic_ai_temporal [--server sidecar|in-run] [--key none|tool-call-id] serve|start|resume

The agent and its workflow are plugpull.targets.pydantic_ai_temporal_app's; the dev server is the `temporal` target's
(plugpull.targets.temporal_support: a sidecar, or the phase's own, restarted on its SQLite file by resume). The
worker is configured as Pydantic AI's docs show: ``PydanticAIPlugin`` on the client, ``AgentPlugin(temporal_agent)``
on the worker.

start:  a worker, then ``client.start_workflow(RefundAgentWorkflow.run, ...)``, waiting for its result; plugpull's
        kill takes the worker inside the tool's activity.
resume: a new worker on the same task queue, then ``client.get_workflow_handle(id).result()``: the server retries
        the tool's activity once its start-to-close timeout passes, and the worker replays the workflow.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import sys

from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin
from temporalio.client import Client
from temporalio.worker import Worker

import plugpull.targets.pydantic_ai_temporal_app as app
import plugpull.targets.temporal_support as ts
import plugpull.temporal as pt
from plugpull.client import announce, record_result  # plugpull

RESULT_WAIT = 90.0


async def run_worker(address: str, phase: str) -> str:
    client = await Client.connect(address, plugins=[PydanticAIPlugin()])
    worker = Worker(
        client,
        task_queue=app.TASK_QUEUE,
        workflows=[app.RefundAgentWorkflow],
        plugins=[AgentPlugin(app.temporal_agent)],
        max_cached_workflows=0,  # no wait for the killed worker's sticky queue (plugpull.targets.temporal_refund)
        workflow_runner=ts.RUNNER,
    )
    async with worker:
        if phase == "start":
            handle = await client.start_workflow(
                app.RefundAgentWorkflow.run, app.REQUEST, id=app.WORKFLOW_ID, task_queue=app.TASK_QUEUE
            )
            app.log(f"started workflow {app.WORKFLOW_ID} (run {handle.result_run_id})")
        else:
            handle = client.get_workflow_handle(app.WORKFLOW_ID)
            app.log(f"resume: a new worker on {app.TASK_QUEUE}; waiting for workflow {app.WORKFLOW_ID}")
        return await asyncio.wait_for(handle.result(), RESULT_WAIT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("sidecar", "in-run"), default="sidecar")
    parser.add_argument("--key", choices=("none", "tool-call-id"), default="none")
    parser.add_argument("phase", choices=("serve", "start", "resume"))
    args = parser.parse_args(argv)
    if args.phase == "serve":
        return ts.serve_phase(app.log)
    app.key_variant = args.key
    announce(framework="pydantic-ai-slim", version=importlib.metadata.version("pydantic-ai-slim"))  # plugpull
    try:
        announce(temporalio=importlib.metadata.version("temporalio"), temporal_cli=pt.version(pt.find_binary()))
        with ts.server_for(args.server, args.phase, app.log) as address:
            final = asyncio.run(run_worker(address, args.phase))
    except (pt.TemporalUnavailable, ts.NoServer) as exc:
        app.log(f"{args.phase}: {exc}")
        return 4
    except (asyncio.TimeoutError, RuntimeError) as exc:
        app.log(f"{args.phase}: {type(exc).__name__}: {exc}")
        return 1
    record_result({"answer": final})  # plugpull: the run's outcome, compared with the clean run's
    print(final, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
