"""every-boundary: kill a run at every boundary of its clean run, before and after each, and resume.

The clean run (``COMMAND start`` with nothing held) lists the run's boundaries: its effect calls
and the steps it marks with ``plugpull.boundary(name)`` (plugpull.boundaries). Each line arms the
provider to hold one side of one boundary, proves the SIGKILL landed there exactly as kill-mid-tool
does (scenarios.held_kill), runs ``COMMAND resume`` and judges it against the golden run
(checks.judge_every_boundary). Points:

- ``before`` / ``after``: one kill at that side of each boundary;
- ``before-twice`` / ``after-twice``: a double crash: resume is killed at the same boundary (its first
  step of that kind and name, on the same side), then resumed again;
- ``random``: ``--random-kills N`` kills, each at a uniformly random moment of the clean run's window
  from its first to its last boundary, drawn from ``--seed`` (replayable), with where it landed among
  the boundaries and the aimed kill that leaves the run the same way.

A point is expanded into one line per boundary (``expand``) before lines are dispatched, so
``-j`` and the fork server spread the map like any other lines.
"""

from __future__ import annotations

import random
import shlex
import time
from dataclasses import replace
from pathlib import Path

from plugpull import boundaries, checks
from plugpull.channel import Channel
from plugpull.errors import UsageError
from plugpull.evidence import BoundaryEvidence, CleanRun, KillProof, Outcome
from plugpull.process import Running, kill_group, reaping
from plugpull.results import Result
from plugpull.scenarios import Runtime, Settings, make_result, result_ignore, settle, steps, target_env, workdir
from plugpull.scenarios.faults import BoundaryKill
from plugpull.scenarios.held_kill import KillAndRecover, wait_group_gone
from plugpull.scenarios.kill_mid_tool import resume_finished
from plugpull.targets import Target

NAME = "every-boundary"
POINTS = ("before", "after", "before-twice", "after-twice", "random")
#: What runs without --point: one kill at each side of each boundary.
DEFAULT_POINTS = ("before", "after")

__all__ = ["DEFAULT_POINTS", "NAME", "POINTS", "SCENARIO", "EveryBoundary", "expand", "run_point"]


def expand(target: Target, points: list[str], settings: Settings, runtime: Runtime | None = None) -> list[str]:
    """The lines of ``points`` for ``target``: "after model-call 2" for each boundary, "random 3" per random kill.

    Runs the clean run (shared, once per target). When it failed, or ``--boundary`` matched no
    boundary, the points stay as they are and each line reports that ERROR.
    """
    clean = clean_of(target, settings, runtime or Runtime())
    steps, unmatched = boundaries.selected(boundaries.steps_of(clean.trace), list(settings.aim.boundaries))
    lines: list[str] = []
    aimed = [p for p in points if p != "random"]
    if aimed:
        if not steps or unmatched:
            lines.extend(aimed)
        else:
            lines.extend(f"{p} {s.label}" for s in steps for p in aimed)
    if "random" in points:
        lines.extend(f"random {i}" for i in range(1, max(settings.aim.random_kills, 1) + 1))
    return lines


def run_point(target: Target, point: str, settings: Settings | None = None, runtime: Runtime | None = None) -> Result:
    """One every-boundary line: ``point`` is "SIDE LABEL" (e.g. "after-twice model-call 2") or "random N"."""
    settings = settings or Settings()
    runtime = runtime or Runtime()
    began = time.monotonic()
    side, _, label = point.partition(" ")
    ev = BoundaryEvidence(
        **steps.killed_line(point, settings),
        side=side.removesuffix("-twice"),
        twice=side.endswith("-twice"),
    )
    ev.clean = clean_of(target, settings, runtime)
    ev.golden = list(ev.clean.results)
    ev.result_ignore = result_ignore(target, ev.clean.announced)
    marked = boundaries.steps_of(ev.clean.trace)
    announced, kept = list(ev.clean.announced), None
    problem = checks.check_clean_run(ev)
    step = next((s for s in marked if s.label == label), None)
    if problem is None and side != "random" and step is None:
        problem = _unmatched(point, settings, marked)
    if problem is None:
        if step is not None:
            ev.boundary = {**step.to_dict(), "of": len(marked)}
        announced, kept = run_faulted(target, step, settings, runtime, ev)
        problem = checks.judge_every_boundary(ev)
    problem = settle(problem, runtime, (NAME, *clean_key(target, settings)), point, target=target)
    shown = steps.shown_outcome(problem, ev, more={"final": ev.final})
    return make_result(NAME, target, point, ev.to_dict(), problem, announced, began, shown, kept)


