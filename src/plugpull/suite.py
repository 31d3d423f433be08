"""Running scenarios against targets: the harness API the CLI and the notebooks share.

Every scenario module has ``NAME``, ``POINTS`` and ``run(target, points, settings) ->
list[Result]``; a target names its scenario, and this module dispatches on it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby
from types import ModuleType

from plugpull.results import Result
from plugpull.scenarios import Settings
from plugpull.targets import Target

#: scenario name -> module under plugpull.scenarios
SCENARIOS = {
    "kill-mid-tool": "kill_mid_tool",
    "lost-session-write": "lost_session_write",
    "resume-after-approval": "resume_after_approval",
    "every-boundary": "every_boundary",
    "resume-after-upgrade": "resume_after_upgrade",
}


def scenario_module(name: str) -> ModuleType:
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    return importlib.import_module(f"plugpull.scenarios.{SCENARIOS[name]}")


def all_points() -> list[str]:
    """Every point of every scenario, in order, for the CLI's --point choices."""
    points: list[str] = []
    for name in SCENARIOS:
        points.extend(p for p in scenario_module(name).POINTS if p not in points)
    return points


def unselected_points(targets: list[Target], points: list[str]) -> str | None:
    """Why ``points`` select nothing for some of ``targets``; None when every point belongs to one of them.

    A point that no selected target's scenario has would run nothing and exit 0 (issue 12), so
    a CI job would test nothing: the CLI turns this into bad input.
    """
    scenarios = list(dict.fromkeys(t.scenario for t in targets))
    if not scenarios or not points:
        return None
    have = {name: scenario_module(name).POINTS for name in scenarios}
    missing = [p for p in dict.fromkeys(points) if not any(p in pts for pts in have.values())]
    if not missing:
        return None
    listed = "; ".join(f"{name} has {', '.join(pts)}" for name, pts in have.items())
    which = ", ".join(missing)
    return f"--point {which} is not a point of the selected scenario{'s' if len(have) > 1 else ''}: {listed}"


def plan(targets: list[Target], points: list[str] | None = None, repeat: int = 1) -> list[tuple[Target, str]]:
    """The (target, point) runs, in output order: each target's points that its scenario has."""
    runs = []
    for target in targets:
        module = scenario_module(target.scenario)
        default = getattr(module, "DEFAULT_POINTS", module.POINTS)
        for point in [p for p in (points or default) if p in module.POINTS]:
            runs.extend([(target, point)] * repeat)
    return runs


def run_plan(
    runs: list[tuple[Target, str]],
    settings: Settings | None = None,
    *,
    jobs: int = 1,
    progress: Callable[[Target, str], None] | None = None,
    finished: Callable[[Target, str, list[Result]], None] | None = None,
) -> list[Result]:
    """Run every (target, point); with ``jobs`` > 1, that many at once.

    ``progress`` is called as a run starts, ``finished`` with its results as it ends (from the
    worker threads when ``jobs`` > 1), so a caller can show each line the moment it completes.

    Runs are independent: each has its own channel (socket, provider, store), workdir and
    process groups, so running them concurrently changes nothing but wall time. Results
    come back in ``runs`` order either way.
    """
    settings = settings or Settings()
    runs = expand(runs, settings)

    def one(run: tuple[Target, str]) -> list[Result]:
        target, point = run
        if progress is not None:
            progress(target, point)
        results = scenario_module(target.scenario).run(target, [point], settings)
        if finished is not None:
            finished(target, point, results)
        return results

    if jobs <= 1:
        return [r for run in runs for r in one(run)]
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="plugpull-job") as pool:
        return [r for batch in pool.map(one, runs) for r in batch]


def expand(runs: list[tuple[Target, str]], settings: Settings) -> list[tuple[Target, str]]:
    """Runs whose scenario has lines known only after a clean run (every-boundary): one per line.

    Consecutive runs of one target are expanded together, so a target's lines come out boundary
    by boundary (before, then after), and the expanded lines are dispatched like any other (-j).
    """
    out: list[tuple[Target, str]] = []
    for target, group in groupby(runs, key=lambda run: run[0]):
        points = [point for _, point in group]
        module = scenario_module(target.scenario)
        if hasattr(module, "expand"):
            out.extend((target, line) for line in module.expand(target, points, settings))
        else:
            out.extend((target, point) for point in points)
    return out


def run_scenario(
    target: Target, points: list[str] | None = None, *, repeat: int = 1, settings: Settings | None = None, jobs: int = 1
) -> list[Result]:
    """Run ``target``'s scenario at ``points`` (default: all of the scenario's points), ``repeat`` times each."""
    return run_plan(plan([target], points, repeat), settings, jobs=jobs)
