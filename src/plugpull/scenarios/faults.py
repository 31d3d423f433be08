"""Faults as values: what breaks a line, apart from where it lands (plugpull.aim) and what must hold (plugpull.checks).

A fault is a small value, as a Jepsen nemesis is (a partition, a kill, a pause), that a scenario composes: armed on
the provider before the faulted phase starts (:meth:`Fault.arm`: which call or step to hold), then struck on that
phase (``strike``), then proven by the check that says the fault landed where it was aimed (``proven``). power-loss
is a held-call or boundary kill followed by a :class:`PowerCut`; every-boundary a :class:`BoundaryKill` at each
boundary of the clean run; kill-mid-tool a :class:`HeldCallKill` of start; resume-after-approval the same kill of
approve; tool-error a :class:`ToolRaise` answered into the tool; lost-session-write a :class:`LostStoreWrite`;
cancel-mid-stream a :class:`StreamCancel`. A scenario declares the faults it composes
(``Scenario.faults``); a new fault is a new value here (or in a test: tests/scenarios/interrupt_mid_tool.py sends
SIGINT instead), used by the scenario that needs it, and changes no other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from plugpull import checks
from plugpull.aim import Aim
from plugpull.scenarios.held_kill import POLL, HeldKill, kill_at_held_call
from plugpull.store import Store

if TYPE_CHECKING:
    from plugpull.boundaries import Step
    from plugpull.channel import Channel
    from plugpull.evidence import Outcome
    from plugpull.process import Running


class Fault:
    """A fault a scenario composes. Subclasses are frozen dataclasses: what the fault is aimed at is its value."""

    #: What it is, in words (docs/scenarios.md, "Faults"); the registry refuses a scenario whose faults lack one.
    name: ClassVar[str] = ""
    #: It holds one effect call of the provider, so ``--hold`` chooses which (``Scenario.holds_calls``).
    holds_call: ClassVar[bool] = False

    def arm(self, provider: Any) -> None:
        """Tell the provider what to hold before the faulted phase starts; by default nothing."""


class KillAtHeld(Fault):
    """A SIGKILL of a phase's process group while the provider holds what the fault armed (a call, a step)."""

    def strike(self, channel: Channel, running: Running | Outcome, timeout: float) -> HeldKill:
        """Wait for the held call (and the sibling and saves as asked), the phase's exit or ``timeout``; kill."""
        return kill_at_held_call(channel, running, timeout)


@dataclass(frozen=True)
class HeldCallKill(KillAtHeld):
    """SIGKILL of a phase's process group while the provider holds its effect call at ``side`` (before-effect: not
    recorded yet; after-effect: recorded, not answered), optionally waiting for a sibling call and saves first."""

    name: ClassVar[str] = "SIGKILL at a held effect call"
    holds_call: ClassVar[bool] = True

    side: str
    hold: tuple[str, int] | None = None
    sibling: tuple[str, str] | None = None
    saves: tuple[tuple[str, int, str], ...] = ()

    @classmethod
    def aimed(cls, side: str, aim: Aim) -> HeldCallKill:
        """The kill at ``side`` of the call, sibling and saves ``aim`` names."""
        return cls(side, hold=aim.hold, sibling=aim.sibling, saves=aim.saves)

    def arm(self, provider: Any) -> None:
        provider.arm(self.side, hold=self.hold, sibling=self.sibling, saves=self.saves)

    def proven(self, ev: Any) -> Any:
        """None when the kill landed in the held call (checks.prove_kill), else the line's ERROR."""
        return checks.prove_kill(ev)


@dataclass(frozen=True)
class BoundaryKill(KillAtHeld):
    """SIGKILL of a phase's process group held just before or after one boundary of the clean run (a model call, a
    checkpoint save, an effect call: ``plugpull.boundaries.Step``)."""

    name: ClassVar[str] = "SIGKILL at a boundary"

    step: Step
    side: str  # "before" or "after"

    def arm(self, provider: Any) -> None:
        provider.arm_step(self.step.kind, self.step.name, self.step.n, self.side)

    def proven(self, ev: Any) -> Any:
        """None when the kill landed at the held side of the boundary (checks.prove_boundary_kill)."""
        return checks.prove_boundary_kill(ev)


@dataclass(frozen=True)
class PowerCut(Fault):
    """After a proven kill, the power of the workdir's FUSE file system cut: what was not fsynced is lost as
    ``variant`` says (plugpull.powercut.durability), and the file system is mounted again at the same path."""

    name: ClassVar[str] = "a power cut of the workdir"

    variant: str

    def strike(self, place: Any) -> Any:
        """Cut ``place`` (power_loss.PoweredWorkdir) and mount it again; what the cut lost (the model's account).
        Raises :class:`~plugpull.errors.PowerCutError` when the cut or the mount fails."""
        return place.cut(self.variant)


@dataclass(frozen=True)
class ToolRaise(Fault):
    """The held effect call answered into the tool as a failed outside call: its ``record_effect`` raises ``fault``
    (a ``plugpull.ToolFault`` connection reset, a ``plugpull.ToolTimeout`` read timeout) with ``message``, before or
    after the provider recorded the effect (``side``). A ``hang`` is armed the same way and answered late by the
    scenario instead (tool_error.hang), so it is never struck."""

    name: ClassVar[str] = "a raised tool call"
    holds_call: ClassVar[bool] = True

    side: str
    fault: str
    hold: tuple[str, int] | None = None
    sibling: tuple[str, str] | None = None

    def arm(self, provider: Any) -> None:
        provider.arm(self.side, hold=self.hold, sibling=self.sibling)

    def strike(self, channel: Channel, message: str) -> None:
        channel.fail_held(self.fault, message)