def clean_of(target: Target, settings: Settings, runtime: Runtime | None = None) -> CleanRun:
    """The clean run with boundary marks on (once per target): the phases before the killed one, then that one."""
    runtime = runtime or Runtime()
    return runtime.once(clean_key(target, settings), lambda: _run_clean(target, settings, runtime))


def clean_key(target: Target, settings: Settings) -> tuple:
    """What the clean run depends on: the target (its phases too) and the settings it runs with."""
    return ("every-boundary-clean", target.argv, target.phases, settings.cwd, settings.timeout)


def _run_clean(target: Target, settings: Settings, runtime: Runtime) -> CleanRun:
    """Every phase before the killed one, then the killed one with nothing held: its trace, effects, result."""
    with workdir(replace(settings, keep_workdir=False)) as path, Channel() as channel, reaping() as spawned:
        env = marked_env(channel, path)
        prelude = run_prelude(target, settings, runtime, channel, env, spawned, "clean-")
        if prelude is not None:
            return CleanRun(start=prelude, phase=target.phases[0])
        channel.phase = "clean"
        spawned_at = time.monotonic()
        running = runtime.spawn([*target.argv, target.phases[-2]], env=env, cwd=settings.cwd)
        spawned.append(running)
        outcome = running if isinstance(running, Outcome) else running.wait(settings.timeout)
        trace = [c for c in channel.provider.trace() if c.phase == "clean"]
        clean = CleanRun(
            trace=[{**c.to_dict(), "kind": c.kind, "edge": c.edge, "t": round(c.at - spawned_at, 6)} for c in trace],
            start=outcome,
            counts=channel.provider.counts(),
            calls=len(channel.provider.calls),
            announced=list(channel.announced),
            results=channel.results_of("clean"),
            phase=target.phases[-2],
        )
        resume_finished(clean, target, settings, runtime, channel, env, spawned)
        return clean


def marked_env(channel: Channel, path: Path) -> dict[str, str]:
    """The target's environment with boundary marks turned on (client.BOUNDARIES_ENV)."""
    from plugpull.client import BOUNDARIES_ENV

    return {**target_env(channel, path), BOUNDARIES_ENV: "1"}


def run_prelude(
    target: Target, settings: Settings, runtime: Runtime, channel: Channel, env: dict, spawned: list, prefix: str = ""
) -> Outcome | None:
    """Run the phases before the killed one (an approval agent's ``start``); the first that fails, else None."""
    for phase in target.phases[:-2]:
        channel.phase = prefix + phase
        running = runtime.spawn([*target.argv, phase], env=env, cwd=settings.cwd)
        spawned.append(running)
        outcome = running if isinstance(running, Outcome) else running.wait(settings.timeout)
        if outcome.returncode != 0 or outcome.timed_out or outcome.outlived:
            outcome.stderr = f"{outcome.stderr}\n(the {phase} before the killed phase failed)"
            return outcome
    return None


def _unmatched(point: str, settings: Settings, steps: list[boundaries.Step]) -> checks.Judgement:
    listed = ", ".join(s.label for s in steps[:12]) + (" ..." if len(steps) > 12 else "")
    if not steps:
        return checks.error("the clean run passed no boundary (no record_effect, no plugpull.boundary)", show="clean")
    if settings.aim.boundaries:
        return checks.error(
            f"--boundary {', '.join(settings.aim.boundaries)} matched no boundary of the clean run: {listed}", show=""
        )
    return checks.error(f"{point}: no such boundary in the clean run: {listed}", show="")


