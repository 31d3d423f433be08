"""An OpenAI Agents SDK refund agent on Temporal (``OpenAIAgentsPlugin``): the built-in `openai-agents-temporal` target.

    python -m plugpull.targets.openai_agents_temporal [--server sidecar|in-run] [--key none|run-activity] serve|start|resume

The agent and its workflow are plugpull.targets.openai_agents_temporal_app's; the dev server is the `temporal` target's
(plugpull.targets.temporal_support: a sidecar, or the phase's own, restarted on its SQLite file by resume). The
client and the worker are configured as the integration's README shows: ``OpenAIAgentsPlugin`` on the client (the
worker takes its plugins), with ``ModelActivityParameters`` for the model activity and, for an offline run, a
``model_provider`` (the scripted model); the tool's activity is registered on the worker.

start:  a worker, then ``client.start_workflow(RefundAgentWorkflow.run, ...)``, waiting for its result; plugpull's
        kill takes the worker inside the tool's activity.
resume: a new worker on the same task queue, then ``client.get_workflow_handle(id).result()``: the server retries
        the tool's activity once its start-to-close timeout passes, and the worker replays the workflow.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import importlib.metadata
import sys

from temporalio.client import Client
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.worker import Worker

import plugpull.targets.openai_agents_temporal_app as app
import plugpull.targets.temporal_support as ts
import plugpull.temporal as pt
from plugpull.client import announce, record_result  # plugpull
from plugpull.targets.openai_agents_support import outcome
from plugpull.targets.temporal_app import RETRY, START_TO_CLOSE

RESULT_WAIT = 90.0


def plugin() -> OpenAIAgentsPlugin:
    """The plugin: model calls as activities with the temporal target's timeout and retries, the scripted model."""
    params = ModelActivityParameters(start_to_close_timeout=START_TO_CLOSE, retry_policy=RETRY)
    return OpenAIAgentsPlugin(model_params=params, model_provider=app.ScriptedProvider())


async def run_worker(address: str, phase: str) -> str:
    client = await Client.connect(address, plugins=[plugin()])
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        worker = Worker(
            client,
            task_queue=app.TASK_QUEUE,
            workflows=[app.RefundAgentWorkflow],
            activities=[app.refund],
            activity_executor=pool,  # refund is synchronous: record_effect blocks
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
    parser.add_argument("--key", choices=("none", "run-activity"), default="none")
    parser.add_argument("phase", choices=("serve", "start", "resume"))
    args = parser.parse_args(argv)
    if args.phase == "serve":
        return ts.serve_phase(app.log)
    app.key_variant = args.key
    version = importlib.metadata.version
    announce(framework="temporalio-openai-agents", version=version("temporalio-openai-agents"))  # plugpull
    try:
        announce(
            openai_agents=version("openai-agents"),
            temporalio=version("temporalio"),
            temporal_cli=pt.version(pt.find_binary()),
        )
        with ts.server_for(args.server, args.phase, app.log) as address:
            final = asyncio.run(run_worker(address, args.phase))
    except (pt.TemporalUnavailable, ts.NoServer) as exc:
        app.log(f"{args.phase}: {exc}")
        return 4
    except (asyncio.TimeoutError, RuntimeError) as exc:
        app.log(f"{args.phase}: {type(exc).__name__}: {exc}")
        return 1
    # The answer names the reply id the model made up (a new one per model call): left out of the golden comparison.
    record_result(outcome(final))  # plugpull: the run's outcome
    print(final, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
