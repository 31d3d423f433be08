"""resume-after-approval: a paused run's approval, given elsewhere, twice, by racers, or killed.

A target's tool asks for approval before its side effect (``record_effect`` comes after the
approval). ``COMMAND start`` runs to the pause and exits 0 with no effect; everything after it
happens in new processes that have only the framework's store (docs/agent-protocol.md):

- ``approve-elsewhere``: one ``COMMAND approve``: exactly 1 effect.
- ``double-resume``: ``approve``, then ``approve`` again: the second is refused (exit 3) or a
  no-op, and does not run the tool.
- ``racing-resumers``: N ``approve`` processes (its own option ``--racers``, default 5) released together
  from plugpull's gate: exactly one runs the tool; 1 effect.
- ``killed-before-effect`` / ``killed-after-effect``: ``approve`` is SIGKILLed while the provider
  holds the approved tool's effect call (the held-call kill and proof kill-mid-tool uses), then
  ``COMMAND recover`` must finish the run through the framework's public API: 1 effect.

Every point but approve-elsewhere first needs a fault-free start + approve of the same target to
pass (cached per target and settings): it names the effects a run owes, and without it a
refusal or a crash would prove nothing. Gathers evidence only; the verdicts are
checks.judge_resume_after_approval's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

from plugpull import checks
from plugpull.channel import Channel
from plugpull.evidence import ApprovalEvidence, ApprovalRun, Outcome
from plugpull.process import Running, reaping
from plugpull.results import Result, Verdict
from plugpull.scenarios import Runtime, Settings, make_result, option, result_ignore, settle, target_env, workdir
from plugpull.scenarios.contract import Recovery, Scenario
from plugpull.scenarios.faults import HeldCallKill
from plugpull.scenarios.held_kill import POLL
from plugpull.targets import Target

NAME = "resume-after-approval"
POINTS = ("approve-elsewhere", "double-resume", "racing-resumers", "killed-before-effect", "killed-after-effect")

__all__ = ["NAME", "POINTS", "SCENARIO", "ResumeAfterApproval", "Settings", "run_point"]


def run_point(target: Target, point: str, settings: Settings | None = None, runtime: Runtime | None = None) -> Result:
    """Run resume-after-approval at ``point`` against ``target`` and judge it."""
    if point not in POINTS:
        raise ValueError(f"unknown point {point!r}; known: {', '.join(POINTS)}")
    settings = settings or Settings()
    runtime = runtime or Runtime()
    began = time.monotonic()
    ev = ApprovalEvidence(point=point, start=Outcome(argv=[]), timeout=settings.timeout)
    announced: list[dict] = []
    kept = None
    if point != "approve-elsewhere":
        ev.clean, announced = clean_approval(target, settings, runtime)
        # The clean approval's result is the golden one (approve-elsewhere is that same run: it has
        # nothing to compare with). docs/DECISIONS.md, "Verdicts, evidence and notes".
        ev.golden = list(ev.clean.approvals[0].results) if ev.clean.approvals else []
        ev.result_ignore = result_ignore(target, announced)
    if point == "approve-elsewhere" or checks.check_clean_approval(ev) is None:
        announced, kept = run_faulted(target, point, settings, runtime, ev)
    # A clean approval that already fails (refused, paused again, an effect lost) is one FAIL per target;
    # its other points are moot.
    judgement = settle(
        checks.judge_resume_after_approval(ev),
        runtime,
        clean_key(target, settings),
        point,
        target=target,
    )
    phase = judgement.show
    if not phase and judgement.verdict is Verdict.FAIL:  # the last phase's stderr under every FAIL
        phase = "recover" if ev.recover else "approve"
    return make_result(NAME, target, point, ev.to_dict(), judgement, announced, began, shown(ev, phase), kept)


def shown(ev: ApprovalEvidence, phase: str) -> Outcome | None:
    """The process whose output belongs under the line."""
    if phase == "start":
        return ev.start
    if phase == "clean":
        return ev.clean.approvals[-1].outcome if ev.clean is not None and ev.clean.approvals else None
    if phase == "recover":
        return ev.recover.outcome if ev.recover else None
    if phase == "approve" and ev.approvals:
        crashed = [r for r in ev.approvals if r.outcome.returncode not in (0, checks.REFUSED_EXIT)]
        ran = [r for r in ev.approvals if r.effect_calls]
        return (crashed or ran or ev.approvals)[-1].outcome
    return None


def clean_approval(target: Target, settings: Settings, runtime: Runtime) -> tuple[ApprovalEvidence, list[dict]]:
    """start + approve with no fault, once per target and settings (repeats and points share it)."""

    def run_clean() -> tuple[ApprovalEvidence, list[dict]]:
        clean = ApprovalEvidence(point="approve-elsewhere", start=Outcome(argv=[]), timeout=settings.timeout)
        announced, _ = run_faulted(target, "approve-elsewhere", replace(settings, keep_workdir=False), runtime, clean)
        return clean, announced

    return runtime.once(clean_key(target, settings), run_clean)


def clean_key(target: Target, settings: Settings) -> tuple:
    """What the clean approval depends on: the target and the settings it runs with."""
    return (NAME, target.argv, settings.cwd, settings.timeout)


def run_faulted(
    target: Target, point: str, settings: Settings, runtime: Runtime, ev: ApprovalEvidence
) -> tuple[list[dict], Path | None]:
    """Run start to its pause, then the point's approvals (and recover); fill ``ev``."""
    with workdir(settings) as path, Channel() as channel, reaping() as spawned:

        def spawn(phase: str) -> Running | Outcome:
            running = runtime.spawn([*target.argv, phase], env=env, cwd=settings.cwd)
            spawned.append(running)
            return running

        def finish(running: Running | Outcome, timeout: float | None = None) -> ApprovalRun:
            outcome = (
                running
                if isinstance(running, Outcome)
                else running.wait(settings.timeout if timeout is None else timeout)
            )
            return ApprovalRun(
                outcome=outcome, effect_calls=calls_from(channel, running), results=results_from(channel, running)
            )

        env = target_env(channel, path)
        channel.phase = "start"
        ev.start = finish(spawn("start")).outcome
        ev.start_calls = len(channel.provider.calls)
        if checks.check_paused(ev) is None:
            if point == "approve-elsewhere":
                channel.phase = "approve"
                ev.approvals = [finish(spawn("approve"))]
            elif point == "double-resume":
                channel.phase = "approve-1"
                ev.approvals = [finish(spawn("approve"))]
                ev.counts_after_first = channel.provider.counts()
                channel.phase = "approve-2"
                ev.approvals.append(finish(spawn("approve")))
            elif point == "racing-resumers":
                race(channel, spawn, finish, ev, settings)
            else:
                killed_approval(channel, spawn, finish, ev, point.removeprefix("killed-"), settings)
        ev.counts = channel.provider.counts()
        ev.calls = [c.to_dict() for c in channel.provider.calls]
        return list(channel.announced), (path if settings.keep_workdir else None)


