"""A refund workflow on Temporal, with its real dev server: the built-in `temporal` target.

    python -m plugpull.targets.temporal_refund [--server sidecar|in-run] [--key none|run-activity] serve|start|resume

The workflow (plugpull.targets.temporal_app) asks a scripted model for the refund (activity ``plan``), then makes
it (activity ``refund``, which calls ``record_effect``). A worker in this process runs both; the server (the Temporal
CLI's dev server, plugpull.temporal) keeps the workflow's history in an SQLite file in $PLUGPULL_WORKDIR.

``start`` starts a worker, starts the workflow and waits for its result; plugpull's kill takes the process inside
the refund activity. ``resume`` starts a new worker process against the same server on the same task queue and
waits for the same workflow: Temporal retries the activity whose attempt timed out (it cannot tell a worker died;
the start-to-close timeout says so) and replays the workflow from its history on the new worker. Temporal's
docs say what that means for the effect: "The Activity function completes successfully, but the Worker crashes just
before it notifies the Temporal Service. In this case, the Event History won't reflect the successful completion of
the Task, so the Activity will be retried" (https://docs.temporal.io/activity-definition#idempotency).

Two crashes (``--server``, plugpull.targets.temporal_support):

- ``sidecar``: the server runs apart from the worker, started by ``serve`` (plugpull starts that phase before
  ``start`` and stops it after ``resume``: Target.sidecar) and never killed: only the worker dies.
- ``in-run``: ``start`` runs the server itself, in its process group: the kill takes the server and the worker
  together (the machine they share went down). ``resume`` starts the server again on the same SQLite file and
  ports, then a new worker.

The worker caches no workflow (``max_cached_workflows=0``): every workflow task replays the history, and no task
waits for the sticky queue of the killed worker to time out (10 s by default) before it goes to the new one.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import importlib.metadata
import sys

from temporalio.client import Client
from temporalio.worker import Worker

import plugpull.targets.temporal_support as ts
import plugpull.temporal as pt
from plugpull.client import announce, record_result  # plugpull
from plugpull.targets.temporal_app import ORDER, TASK_QUEUE, WORKFLOW_ID, RefundWorkflow, log, plan, refund

# How long start and resume wait for the workflow's result: a retry comes within the start-to-close timeout and
# a second of backoff.
RESULT_WAIT = 90.0


async def run_worker(address: str, phase: str, key: str) -> str:
    client = await Client.connect(address)
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        worker = Worker(
            client,
            task_queue=TASK_QUEUE,
            workflows=[RefundWorkflow],
            activities=[plan, refund],
            activity_executor=pool,
            max_cached_workflows=0,
            workflow_runner=ts.RUNNER,
        )
        async with worker:
            if phase == "start":
                handle = await client.start_workflow(
                    RefundWorkflow.run, args=(ORDER, key), id=WORKFLOW_ID, task_queue=TASK_QUEUE
                )
                log(f"started workflow {WORKFLOW_ID} (run {handle.result_run_id})")
            else:
                handle = client.get_workflow_handle(WORKFLOW_ID)
                log(f"resume: a new worker on {TASK_QUEUE}; waiting for workflow {WORKFLOW_ID}")
            return await asyncio.wait_for(handle.result(), RESULT_WAIT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("sidecar", "in-run"), default="sidecar")
    parser.add_argument("--key", choices=("none", "run-activity"), default="none")
    parser.add_argument("phase", choices=("serve", "start", "resume"))
    args = parser.parse_args(argv)
    if args.phase == "serve":
        return ts.serve_phase(log)
    announce(framework="temporalio", version=importlib.metadata.version("temporalio"))  # plugpull
    try:
        announce(temporal_cli=pt.version(pt.find_binary()))  # plugpull
        with ts.server_for(args.server, args.phase, log) as address:
            final = asyncio.run(run_worker(address, args.phase, args.key))
    except (pt.TemporalUnavailable, ts.NoServer) as exc:
        log(f"{args.phase}: {exc}")
        return 4
    except (asyncio.TimeoutError, RuntimeError) as exc:
        log(f"{args.phase}: {type(exc).__name__}: {exc}")
        return 1
    # The request id is drawn per run by design (the target ignores it: Target.result_ignore).
    answer, _, request_id = final.rpartition(" (")
    record_result({"answer": answer, "request_id": request_id.rstrip(")")})  # plugpull: the run's outcome
    print(final, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
