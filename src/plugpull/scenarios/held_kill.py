"""The held-call kill: SIGKILL a phase's process group while the provider holds its effect call.

One implementation of the kill and of the evidence its proof needs, shared by every scenario
that kills a tool mid-effect (kill-mid-tool kills ``start``; resume-after-approval kills
``approve``). The proof itself is checks.prove_held_kill's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from plugpull import checks, reaper
from plugpull.channel import Channel
from plugpull.errors import UsageError
from plugpull.evidence import KillProof, Outcome
from plugpull.process import Running, kill_group, live_members
from plugpull.scenarios.contract import Recovery, Scenario

POLL = 0.01


class KillAndRecover(Scenario):
    """A scenario that kills a run's phase and lets its recovering phase resume it (kill-mid-tool, every-boundary,
    power-loss): its targets' kill-and-recover phases and the phase a FAIL's call summary is about."""

    # A target adopted from resume-after-approval runs its own phases: start, approve (killed), recover.
    phases = ("start", "resume")
    kill_and_recover = ("start", "resume")
    recovery = {"*": Recovery("resume", "resume")}

    def adopt(self, target: Any, source: Scenario | None) -> Any:
        """``target`` (a variant of ``source``'s built-ins) as a line of this scenario, which kills its killed phase
        and recovers with its recovering one (an approval agent: killed in approve, recovered by recover); None for
        a variant it leaves out: one whose server runs as a sidecar (only kill-mid-tool starts one,
        plugpull.sidecar; its server=in-run sibling runs the server itself), or one :meth:`aimed_elsewhere`."""
        if source is not None and source.name == self.name:
            return target
        phases = source.kill_and_recover if source is not None else ("start", "resume")
        if not phases:
            raise UsageError(f"target {target.name!r} has no kill-and-resume run (it is a {source.name} target)")
        if target.sidecar or self.aimed_elsewhere(target):
            return None
        return replace(target, scenario=self.name, phases=phases)

    def aimed_elsewhere(self, target: Any) -> bool:
        """A variant aimed at what this scenario does not hold (a save, a sibling call): it runs the same command as
        its plain sibling, so it would be that line again."""
        return bool(target.aim.saves or target.aim.sibling)


@dataclass
class HeldKill:
    """What happened to one phase aimed at a held call: how it ended, and the kill's proof."""

    outcome: Outcome
    proof: KillProof | None = None  # None: no call was ever held
    held_name: str | None = None
    counts_at_kill: dict[str, int] = field(default_factory=dict)
    # --sibling: the other tool's effect call as it stood when SIGKILL was sent (None: none asked for).
    sibling: dict | None = None
    # --save: each asked-for save as it stood when SIGKILL was sent (provider.saves_at_kill); [] for none.
    saves: list[dict] = field(default_factory=list)

    def record(self, ev) -> None:
        """Copy how the killed phase ended onto ``ev`` (any evidence with ``start``, ``proof``, ``held_name``
        and ``counts_at_kill``: kill-mid-tool's, every-boundary's, power-loss's)."""
        ev.start, ev.proof, ev.held_name, ev.counts_at_kill = (
            self.outcome,
            self.proof,
            self.held_name,
            self.counts_at_kill,
        )


def wait_for_held(provider, running: Running, deadline: float) -> None:
    """Until a call is held and stands as asked, the phase exits, or ``deadline`` (monotonic) passes.

    With a sibling asked for, the held call alone is not enough: the fault also waits for the sibling's
    call to be answered ("finished") or held as well ("running"); with saves asked for, for each to be
    withheld (its "before" mark held) or landed (its "after" mark arrived). The phase's processes are
    scanned meanwhile, so what outlives it is known.
    """
    while not (provider.held_event.wait(POLL) and provider.sibling_ready() and provider.saves_ready()):
        running.tracker.scan()
        if running.poll() is not None or time.monotonic() > deadline:
            break
        if provider.held_event.is_set():  # held, the sibling or a save not there yet: do not spin
            time.sleep(POLL)


def kill_at_held_call(channel: Channel, running: Running | Outcome, timeout: float) -> HeldKill:
    """Wait for a held call, the phase's exit, or the timeout; kill the phase's group.

    When a call is held: read the caller's process group from the OS (the caller's pid came
    from SO_PEERCRED), note the call was still held, SIGKILL the group, reap the leader, time
    how long the held connection took to close, and list live group members left behind.
    """
    if isinstance(running, Outcome):
        return HeldKill(outcome=running)
    provider = channel.provider
    wait_for_held(provider, running, time.monotonic() + timeout)
    call = provider.held
    sibling = sibling_at_kill(provider) if call is not None else None
    # Also when nothing was held: a save withheld on the main thread is what stops a run short of its tool.
    saves = provider.saves_at_kill()
    proof, held_name = None, None
    if call is not None:
        # Read by the channel when the call arrived, before the provider could hold it (and so
        # before this kill could be sent): the caller was alive then, whatever happens next.
        caller_group = call.group
        held_open = call.closed_at is None
        # Every process of the phase as it stands, whatever its group: what outlives the kill.
        running.tracker.scan(force=True)
        sent = time.monotonic()
        kill_group(running.pgid)
        running.wait_reaped()
        while call.closed_at is None and time.monotonic() - sent < 2 * checks.CLOSE_AFTER_KILL_LIMIT:
            time.sleep(POLL)
        closed = None if call.closed_at is None else call.closed_at - sent
        proof = KillProof(
            group=running.pgid,
            caller_pid=call.pid,
            caller_group=caller_group,
            held_open_at_kill=held_open,
            closed_after_kill=closed,
            survivors=wait_group_gone(running.pgid),
            accounted=reaper.accountable(),
        )
        held_name = call.name
        if caller_group is not None and caller_group != running.pgid and call.pid:
            # The caller escaped the group (setsid); it is still the target's process, so
            # it goes too: nothing of a target outlives its phase.
            kill_group(caller_group)
    elif running.poll() is None:
        running.outcome.timed_out = True
        kill_group(running.pgid)
        running.wait_reaped()
    kill_group(running.pgid)
    return HeldKill(
        outcome=running.finish(),
        proof=proof,
        held_name=held_name,
        counts_at_kill=provider.counts(),
        sibling=sibling,
        saves=saves,
    )


def sibling_at_kill(provider) -> dict | None:
    """The asked-for sibling as it stood just before SIGKILL: its call (or None) and whether it was ready."""
    if provider.sibling_want is None:
        return None
    name, state = provider.sibling_want
    call = provider.sibling
    return {
        "name": name,
        "state": state,
        "ready": provider.sibling_ready(),
        "call": None if call is None else call.to_dict(),
        "open": call is not None and call.closed_at is None,  # its connection still open at the kill
    }


def wait_group_gone(pgid: int, limit: float = 1.0) -> list[int]:
    """Live members of ``pgid`` still there after up to ``limit`` seconds (SIGKILL is async)."""
    deadline = time.monotonic() + limit
    while True:
        left = live_members(pgid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(POLL)
