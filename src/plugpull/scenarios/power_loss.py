"""power-loss: the workdir on a FUSE file system that models a disk; SIGKILL, then cut the power, then resume.

A SIGKILL keeps the page cache, so everything the killed process wrote is there for resume; a power
cut keeps only what was fsynced. Each line:

1. mounts a power-cut file system (plugpull.powercut.mount.PowerCutMount) over an empty backing
   directory and gives the mount point to the target as PLUGPULL_WORKDIR;
2. runs the phases before the killed one, then the killed one armed at the point, and SIGKILLs its
   process group exactly as kill-mid-tool (``before-effect``, ``after-effect``: a held effect call)
   or every-boundary (``before LABEL``, ``after LABEL``: one side of one boundary of the clean run)
   does, with the same proof (scenarios.held_kill);
3. once the kill is proven, cuts the power: the backing directory is rewritten to what a disk could
   hold (``--power-cut VARIANT``: unsynced, the default; torn; namespace; lazyfs), and the model says
   what was lost; the mount is made again over the rewritten directory at the same path;
4. runs the recovering phase there and counts effects (checks.judge_power_loss).

The clean run (nothing held, no cut) runs on an ordinary directory, with boundary marks on, and says
which effects a run owes and its golden result. Where FUSE cannot mount, every line is ERROR with the
reason (FuseUnavailable), never a skip.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from plugpull import boundaries, checks, reaper
from plugpull.channel import Channel
from plugpull.errors import FuseUnavailable, PowerCutError
from plugpull.evidence import PowerLossEvidence
from plugpull.process import reaping
from plugpull.results import Result
from plugpull.scenarios import POWER_CUTS, Runtime, Settings, make_result, option, result_ignore, settle, steps
from plugpull.scenarios import every_boundary as boundary_lines
from plugpull.scenarios.faults import BoundaryKill, HeldCallKill, PowerCut
from plugpull.scenarios.held_kill import KillAndRecover
from plugpull.targets import Target

NAME = "power-loss"
#: Kill-mid-tool's points (a held effect call), then every-boundary's sides (one line per boundary).
EFFECT_POINTS = ("before-effect", "after-effect")
BOUNDARY_POINTS = ("before", "after")
POINTS = (*EFFECT_POINTS, *BOUNDARY_POINTS)
#: Without --point: the cut after the effect, where a journal that was never fsynced costs a duplicate.
DEFAULT_POINTS = ("after-effect",)
#: --power-cut choices: plugpull.powercut.durability.Variant's values.
VARIANTS = POWER_CUTS

__all__ = ["NAME", "POINTS", "SCENARIO", "VARIANTS", "PowerLoss", "run_point"]


class PoweredWorkdir:
    """One line's PLUGPULL_WORKDIR on a power-cut mount: ``disk/`` holds the files, ``workdir/`` is the mount.

    :meth:`cut` cuts the power and mounts again over the rewritten ``disk/`` at the same path, so the
    recovering phase finds its workdir where the killed one left it.
    """

    def __init__(self, settings: Settings) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="plugpull-power-", dir=settings.workdir_root))
        self.disk = self.root / "disk"
        self.path = self.root / "workdir"
        self.disk.mkdir()
        self.path.mkdir()
        self.mount = None

    def start(self) -> Path:
        from plugpull.powercut.mount import PowerCutMount

        self.mount = PowerCutMount(self.disk, self.path).start()
        return self.path

    def cut(self, variant: str) -> dict:
        """Cut the power (the caller proved the kill): the model's report, as JSON; mounted again after."""
        report = self.mount.cut(variant)
        reaper.reap_orphans()
        self.start()
        return report.to_json()

    def stop(self) -> None:
        if self.mount is not None:
            self.mount.stop()
            # The daemon's fusermount3 watchdog outlives it and is reparented to this subreaper: reaped
            # here, so a long run leaves no zombie per mount (docs/DECISIONS.md, power cuts). It exits on its
            # own once it sees the mount gone, which under load can be after the first look: wait for it.
            deadline = time.monotonic() + WATCHDOG_WAIT
            reaper.reap_orphans()
            while watchdogs() and time.monotonic() < deadline:
                time.sleep(0.02)
                reaper.reap_orphans()


