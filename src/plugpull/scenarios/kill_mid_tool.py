"""kill-mid-tool: SIGKILL the agent's process group while its tool is inside an effect call.

For one kill point: run ``COMMAND start`` with the provider armed to hold the first
``record_effect`` call (``before-effect``: unrecorded; ``after-effect``: recorded, reply
held); when the call is held, read the caller's process group from the OS, SIGKILL
start's group, wait for the held connection to close; then run ``COMMAND resume`` with
the provider answering every call, and count effects. Gathers evidence only; the
verdict is checks.judge_kill_mid_tool's.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from plugpull import checks
from plugpull.channel import Channel
from plugpull.evidence import CleanRun, KillEvidence, KillProof
from plugpull.process import Outcome, Running, group_of, kill_group, live_members
from plugpull.provider import POINTS
from plugpull.results import Result
from plugpull.scenarios import Settings, make_result, target_env, workdir
from plugpull.targets import Target

NAME = "kill-mid-tool"
POLL = 0.01

__all__ = ["NAME", "POINTS", "Settings", "run", "run_point"]

def run_start(channel: Channel, running: Running | Outcome, ev: KillEvidence, timeout: float) -> None:
    """Wait for a held call, start's exit, or the timeout; kill start's group; fill ``ev``."""
    if isinstance(running, Outcome):
        ev.start = running
        return
    provider = channel.provider
    deadline = time.monotonic() + timeout
    while not provider.held_event.wait(POLL):
        if running.poll() is not None or time.monotonic() > deadline:
            break
    call = provider.held
    if call is not None:
        caller_group = group_of(call.pid) if call.pid else None
        held_open = call.closed_at is None
        sent = time.monotonic()
        kill_group(running.pgid)
        running.wait_reaped()
        while call.closed_at is None and time.monotonic() - sent < 2 * checks.CLOSE_AFTER_KILL_LIMIT:
            time.sleep(POLL)
        closed = None if call.closed_at is None else call.closed_at - sent
        ev.proof = KillProof(
            group=running.pgid,
            caller_pid=call.pid,
            caller_group=caller_group,
            held_open_at_kill=held_open,
            closed_after_kill=closed,
            survivors=wait_group_gone(running.pgid),
        )
        ev.held_name = call.name
        if caller_group is not None and caller_group != running.pgid and call.pid:
            # The caller escaped the group (setsid); it is still the target's process, so
            # it goes too: nothing of a target outlives its phase.
            kill_group(caller_group)
    elif running.poll() is None:
        running.outcome.timed_out = True
        kill_group(running.pgid)
        running.wait_reaped()
    kill_group(running.pgid)
    ev.start = running.finish()
    ev.counts_at_kill = provider.counts()


def wait_group_gone(pgid: int, limit: float = 1.0) -> list[int]:
    """Live members of ``pgid`` still there after up to ``limit`` seconds (SIGKILL is async)."""
    deadline = time.monotonic() + limit
    while True:
        left = live_members(pgid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(POLL)


def run(target: Target, points: list[str], settings: Settings) -> list[Result]:
    return [run_point(target, point, settings) for point in points]


def clean_run(target: Target, settings: Settings) -> CleanRun:
    """``COMMAND start`` once with every call answered and no kill (once per target and settings).

    It says which effects a whole run owes, and nothing about the crash.
    """
    return settings.once(("clean", target.argv, settings.cwd), lambda: run_clean(target, settings))


def run_clean(target: Target, settings: Settings) -> CleanRun:
    with workdir(replace(settings, keep_workdir=False)) as path, Channel() as channel:
        channel.phase = "clean"
        running = settings.spawn([*target.argv, "start"], env=target_env(channel, path), cwd=settings.cwd)
        outcome = running if isinstance(running, Outcome) else running.wait(settings.timeout)
        return CleanRun(start=outcome, counts=channel.provider.counts(), calls=len(channel.provider.calls),
                        announced=list(channel.announced))


def run_point(target: Target, point: str, settings: Settings | None = None) -> Result:
    """Run kill-mid-tool at ``point`` against ``target`` and judge it."""
    if point not in POINTS:
        raise ValueError(f"unknown point {point!r}; known: {', '.join(POINTS)}")
    settings = settings or Settings()
    began = time.monotonic()
    ev = KillEvidence(point=point, start=Outcome(argv=[]), start_timeout=settings.timeout, resume_timeout=settings.timeout)
    ev.clean = clean_run(target, settings)
    announced, kept = list(ev.clean.announced), None
    if checks.check_clean_run(ev) is None:
        announced, kept = run_faulted(target, point, settings, ev)
    judgement = checks.judge_kill_mid_tool(ev)
    shown = {"clean": ev.clean.start, "start": ev.start, "resume": ev.resume}.get(judgement.show)
    return make_result(NAME, target, point, ev.to_dict(), judgement, announced, began, shown, kept)


def run_faulted(target: Target, point: str, settings: Settings, ev: KillEvidence) -> tuple[list[dict], Path | None]:
    """Start with the provider armed at ``point``, kill, resume if the kill is proven; fill ``ev``."""
    spawned: list[Running | Outcome] = []
    try:
        with workdir(settings) as path, Channel() as channel:
            env = target_env(channel, path)
            channel.phase = "start"
            channel.provider.arm(point)
            started = settings.spawn([*target.argv, "start"], env=env, cwd=settings.cwd)
            spawned.append(started)
            run_start(channel, started, ev, settings.timeout)
            if checks.prove_kill(ev) is None:
                channel.provider.arm(None)
                channel.phase = "resume"
                resumed = settings.spawn([*target.argv, "resume"], env=env, cwd=settings.cwd)
                spawned.append(resumed)
                ev.resume = resumed if isinstance(resumed, Outcome) else resumed.wait(settings.timeout)
            ev.counts = channel.provider.counts()
            ev.calls = [c.to_dict() for c in channel.provider.calls]
            return list(channel.announced), (path if settings.keep_workdir else None)
    finally:
        # On an interrupt (or a harness bug) nothing of the target may outlive the run.
        for running in spawned:
            if isinstance(running, Running) and running.poll() is None:
                running.kill()
