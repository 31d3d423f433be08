"""kill-mid-tool: SIGKILL the agent's process group while its tool is inside an effect call.

For one kill point: run ``COMMAND start`` with the provider armed to hold the first
``record_effect`` call, or the one ``--hold`` names (``before-effect``: unrecorded;
``after-effect``: recorded, reply held); when the call is held, read the caller's process group from the OS, SIGKILL
start's group, wait for the held connection to close; then run ``COMMAND resume`` with
the provider answering every call, and count effects. Gathers evidence only; the
verdict is checks.judge_kill_mid_tool's.

With ``--save NAME:N:STATE`` the kill is also aimed at a save the target marks with
``plugpull.boundary`` (a checkpoint written by a background thread races the kill): "withheld"
holds that save's "before" mark unanswered until the kill, "landed" waits for its "after" mark
before the kill. checks.prove_saves turns a save not in that state at the kill into ERROR.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from plugpull import checks, sidecar
from plugpull.channel import Channel
from plugpull.client import BOUNDARIES_ENV
from plugpull.evidence import CleanRun, KillEvidence, Outcome
from plugpull.process import Running, reaping
from plugpull.provider import POINTS
from plugpull.results import Result
from plugpull.scenarios import Runtime, Settings, make_result, result_ignore, settle, steps, target_env, workdir
from plugpull.scenarios.contract import Recovery, Scenario
from plugpull.scenarios.faults import HeldCallKill
from plugpull.targets import Target

NAME = "kill-mid-tool"

__all__ = ["NAME", "POINTS", "SCENARIO", "KillMidTool", "Settings", "run_point"]


def run_start(
    channel: Channel, running: Running | Outcome, ev: KillEvidence, timeout: float, fault: HeldCallKill
) -> None:
    """Wait for the held call, start's exit, or the timeout; kill start's group; fill ``ev``."""
    killed = fault.strike(channel, running, timeout)
    killed.record(ev)
    ev.sibling, ev.saves = killed.sibling, killed.saves


def clean_run(target: Target, settings: Settings, runtime: Runtime) -> CleanRun:
    """``COMMAND start`` once with every call answered and no kill (once per target and settings).

    It says which effects a whole run owes, and nothing about the crash.
    """
    return runtime.once(clean_key(target, settings), lambda: run_clean(target, settings, runtime))


def clean_key(target: Target, settings: Settings) -> tuple:
    """What the clean run depends on: the target and the settings it runs with."""
    return ("clean", target.argv, settings.cwd, settings.timeout)


def run_clean(target: Target, settings: Settings, runtime: Runtime) -> CleanRun:
    with workdir(replace(settings, keep_workdir=False)) as path, Channel() as channel, reaping() as spawned:
        channel.phase = "clean"
        env = target_env(channel, path)
        with sidecar.running(sidecar_argv(target), env, settings.cwd, settings.timeout):
            running = runtime.spawn([*target.argv, "start"], env=env, cwd=settings.cwd)
            spawned.append(running)
            outcome = running if isinstance(running, Outcome) else running.wait(settings.timeout)
            clean = CleanRun(
                start=outcome,
                counts=channel.provider.counts(),
                calls=len(channel.provider.calls),
                announced=list(channel.announced),
                results=channel.results_of("clean"),
                trace=[{**c.to_dict(), "kind": c.kind} for c in channel.provider.calls if c.phase == "clean"],
            )
            # The finished run's resume meets the same sidecar (a Restate server) its start did.
            resume_finished(clean, target, settings, runtime, channel, env, spawned)
        return clean


def resume_finished(
    clean: CleanRun,
    target: Target,
    settings: Settings,
    runtime: Runtime,
    channel: Channel,
    env: dict[str, str],
    spawned: list,
) -> None:
    """Check the recovery protocol first: ``COMMAND resume`` on the state the finished clean run left.

    The documented no-op (docs/agent-protocol.md): it must exit 0, report the result again and ask
    for no new effect (checks.check_finished_resume). Run only when the clean run finished and the
    target recovers with ``resume`` (an approval agent's ``recover`` continues a killed approval).
    """
    start = clean.start
    if start.returncode != 0 or start.timed_out or start.outlived or target.phases[-1] != "resume":
        return
    before = channel.provider.counts()
    channel.phase = "clean-resume"
    running = runtime.spawn([*target.argv, "resume"], env=env, cwd=settings.cwd)
    spawned.append(running)
    clean.finished_resume = running if isinstance(running, Outcome) else running.wait(settings.timeout)
    clean.finished_results = channel.results_of("clean-resume")
    after = channel.provider.counts()
    clean.finished_effects = {n: c - before.get(n, 0) for n, c in after.items() if c > before.get(n, 0)}


def run_point(target: Target, point: str, settings: Settings | None = None, runtime: Runtime | None = None) -> Result:
    """Run kill-mid-tool at ``point`` against ``target`` and judge it."""
    if point not in POINTS:
        raise ValueError(f"unknown point {point!r}; known: {', '.join(POINTS)}")
    settings = settings or Settings()
    runtime = runtime or Runtime()
    # A sibling target's own hold and sibling state (--hold/--sibling replace both), an aimed target's own saves
    # (--save replaces them).
    settings = replace(settings, aim=settings.aim.over(target.aim))
    began = time.monotonic()
    ev = KillEvidence(**steps.killed_line(point, settings), **steps.held_specs(settings, KillEvidence))
    ev.clean = clean_run(target, settings, runtime)
    ev.effect_calls = ev.clean.effect_calls()
    ev.golden = list(ev.clean.results)
    ev.result_ignore = result_ignore(target, ev.clean.announced)
    announced, kept = list(ev.clean.announced), None
    if checks.check_clean_run(ev) is None:
        announced, kept = run_faulted(target, point, settings, runtime, ev)
    judgement = settle(
        checks.judge_kill_mid_tool(ev), runtime, (NAME, *clean_key(target, settings)), point, target=target
    )
    shown = steps.shown_outcome(judgement, ev)
    return make_result(NAME, target, point, ev.to_dict(), judgement, announced, began, shown, kept)


def run_faulted(
    target: Target,
    point: str,
    settings: Settings,
    runtime: Runtime,
    ev: KillEvidence,
    resume_argv: tuple[str, ...] = (),
) -> tuple[list[dict], Path | None]:
    """Start with the provider armed at ``point``, kill, resume if the kill is proven; fill ``ev``.

    ``resume_argv`` resumes with another command in the same workdir (resume-after-upgrade: release B);
    by default the target's own command resumes."""
    with workdir(settings) as path, Channel() as channel, reaping() as spawned:
        env = target_env(channel, path)
        # A server the kill spares (Target.sidecar): up before start, stopped after resume.
        with sidecar.running(sidecar_argv(target), env, settings.cwd, settings.timeout):
            channel.phase = "start"
            fault = HeldCallKill.aimed(point, settings.aim)
            fault.arm(channel.provider)
            # A save is seen only through the target's boundary marks, which it sends only when asked to
            # (client.BOUNDARIES_ENV): only start, the phase whose saves are held or waited for.
            start_env = {**env, BOUNDARIES_ENV: "1"} if settings.aim.saves else env
            started = runtime.spawn([*target.argv, "start"], env=start_env, cwd=settings.cwd)
            spawned.append(started)
            run_start(channel, started, ev, settings.timeout, fault)
            if fault.proven(ev) is None:
                channel.provider.arm(None)
                argv = [*(resume_argv or target.argv), "resume"]
                ev.resume = steps.run_to_end(runtime, argv, "resume", channel, env, settings, spawned)
                ev.resumed = channel.results_of("resume")
            steps.count_effects(ev, channel)
        return list(channel.announced), (path if settings.keep_workdir else None)


def sidecar_argv(target: Target) -> list[str] | None:
    """The command of the target's sidecar (``COMMAND serve``), or None."""
    return [*target.argv, target.sidecar] if target.sidecar else None


class KillMidTool(Scenario):
    name = NAME
    points = POINTS
    fault = "SIGKILL of start's process group while the provider holds an effect call (before or after recording it)"
    faults = (HeldCallKill,)
    # --sibling: another tool call of the same model turn; --save: saves the kill is aimed at.
    # --hold repeated and --first-effect: which effect calls the lines hold.
    options = frozenset({"sibling", "saves", "holds", "every_effect"})
    kill_and_recover = ("start", "resume")
    recovery = {"*": Recovery("resume", "resume")}
    evidence = KillEvidence
    checks = (checks.judge_kill_mid_tool,)

    def run(self, target: Target, point: str, settings: Settings, runtime: Runtime) -> list[Result]:
        point, _, held = point.partition(" ")
        if held:  # a line of expand(): "after-effect charge_card:2" holds that call
            name, _, nth = held.rpartition(":")
            settings = settings.aimed(hold=(name, int(nth)), holds=())
        return [run_point(target, point, settings, runtime)]

    def expand(self, target: Target, points, settings: Settings, runtime: Runtime) -> list[str]:
        """One line per held call and point: "before-effect charge_card:1", ....

        The calls are the repeated ``--hold``s, or without ``--hold`` (``settings.aim.every_effect``)
        each effect call of the clean run in order; each call's lines come together, before then
        after. A target aimed at one call (its own hold, a sibling, saves placed around its first
        call) and a clean run with one effect call keep one line per point.
        """
        calls = held_calls(target, settings, runtime)
        if not calls:
            return list(points)
        return [f"{point} {name}:{nth}" for name, nth in calls for point in points]


def held_calls(target: Target, settings: Settings, runtime: Runtime) -> list[tuple[str, int]]:
    """The calls ``expand`` makes lines for: (NAME, N) each; [] for the points as they are."""
    if len(settings.aim.holds) > 1:
        return list(settings.aim.holds)
    aimed = (
        settings.aim.hold
        or settings.aim.holds
        or target.aim.hold
        or settings.aim.sibling
        or settings.aim.saves
        or target.aim.saves
    )
    if aimed or not settings.aim.every_effect:
        return []
    clean = clean_run(target, settings, runtime)
    if (
        checks.check_clean_run(KillEvidence(point="", start=Outcome(argv=[]), clean=clean, golden=list(clean.results)))
        is not None
    ):
        return []  # every line reports why (the clean run failed, or its resume is no no-op)
    calls = [tuple(label.rsplit("#", 1)) for label in clean.effect_calls()]
    return [(name, int(nth)) for name, nth in calls] if len(calls) > 1 else []


SCENARIO = KillMidTool()