#: How long stop() waits for a mount's fusermount3 watchdog to exit after the unmount (seconds).
WATCHDOG_WAIT = 2.0


def watchdogs() -> list[int]:
    """Live fusermount3 processes reparented to this process (a stopped mount's auto_unmount watchdog)."""
    me, session = os.getpid(), os.getsid(0)
    found = []
    for proc in reaper.snapshot().values():
        if proc.ppid == me and proc.alive and proc.sid != session:
            try:
                if Path(f"/proc/{proc.pid}/comm").read_text().strip() == "fusermount3":
                    found.append(proc.pid)
            except OSError:
                continue
    return found


@contextmanager
def powered_workdir(settings: Settings) -> Iterator[PoweredWorkdir]:
    """A :class:`PoweredWorkdir`, mounted; unmounted and removed afterwards (kept, unmounted, with --keep-workdir).

    Raises FuseUnavailable (nothing left behind) when FUSE cannot mount here.
    """
    place = PoweredWorkdir(settings)
    try:
        place.start()
        yield place
    finally:
        try:
            place.stop()
        finally:
            from plugpull.powercut.mount import is_mounted

            # Never through a mount that is somehow still there: that would delete through the daemon.
            if not settings.keep_workdir and not is_mounted(place.path):
                shutil.rmtree(place.root, ignore_errors=True)


def run_point(target: Target, point: str, settings: Settings | None = None, runtime: Runtime | None = None) -> Result:
    """One power-loss line: ``point`` is a kill-mid-tool point or "SIDE LABEL" of a boundary ("after model-call 2")."""
    settings = settings or Settings()
    runtime = runtime or Runtime()
    side, _, label = point.partition(" ")
    if side not in POINTS:
        raise ValueError(f"unknown point {point!r}; known: {', '.join(POINTS)}")
    # A variant's own held call where the run holds none (Aim.over); power-loss has no built-ins of its own and adopts
    # no variant with a sibling or saves (KillAndRecover.aimed_elsewhere), so there are none to take.
    settings = replace(settings, aim=settings.aim.over(target.aim))
    began = time.monotonic()
    ev = PowerLossEvidence(
        **steps.killed_line(point, settings),
        **steps.held_specs(settings, PowerLossEvidence),
        side=side if side in BOUNDARY_POINTS else "",
        variant=SCENARIO.own(settings).power_cut,
    )
    ev.clean = boundary_lines.clean_of(target, settings, runtime)
    ev.golden = list(ev.clean.results)
    ev.result_ignore = result_ignore(target, ev.clean.announced)
    announced, kept = list(ev.clean.announced), None
    problem = checks.check_clean_run(ev)
    step = None
    if problem is None and ev.side:
        marked = boundaries.steps_of(ev.clean.trace)
        step = next((s for s in marked if s.label == label), None)
        if step is None:
            listed = ", ".join(s.label for s in marked[:12]) or "none"
            problem = checks.error(f"{point}: no such boundary in the clean run (it has: {listed})", show="")
        else:
            ev.boundary = {**step.to_dict(), "of": len(marked)}
    if problem is None:
        announced, kept = run_faulted(target, step, settings, runtime, ev)
        problem = checks.judge_power_loss(ev)
    problem = settle(
        problem, runtime, (NAME, *boundary_lines.clean_key(target, settings), ev.variant), point, target=target
    )
    return make_result(
        NAME, target, point, ev.to_dict(), problem, announced, began, steps.shown_outcome(problem, ev), kept
    )


