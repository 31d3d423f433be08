"""A LlamaIndex Workflows refund that waits for a human's approval: the built-in `llama-index-approval` target.

    python -m plugpull.targets.llama_index_approval start|approve|recover

A ``workflows.Workflow`` with the human-in-the-loop events of LlamaIndex Workflows: ``draft`` returns an
``InputRequiredEvent`` (``AskApproval``, with the drafted request id), which the caller reads from the event
stream; the caller answers with a ``HumanResponseEvent`` (``Approval``) through ``handler.ctx.send_event``,
and ``refund``, the step that takes it, calls the payment provider: ``record_effect("refund")`` with no key,
so the framework's own behaviour shows.

The app saves the workflow's Context as the ``llama-index`` target does (``ctx.to_dict()`` to
$PLUGPULL_WORKDIR/context.json, atomically, each time a step stops running) and also when the run asks for
input. LlamaIndex's docs show this pattern for an answer that comes later: save ``handler.ctx.to_dict()``,
stop, then ``Context.from_dict(workflow, saved)``, ``workflow.run(ctx=restored)`` and
``handler.ctx.send_event(HumanResponseEvent(...))``.

start:   the run until ``AskApproval`` is on the stream; the Context saved; the run cancelled; exit 0.
approve: refused (exit 3) when the saved Context's run is no longer running (``to_dict`` saves "the
         running flag"): restoring a finished run would start a new one. Else the human's answer written
         to approval.json, the saved Context restored, the run continued and the ``Approval`` sent
         (``plugpull.client.gate()`` right before); the Context saved after each step. LlamaIndex holds no
         claim on a request for input: approvers that restore the same waiting Context all run the step.
recover: after ``approve`` was killed: the saved Context (the last save is the waiting one: no step stopped
         between the approval and the kill) restored and the answer in approval.json sent again.
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
from workflows.events import HumanResponseEvent, InputRequiredEvent, StartEvent, StepState, StepStateChanged, StopEvent

from plugpull.client import PAUSED_AGAIN_EXIT, WORKDIR_ENV, announce, gate, record_effect, record_result  # plugpull
from plugpull.targets.llama_index_refund import plugpull_prefork  # noqa: F401 (--fork-server's hook)

ORDER = "A-1001"
SAVED = "context.json"
ANSWER = "approval.json"


def log(message: str) -> None:
    print(f"llama_index_approval: {message}", file=sys.stderr, flush=True)


class AskApproval(InputRequiredEvent):
    order_id: str
    cents: int
    request_id: str


class Approval(HumanResponseEvent):
    approved: bool


class ApprovalFlow(Workflow):
    @step
    async def draft(self, ev: StartEvent) -> AskApproval:
        request_id = f"rf_{uuid.uuid4().hex[:16]}"
        log(f"draft ran: {request_id}")
        return AskApproval(prefix="Refund A-1001?", order_id=ev.order_id, cents=1999, request_id=request_id)

    @step
    async def refund(self, ev: Approval) -> StopEvent:
        if not ev.approved:
            return StopEvent(result=f"refund of order {ORDER} declined")
        log("refund step runs (approved)")
        await asyncio.to_thread(record_effect, "refund")  # plugpull: the side effect, after the approval
        return StopEvent(result=f"refunded 1999 cents on order {ORDER}")


#: What :func:`answer` returns when the run stopped at an approval again instead of finishing.
PAUSED_AGAIN = "paused again"


def save(path: Path, ctx: Context) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # racing approvers each write their own
    with open(tmp, "w") as f:
        json.dump(ctx.to_dict(), f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


async def start(workflow: ApprovalFlow, path: Path) -> int:
    handler = workflow.run(order_id=ORDER)
    async for ev in handler.stream_events(expose_internal=True):
        if isinstance(ev, StepStateChanged) and ev.step_state == StepState.NOT_RUNNING:
            save(path, handler.ctx)
        if isinstance(ev, AskApproval):
            save(path, handler.ctx)
            log(f"paused for approval of {ev.request_id}")
            await handler.cancel_run()
            return 0
    log("the run ended without asking for approval")
    return 1


async def answer(workflow: ApprovalFlow, path: Path, approved: bool, racing: bool) -> str:
    handler = workflow.run(ctx=Context.from_dict(workflow, json.loads(path.read_text())))
    if racing:
        gate()  # plugpull: racing approvers are released together here
    handler.ctx.send_event(Approval(response="yes" if approved else "no", approved=approved))
    async for ev in handler.stream_events(expose_internal=True):
        if isinstance(ev, StepStateChanged) and ev.step_state == StepState.NOT_RUNNING:
            save(path, handler.ctx)
        if isinstance(ev, AskApproval):  # the restored run asks again instead of running the approved step
            save(path, handler.ctx)
            log(f"paused again: approval of {ev.request_id} requested")
            await handler.cancel_run()
            return PAUSED_AGAIN
    return str(await handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=("start", "approve", "recover"))
    args = parser.parse_args(argv)
    announce(framework="llama-index-workflows", version=importlib.metadata.version("llama-index-workflows"))  # plugpull
    workdir = Path(os.environ.get(WORKDIR_ENV, ".")).resolve()
    path, decision = workdir / SAVED, workdir / ANSWER
    workflow = ApprovalFlow(timeout=120)
    if args.phase == "start":
        return asyncio.run(start(workflow, path))
    if not path.exists():
        log(f"no saved Context in {workdir}")
        return 2
    saved = json.loads(path.read_text())
    if args.phase == "approve" and not saved.get("is_running"):
        # Context.to_dict saves the "running flag": a run that finished has no request waiting for an answer.
        # Restoring it would start a new run (from_dict "carries state across runs"), so the app refuses.
        log("the saved Context's run is no longer running: nothing waits for an approval")
        return 3
    if args.phase == "approve":
        decision.write_text(json.dumps({"approved": True}))  # the human's answer, kept for a recovery
        final = asyncio.run(answer(workflow, path, True, racing=True))
    else:
        if not decision.exists():
            log("no recorded answer to send again")
            return 1
        final = asyncio.run(answer(workflow, path, json.loads(decision.read_text())["approved"], racing=False))
    if final is PAUSED_AGAIN:
        return PAUSED_AGAIN_EXIT  # plugpull: docs/agent-protocol.md
    log(f"done: {final}")
    record_result({"answer": final})  # plugpull: the run's outcome, compared with the clean approval's
    print(final, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