def run_faulted(
    target: Target, step: boundaries.Step | None, settings: Settings, runtime: Runtime, ev: BoundaryEvidence
) -> tuple[list[dict], Path | None]:
    """Start armed at the step's side (or killed at a random moment), resume; again for a double crash."""
    with workdir(settings) as path, Channel() as channel, reaping() as spawned:
        env = marked_env(channel, path)
        failed = run_prelude(target, settings, runtime, channel, env, spawned)
        if failed is not None:
            ev.start = failed
            return list(channel.announced), None
        killed_phase, recovery = target.phases[-2], target.phases[-1]
        ev.recovery = recovery
        channel.phase = "start"
        spawned_at = time.monotonic()
        fault = None if step is None else BoundaryKill(step, ev.side)
        if fault is not None:
            fault.arm(channel.provider)
        started = runtime.spawn([*target.argv, killed_phase], env=env, cwd=settings.cwd)
        spawned.append(started)
        if fault is not None:
            killed = fault.strike(channel, started, settings.timeout)
            killed.record(ev)
        else:
            kill_at_random(channel, started, ev, settings, spawned_at, int(ev.point.split()[-1]))
            ev.aimed = aimed_command(target, ev.aimed_at)
        if checks.prove_boundary_kill(ev) is None:
            channel.provider.arm(None)
            again = None if step is None or not ev.twice else replace(fault, step=replace(step, n=1))
            if again is not None:
                # The same boundary in resume: its first step of that kind and name. Resume numbers
                # its steps from 1 and skips what the checkpoint holds, so the clean run's "model-call
                # 2" is usually resume's first model call (docs/DECISIONS.md,
                # "Every boundary and aimed saves").
                again.arm(channel.provider)
            resumed = steps.spawn_phase(runtime, [*target.argv, recovery], "resume", channel, env, settings, spawned)
            if again is not None:
                second = again.strike(channel, resumed, settings.timeout)
                ev.resume, ev.second_proof = second.outcome, second.proof
                ev.second_reached = second.proof is not None
                channel.provider.arm(None)
                if (
                    second.proof is not None
                    and checks.prove_held_kill("resume", ev.resume, ev.second_proof, True, ev.point, settings.timeout)
                    is None
                ):
                    ev.final = steps.run_to_end(
                        runtime, [*target.argv, recovery], "final", channel, env, settings, spawned
                    )
                    ev.final_results = channel.results_of("final")
            else:
                ev.resume = steps.finished(resumed, settings)
            ev.resumed = channel.results_of("resume")
        steps.count_effects(ev, channel)
        return list(channel.announced), (path if settings.keep_workdir else None)


def draw_kill(seed: int | None, kill: int, clean: list[dict]) -> dict | None:
    """Random kill number ``kill`` of ``seed``: a moment uniform in the clean run's boundary window.

    The window runs from the clean run's first boundary to its last, so no kill lands in the
    imports before the run. The moment is aimed as an offset after the last boundary
    before it (its ``anchor``, the N-th call of the run), so a faulted run that starts slower is
    still killed at the same place. Each kill draws from its own ``Random(f"{seed}:{kill}")``: the
    same seed gives the same kills whatever order -j runs them in. None: the clean run passed no
    boundary. ``seed`` None draws from the system's randomness.
    """
    edges = boundaries.edges_of(clean)
    if not edges:
        return None
    fraction = (random.Random(f"{seed}:{kill}") if seed is not None else random.SystemRandom()).random()
    first, last = edges[0][0], edges[-1][0]
    moment = first + fraction * (last - first)
    anchor = max(i for i, (t, _) in enumerate(edges) if t <= moment)
    return {
        "seed": seed,
        "kill": kill,
        "fraction": round(fraction, 6),
        "window": [round(first, 6), round(last, 6)],
        "moment": round(moment, 6),
        "anchor": anchor + 1,
        "anchor_edge": edges[anchor][1],
        "offset": round(moment - edges[anchor][0], 6),
    }


def kill_at_random(
    channel: Channel,
    running: Running | Outcome,
    ev: BoundaryEvidence,
    settings: Settings,
    spawned_at: float,
    kill: int = 1,
) -> None:
    """SIGKILL start's group at drawn kill ``kill``: ``offset`` seconds after its anchor call arrives; note where."""
    if isinstance(running, Outcome):
        ev.start = running
        return
    ev.killed_at = None
    drawn = draw_kill(settings.aim.seed, kill, ev.clean.trace)
    ev.boundary = drawn
    deadline = time.monotonic() + settings.timeout
    anchored_at = None
    while drawn is not None and time.monotonic() < deadline:
        running.tracker.scan()
        if running.poll() is not None:
            break
        if anchored_at is None:
            mine = [c for c in channel.provider.trace() if c.phase == "start"]
            if len(mine) >= drawn["anchor"]:
                anchored_at = mine[drawn["anchor"] - 1].at
        if anchored_at is not None and time.monotonic() >= anchored_at + drawn["offset"]:
            break
        time.sleep(0.002)
    if running.poll() is None:
        running.tracker.scan(force=True)
        ev.killed_at = round(time.monotonic() - spawned_at, 6)
        kill_group(running.pgid)
        running.wait_reaped()
        survivors = wait_group_gone(running.pgid)
        ev.proof = KillProof(
            group=running.pgid,
            caller_pid=None,
            caller_group=None,
            held_open_at_kill=False,
            closed_after_kill=None,
            survivors=survivors,
        )
    kill_group(running.pgid)
    ev.start = running.finish()
    if ev.killed_at is not None and ev.start.returncode == 0:
        # It exited on its own between the last look and the SIGKILL: nothing was killed.
        ev.killed_at, ev.proof = None, None
    trace = [
        {**c.to_dict(), "kind": c.kind, "edge": c.edge, "t": c.at - spawned_at}
        for c in channel.provider.trace()
        if c.phase == "start"
    ]
    ev.landed = boundaries.landing(trace, ev.killed_at, ev.clean.trace)
    ev.aimed_at = boundaries.aimed_kill(trace, ev.killed_at, ev.clean.trace)