def run_faulted(
    target: Target, step: boundaries.Step | None, settings: Settings, runtime: Runtime, ev: PowerLossEvidence
) -> tuple[list[dict], Path | None]:
    """Mount, run up to the point, kill, cut if the kill is proven, mount again, resume; fill ``ev``."""
    try:
        with powered_workdir(settings) as place, Channel() as channel, reaping() as spawned:
            env = boundary_lines.marked_env(channel, place.path)
            failed = boundary_lines.run_prelude(target, settings, runtime, channel, env, spawned)
            if failed is not None:
                ev.start = failed
                return list(channel.announced), None
            killed_phase, recovery = target.phases[-2], target.phases[-1]
            ev.recovery = recovery
            # A held-call kill as kill-mid-tool's (its held call alone: no sibling, no saves) or a boundary kill as
            # every-boundary's, then the power cut once that kill is proven.
            kill = HeldCallKill(ev.point, hold=settings.aim.hold) if step is None else BoundaryKill(step, ev.side)
            kill.arm(channel.provider)
            started = steps.spawn_phase(runtime, [*target.argv, killed_phase], "start", channel, env, settings, spawned)
            killed = kill.strike(channel, started, settings.timeout)
            killed.record(ev)
            proven = kill.proven(ev)
            if proven is None:
                try:
                    ev.cut = PowerCut(ev.variant).strike(place)
                except PowerCutError as exc:  # FuseUnavailable on mounting again included: the line cannot go on
                    ev.cut_error = str(exc)
            if proven is None and ev.cut is not None:
                channel.provider.arm(None)
                ev.resume = steps.run_to_end(
                    runtime, [*target.argv, recovery], "resume", channel, env, settings, spawned
                )
                ev.resumed = channel.results_of("resume")
            steps.count_effects(ev, channel)
            return list(channel.announced), (place.disk if settings.keep_workdir else None)
    except FuseUnavailable as exc:
        ev.unavailable = exc.reason
    except PowerCutError as exc:  # the daemon failed to mount, or something stayed mounted at the end
        ev.mount_error = str(exc)
    return list(ev.clean.announced), None


@dataclass(frozen=True)
class Options:
    """power-loss's own options (``--power-cut VARIANT``; a notebook's ``power_cut`` parameter, or a finding line's
    target option of that name)."""

    power_cut: str = option(
        "unsynced",
        "--power-cut",
        "what the power cut loses: unsynced (every write and every create or rename not fsynced), torn (unsynced, "
        "and the last unsynced write torn at a 512-byte boundary), namespace (only creates and renames whose "
        "directory was not fsynced) or lazyfs (only unsynced writes)",
        choices=POWER_CUTS,
    )


class PowerLoss(KillAndRecover):
    name = NAME
    points = POINTS
    default_points = DEFAULT_POINTS
    fault = (
        "SIGKILL as kill-mid-tool (or every-boundary) does, then a power cut of the workdir's FUSE file system: "
        "what was not fsynced is lost before resume"
    )
    faults = (HeldCallKill, BoundaryKill, PowerCut)
    options = frozenset({"boundaries"})
    Options = Options
    refuses = {
        "sibling": "it applies to kill-mid-tool",
        "saves": "it applies to kill-mid-tool; aim at a save with --point before/after and --boundary",
        "random_kills": "it applies to every-boundary",
    }
    #: Built-ins that keep a framework store in PLUGPULL_WORKDIR: SqliteSaver, FileCheckpointStorage,
    #: ADK's SqliteSessionService, DBOS's SQLite system database.
    default_targets = ("langgraph", "agent-framework", "google-adk", "dbos")
    evidence = PowerLossEvidence
    checks = (checks.judge_power_loss,)
    # A finding's ``cuts`` parameter: each variant once per cut, the cut in the line's options (docs/DECISIONS.md,
    # "The power-loss finding"), and what each cut lost shown under the table.
    finding_parameter = "cuts"
    lines_per = "power_cut"
    views = ("table", "plot", "cut-losses")
    finding_text = (
        "The targets this kernel can run (a framework the pin set does not install is skipped, not an error). "
        "Each line: one target variant, one cut, one point, `repeats` times."
    )

    line = staticmethod(run_point)

    def expand(self, target: Target, points: Sequence[str], settings: Settings, runtime: Runtime) -> list[str]:
        """Kill-mid-tool points stay one line each; before/after become one line per boundary of the clean run."""
        aimed = [p for p in points if p in BOUNDARY_POINTS]
        lines = [p for p in points if p not in BOUNDARY_POINTS]
        if aimed:
            lines += boundary_lines.expand(target, aimed, settings.aimed(random_kills=0), runtime)
        return lines

    def shown_point(self, result: Result) -> str:
        """``after-effect charge#1 (cut: unsynced)``, or the boundary as every-boundary shows it."""
        place = result.evidence.get("boundary") or {}
        shown = (
            f"boundary {place['index']}/{place['of']} {result.point}"
            if "index" in place
            else super().shown_point(result)
        )
        return f"{shown} (cut: {result.evidence.get('variant', 'unsynced')})"


SCENARIO = PowerLoss()
