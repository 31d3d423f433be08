"""A CrewAI flow whose refund waits for a human's approval: the built-in `crewai-approval` target.

    python -m plugpull.targets.crewai_approval start|approve|recover

A ``Flow`` with a structured state, ``@persist(SQLiteFlowPersistence(...))`` in $PLUGPULL_WORKDIR,
and CrewAI's human-in-the-loop decorator on its ``@start`` method:

1. ``@start() @human_feedback(message=..., provider=...) propose_refund``: which order, how much.
   The provider is the async kind CrewAI documents for approvals that arrive later (Slack, a
   web form): it raises ``HumanFeedbackPending``, the flow saves the pending request with its
   state in the SQLite persistence, and ``kickoff()`` returns the pending object.
2. ``@listen(propose_refund) refund``: runs once the feedback is in; ``record_effect("refund")``
   with no key, so CrewAI's own behaviour shows.

No ``emit`` (approve/reject routing would need an LLM to read the human's words) and no LLM at
all: the human's feedback is passed through as text.

start:   ``kickoff()`` until the flow pauses; exits 0 with the request pending, its flow id in
         $PLUGPULL_WORKDIR/flow_id (what an app keeps to answer the request later).
approve: the webhook handler of CrewAI's docs: ``Flow.from_pending(flow_id, persistence)`` then
         ``flow.resume("approved")``. ``from_pending`` raises ``ValueError`` when nothing is
         pending for the id (the request was answered): exit 3, the framework refused.
recover: after ``approve`` was killed inside the refund. The pending request was cleared before
         the listener ran, so ``from_pending`` has nothing; the public way to continue a
         ``@persist`` flow is ``kickoff(restore_from_state_id=flow_id)``, which runs the flow
         from its ``@start`` method with the saved state and so asks for the approval again;
         the approval the human gave is passed again (as an app that recorded it would).
         Exit 0 when the run finished, 4 when it could not be finished (the last stderr line says why).
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path

from plugpull.client import PAUSED_AGAIN_EXIT, WORKDIR_ENV, announce, gate, record_effect, record_result  # plugpull
from plugpull.targets.crewai_refund import offline_home

REFUSED = 3
FEEDBACK = "approved"


def log(message: str) -> None:
    print(f"crewai_approval: {message}", file=sys.stderr, flush=True)


def build(workdir: Path):
    from crewai.flow.async_feedback import HumanFeedbackPending
    from crewai.flow.flow import Flow, listen, start
    from crewai.flow.human_feedback import human_feedback
    from crewai.flow.persistence import SQLiteFlowPersistence, persist
    from pydantic import BaseModel

    class AskLater:
        """CrewAI's async feedback provider shape: tell a human elsewhere, then pause the flow."""

        def request_feedback(self, context, flow):
            log(f"approval requested for flow {context.flow_id}")
            raise HumanFeedbackPending(context=context)

    class RefundState(BaseModel):
        id: str = ""
        order_id: str = "A-1001"
        cents: int = 1999
        receipt: str = ""

    persistence = SQLiteFlowPersistence(str(workdir / "flow_states.db"))

    @persist(persistence)
    class RefundFlow(Flow[RefundState]):
        @start()
        @human_feedback(message="Approve this refund?", llm=None, provider=AskLater())
        def propose_refund(self) -> dict:
            return {"order_id": self.state.order_id, "cents": self.state.cents}

        @listen(propose_refund)
        def refund(self) -> str:
            log(f"refund runs after feedback {self.last_human_feedback.feedback!r}")
            record_effect("refund")  # plugpull: where the payment API call goes
            self.state.receipt = f"refunded {self.state.cents} cents on order {self.state.order_id}"
            return self.state.receipt

    return RefundFlow, persistence, HumanFeedbackPending


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] not in ("start", "approve", "recover"):
        print("usage: python -m plugpull.targets.crewai_approval {start,approve,recover}", file=sys.stderr)
        return 2
    phase = argv[0]
    workdir = Path(os.environ.get(WORKDIR_ENV, ".")).resolve()
    offline_home(workdir)
    announce(framework="crewai", version=importlib.metadata.version("crewai"))  # plugpull
    flow_class, persistence, pending_type = build(workdir)
    id_file = workdir / "flow_id"

    if phase == "start":
        paused = flow_class(persistence=persistence).kickoff()
        if not isinstance(paused, pending_type):
            log(f"start did not pause for approval: kickoff returned {paused!r}")
            return 1
        if persistence.load_pending_feedback(paused.context.flow_id) is None:
            log("the pending approval was not saved")
            return 1
        id_file.write_text(paused.context.flow_id)
        log(f"paused for approval: flow {paused.context.flow_id}")
        return 0

    if not id_file.is_file():
        log(f"no paused flow in {workdir}")
        return 2
    flow_id = id_file.read_text()

    if phase == "approve":
        gate()  # plugpull: racing approvers are released together here
        try:
            flow = flow_class.from_pending(flow_id, persistence)
        except ValueError as exc:  # "No pending feedback found for flow_id: ..."
            log(f"refused: {exc}")
            return REFUSED
        final = flow.resume(FEEDBACK)
    else:
        try:
            flow = flow_class.from_pending(flow_id, persistence)
            log("recover: the approval is still pending; answering it")
            final = flow.resume(FEEDBACK)
        except ValueError as exc:
            log(f"recover: from_pending: {exc}; restoring the saved state with restore_from_state_id")
            final = flow_class(persistence=persistence).kickoff(restore_from_state_id=flow_id)
            if isinstance(final, pending_type):
                log(
                    f"recover: the restored flow asks for approval again (flow {final.context.flow_id}); passing it again"
                )
                final = flow_class.from_pending(final.context.flow_id, persistence).resume(FEEDBACK)
    if isinstance(final, pending_type):
        log(f"stuck: the flow paused for approval again after {phase}")
        return PAUSED_AGAIN_EXIT
    record_result({"answer": final})  # plugpull: the run's outcome, compared with the clean approval's
    log(f"done: {final}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