def aimed_command(target: Target, aimed: tuple[str, str] | None) -> str | None:
    """The plugpull command that kills at ``aimed`` (label, side) alone, for a random kill's FAIL line."""
    if aimed is None:
        return None
    label, side = aimed
    which = f"--agent {shlex.quote(shlex.join(target.argv))}" if target.name == "agent" else f"--target {target.name}"
    return f"plugpull {which} --scenario {NAME} --boundary {shlex.quote(label)} --point {side}"


class EveryBoundary(KillAndRecover):
    name = NAME
    points = POINTS
    default_points = DEFAULT_POINTS
    fault = (
        "SIGKILL at each boundary of the clean run (each effect call and plugpull.boundary mark), before or after it"
    )
    # A random kill (--random-kills) lands at a moment of the boundary window, not at a held step: kill_at_random.
    faults = (BoundaryKill,)
    options = frozenset({"boundaries", "random_kills", "seed"})
    refuses = {
        "hold": "it holds every boundary in turn; use --boundary",
        "sibling": "it applies to kill-mid-tool",
        "saves": "it holds every boundary in turn; use --boundary",
        "holds": "it holds every boundary in turn; use --boundary",
        "every_effect": "it kills at every boundary in turn",
    }
    selected_by = ("random_kills",)
    #: Their agents mark their model calls and checkpoint saves with plugpull.boundary.
    default_targets = ("langgraph", "agent-framework", "openai-agents-approval", "fastaiagent")
    evidence = BoundaryEvidence
    checks = (checks.judge_every_boundary,)
    # A finding with a ``boundaries`` parameter is a boundary map (findings/boundary-map): many short lines, run
    # through the fork server ``jobs`` at a time, shown as a timeline of the clean run's boundaries.
    finding_parameter = "boundaries"
    views = ("boundary-map", "boundary-table")
    finding_forks = True
    finding_text = (
        "The targets this kernel can run (a framework the pin set does not install is skipped). Each target variant: "
        "one clean run (its boundaries), then one line per boundary and side, run through the fork server, `jobs` at "
        "a time."
    )

    line = staticmethod(run_point)

    def finding_aim(self, parameters) -> dict:
        """Only ``boundaries``: a notebook's ``seed`` is the order its lines run in, not the random kills' draws."""
        return {"boundaries": tuple(parameters.get("boundaries") or ())}

    def expand(self, target: Target, points, settings: Settings, runtime: Runtime) -> list[str]:
        return expand(target, list(points), settings, runtime)

    def points_for(self, points, settings: Settings) -> list[str]:
        if settings.aim.random_kills:
            return [*points, "random"] if points else ["random"]
        if "random" in points:
            raise UsageError("--point random needs --random-kills N")
        return list(points)

    def aimed_elsewhere(self, target: Target) -> bool:
        """Only one aimed at a save is left out: the map holds every boundary in turn itself, so it would map its
        plain sibling's run again."""
        return bool(target.aim.saves)

    def shown_point(self, result: Result) -> str:
        """``boundary 7/12 after model-call 2``; a random kill with where it landed (``random 3: between ...``)."""
        place = result.evidence.get("boundary") or {}
        if "index" in place:
            # A step marked from a background thread was held while the run went on (a checkpoint writer).
            background = " [background thread]" if place.get("main_thread") is False else ""
            return f"boundary {place['index']}/{place['of']} {result.point}{background}"
        landed = result.evidence.get("landed")
        return f"{result.point}: {landed}" if landed else result.point


SCENARIO = EveryBoundary()