@dataclass(frozen=True)
class LostStoreWrite(Fault):
    """The Session store (a database on another machine) loses its ``write``-th write carrying the staged input
    (``write-lost``) or keeps it and loses its acknowledgement (``ack-lost``); nothing is killed."""

    name: ClassVar[str] = "a lost Session write or acknowledgement"

    write: int
    point: str  # "write-lost" or "ack-lost" (plugpull.store)

    def store(self) -> Store:
        """The store of the line's channel, set to lose that write or its ack."""
        return Store(fault=(self.write, self.point))

    def proven(self, ev: Any) -> Any:
        """None when the store lost the write (or its ack) it was aimed at, else the line's ERROR."""
        return checks.prove_store_fault(ev)


#: The marks a cancel reads (docs/agent-protocol.md, "cancel-mid-stream"): one "before" mark before each streamed
#: chunk of a model's answer, and (optional) one after the consumer showed each chunk.
CHUNK = "model-chunk"
SHOWN = "chunk-shown"
#: Seconds a run held at its point gets to connect a cancel watcher when none was waiting.
WATCHER_GRACE = 2.0
#: Seconds the cancel gets to land while the step is held; later, it landed only once the step was let go.
CANCEL_GRACE = 5.0
#: Seconds the consumer gets to show the chunks already streamed before the cancel is ordered.
SHOWN_GRACE = 5.0


@dataclass(frozen=True)
class StreamCancel(Fault):
    """The client walks away while the answer streams: a step of the run held (a streamed chunk, an effect call, a
    model call), the agent's cancel watcher answered there, its cancel report awaited; then the run drains, or with
    ``sigkill`` its process group is SIGKILLed right after the cancel landed."""

    name: ClassVar[str] = "a cancel of the streaming run"

    kind: str  # the held step as Provider.arm_step takes it
    step: str
    n: int
    side: str
    sigkill: bool = False

    def arm(self, provider: Any) -> None:
        provider.arm_step(self.kind, self.step, self.n, self.side)

    def strike(self, channel: Channel, running: Running, ev: Any, timeout: float) -> None:
        """Cancel at the held step; fills ``ev`` (its chunks, watchers, the cancel report, start's outcome)."""
        cancel_at_held(channel, running, ev, timeout, self.sigkill)

    def proven(self, ev: Any) -> Any:
        """None when the cancel landed while the step was held (checks.prove_cancel), else the line's ERROR."""
        return checks.prove_cancel(ev)


def wait_shown(provider: Any, aim: dict[str, Any], grace: float) -> tuple[int, int | None]:
    """Chunks the model streamed before the held step, and how many the consumer has shown (None: it does not say).

    A consumer that marks ``chunk-shown`` after showing each chunk lets the cancel wait (up to ``grace``
    seconds) until everything streamed is on screen, so what the user saw does not depend on how far the
    consumer had read its queue when the cancel came.
    """

    def counted(name: str) -> int:
        return sum(1 for m in provider.marks if m.phase == "start" and m.name == name and m.edge == "before")

    emitted = counted(CHUNK) - (1 if aim.get("name") == CHUNK else 0)
    deadline = time.monotonic() + grace
    while counted(SHOWN) < emitted and counted(SHOWN) and time.monotonic() < deadline:
        time.sleep(POLL)
    return emitted, (counted(SHOWN) if counted(SHOWN) else None)


def cancel_at_held(channel: Channel, running: Running, ev: Any, timeout: float, sigkill: bool) -> None:
    """Wait for the held step; order the cancel; wait for its report; let the run drain or SIGKILL it."""
    provider = channel.provider
    deadline = time.monotonic() + timeout
    while not provider.held_event.wait(POLL):
        if running.poll() is not None or time.monotonic() > deadline:
            break
    if provider.held is None:
        ev.start = running.wait(max(0.0, deadline - time.monotonic()))
        return
    ev.chunks_emitted, ev.chunks_shown = wait_shown(provider, ev.aim, SHOWN_GRACE)
    waiting = channel.order_cancel()
    # A watcher that connects late is answered at once; with none waiting, a short grace for one.
    deadline = time.monotonic() + (CANCEL_GRACE if waiting else WATCHER_GRACE)
    while not channel.cancelled_event.wait(POLL):
        if running.poll() is not None or time.monotonic() > deadline:
            break
    ev.watchers = sum(1 for w in channel.cancel_watchers if w["phase"] == "start")
    ev.held = provider.held.to_dict()
    ev.cancel = channel.cancels[0] if channel.cancels else None
    if sigkill:
        # The server dies while draining: SIGKILL right after the cancel landed, the held call still held.
        ev.start = running.kill()
        return
    # Let the held call go: the run drains (a tool thread the cancel did not stop completes its call). A
    # framework that finishes the running step before it gives up (LangGraph's sync stream waits for its
    # worker threads) reports the cancel only now: ``deferred``.
    channel.release_held()
    if ev.cancel is None and ev.watchers:
        deadline = time.monotonic() + timeout
        while not channel.cancelled_event.wait(POLL):
            if running.poll() is not None or time.monotonic() > deadline:
                break
    ev.start = running.wait(timeout)
    if ev.cancel is None and channel.cancels:
        ev.cancel, ev.deferred = channel.cancels[0], True
