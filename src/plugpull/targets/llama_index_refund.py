"""A refund workflow on LlamaIndex Workflows, its Context saved to a file: the built-in `llama-index` target.

    python -m plugpull.targets.llama_index_refund [--key none|checkpointed] start|resume

A ``workflows.Workflow`` with two steps:

1. ``draft`` (StartEvent -> Drafted): which order, how much, and a fresh request id (new on every
   call, as an LLM's answer would be). No outside action.
2. ``refund`` (Drafted -> StopEvent): the tool: calls the payment provider,
   ``record_effect("refund", key=...)``, on a worker thread (``asyncio.to_thread``, as an async HTTP
   client would not block the loop).

LlamaIndex Workflows keeps a run's state in its ``Context``; saving it is the app's job. Its docs:
"The Context is serializable, so it can be saved to a database, file, etc. and loaded back in later"
(https://developers.llamaindex.ai/python/framework/understanding/agent/state), and
``Context.to_dict`` "Save[s] the store, queues, buffers, active work and running flag. Use from_dict
to resume a run" (its docstring). This app streams the run's internal events
(``handler.stream_events(expose_internal=True)``) and, each time a step stops running
(``StepStateChanged`` NOT_RUNNING), writes ``ctx.to_dict()`` to ``$PLUGPULL_WORKDIR/context.json``
(atomically, fsynced), marked ``plugpull.boundary("context-save")``. The save after ``draft`` holds
the refund step as active work, with its input event (the drafted request id).

start:  ``workflow.run(order_id=...)``, saving as above.
resume: ``Context.from_dict(workflow, saved)``, then ``workflow.run(ctx=restored)``: the active work
        (the refund step killed mid-tool) runs again with its saved input event. With
        ``--key checkpointed`` that event's request id is the idempotency key. A resume with no saved
        Context (a kill before the first save) runs the workflow again from its input.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import sys
import uuid
from pathlib import Path

from workflows import Context, Workflow, step
from workflows.events import Event, StartEvent, StepState, StepStateChanged, StopEvent

from plugpull.client import WORKDIR_ENV, announce, boundary, import_present, record_effect, record_result  # plugpull

ORDER = "A-1001"
SAVED = "context.json"
# Written when the run finishes: a finished run's Context restores to a new run (from_dict of a run that is no
# longer running starts over, with a StartEvent that has no input), so resume must know the run ended.
FINISHED = "result.json"
_key_variant = "none"
#: What a run imports only once it runs: the Workflow's runtime (control loop, basic runtime plugin, the graph
#: validated on the first run, its verbose decorator), asyncio's default executor (``asyncio.to_thread``) and the
#: parser ``importlib.metadata`` reads a version with: measured in forked phases of llama-index-workflows 2.26.
RUN_IMPORTS = (
    "workflows.runtime.control_loop",
    "workflows.plugins.basic",
    "workflows.representation.build",
    "workflows.representation.validate",
    "workflows.runtime.verbose",
    "concurrent.futures.thread",
    "email.parser",
)


def log(message: str) -> None:
    print(f"llama_index_refund: {message}", file=sys.stderr, flush=True)


class Drafted(Event):
    order_id: str
    cents: int
    request_id: str


class RefundFlow(Workflow):
    @step
    async def draft(self, ev: StartEvent) -> Drafted:
        drafted = Drafted(order_id=ev.order_id, cents=1999, request_id=f"rf_{uuid.uuid4().hex[:16]}")
        log(f"draft ran: {drafted.request_id}")
        return drafted

    @step
    async def refund(self, ev: Drafted) -> StopEvent:
        key = ev.request_id if _key_variant == "checkpointed" else None
        log(f"refund step runs with key {key}")
        await asyncio.to_thread(record_effect, "refund", key=key)  # plugpull: where the payment API call goes
        return StopEvent(result=f"refunded {ev.cents} cents on order {ev.order_id} ({ev.request_id})")


def save(path: Path, ctx: Context) -> None:
    """The app's store: the Context as JSON, replaced atomically and fsynced (a kill leaves the old or the new)."""
    with boundary("context-save"):  # plugpull: a save the kill can be aimed at (--save)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(ctx.to_dict(), f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


async def drive(workflow: RefundFlow, path: Path, ctx: Context | None) -> str:
    handler = workflow.run(order_id=ORDER) if ctx is None else workflow.run(ctx=ctx)
    async for ev in handler.stream_events(expose_internal=True):
        if isinstance(ev, StepStateChanged) and ev.step_state == StepState.NOT_RUNNING:
            save(path, handler.ctx)
    return str(await handler)


def main(argv: list[str] | None = None) -> int:
    global _key_variant
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", choices=("none", "checkpointed"), default="none")
    parser.add_argument("phase", choices=("start", "resume"))
    args = parser.parse_args(argv)
    _key_variant = args.key
    announce(framework="llama-index-workflows", version=importlib.metadata.version("llama-index-workflows"))  # plugpull
    path = Path(os.environ.get(WORKDIR_ENV, ".")).resolve() / SAVED
    workflow = RefundFlow(timeout=120)
    ctx = None
    finished = path.with_name(FINISHED)
    if args.phase == "resume" and finished.exists():
        # The recovery protocol's no-op (docs/agent-protocol.md): the run is over, report its result again.
        log("resume: the run already finished: nothing to continue")
        final = json.loads(finished.read_text())["final"]
    else:
        if args.phase == "resume" and path.exists():
            ctx = Context.from_dict(workflow, json.loads(path.read_text()))
            log("resume: restored the saved Context")
        elif args.phase == "resume":
            log("resume: no saved Context (killed before the first save): running the workflow from its input")
        final = asyncio.run(drive(workflow, path, ctx))
        tmp = finished.with_suffix(".tmp")
        tmp.write_text(json.dumps({"final": final}))
        os.replace(tmp, finished)
    # The request id is drawn per run by design (the target ignores it: Target.result_ignore).
    answer, _, request_id = final.rpartition(" (")
    record_result({"answer": answer, "request_id": request_id.rstrip(")")})  # plugpull: the run's outcome
    print(final, flush=True)
    return 0


def plugpull_prefork(argv: list[str]) -> None:  # plugpull (optional): what --fork-server imports once
    """Import ``RUN_IMPORTS`` in plugpull's fork server, once, instead of in every forked phase (the
    `llama-index-approval` target's hook too).

    Only imports: nothing is opened, no loop or thread started. A module a release does not have is skipped.
    Returns None: the forked phase runs its module as ``__main__`` (docs/DECISIONS.md, "Throughput").
    """
    import_present(*RUN_IMPORTS)


if __name__ == "__main__":
    sys.exit(main())