def results_from(channel: Channel, running: Running | Outcome) -> list:
    """record_result values reported from ``running``'s process group."""
    if isinstance(running, Outcome):
        return []
    return channel.results_of(group=running.pgid)


def calls_from(channel: Channel, running: Running | Outcome) -> int:
    """record_effect calls made from ``running``'s process group (its tool ran)."""
    if isinstance(running, Outcome):
        return 0
    return sum(1 for c in channel.provider.calls if c.group == running.pgid)


def race(channel: Channel, spawn, finish, ev: ApprovalEvidence, settings: Settings) -> None:
    """Start N approvers; open the gate when all N wait at it (or when no one else can come)."""
    n = ev.racers = SCENARIO.own(settings).racers
    channel.phase = "race"
    channel.gate.arm(n)
    racers = [spawn("approve") for _ in range(n)]
    deadline = time.monotonic() + settings.timeout
    while channel.gate.released_with is None:
        alive = sum(1 for r in racers if isinstance(r, Running) and r.poll() is None)
        # Everyone still alive is waiting at the gate and no one else will come: give up.
        if alive <= channel.gate.count() or time.monotonic() > deadline:
            channel.gate.release()
            break
        time.sleep(POLL)
    ev.gated = channel.gate.released_with
    remaining = max(1.0, deadline - time.monotonic())
    ev.approvals = [finish(r, remaining) for r in racers]
    ev.racer_outcomes = checks.racer_outcomes(ev)


def killed_approval(channel: Channel, spawn, finish, ev: ApprovalEvidence, kill_point: str, settings: Settings) -> None:
    """approve with the provider holding the tool's effect call at ``kill_point``; kill; recover."""
    channel.phase = "approve"
    fault = HeldCallKill(kill_point, hold=settings.aim.hold)
    fault.arm(channel.provider)
    running = spawn("approve")
    killed = fault.strike(channel, running, settings.timeout)
    ev.approvals = [ApprovalRun(outcome=killed.outcome, effect_calls=calls_from(channel, running))]
    ev.proof, ev.held_name = killed.proof, killed.held_name
    if (
        checks.prove_held_kill(
            "approve", killed.outcome, killed.proof, bool(channel.provider.calls), kill_point, settings.timeout
        )
        is None
    ):
        channel.provider.arm(None)
        channel.phase = "recover"
        ev.recover = finish(spawn("recover"))


@dataclass(frozen=True)
class Options:
    """resume-after-approval's own options (``--racers N``; a notebook's ``racers`` parameter)."""

    racers: int = option(5, "--racers", "racing-resumers: approvers released at once", least=2)


class ResumeAfterApproval(Scenario):
    name = NAME
    points = POINTS
    phases = ("start", "approve", "recover")
    fault = (
        "the paused run's approval given in new processes: elsewhere, twice, by racers, or killed mid-effect "
        "(SIGKILL while the provider holds the approved tool's effect call)"
    )
    faults = (HeldCallKill,)  # the killed-* points
    Options = Options
    # every-boundary kills an approval agent in approve, after start paused it, and recover finishes the run.
    kill_and_recover = ("start", "approve", "recover")
    recovery = {
        "approve-elsewhere": Recovery("approve", "approve"),
        "double-resume": Recovery("approve-2", "the second approve"),
        "racing-resumers": Recovery("race", "the racing approvers"),
        "*": Recovery("recover", "recover"),
    }
    evidence = ApprovalEvidence
    checks = (checks.judge_resume_after_approval,)

    line = staticmethod(run_point)


SCENARIO = ResumeAfterApproval()
