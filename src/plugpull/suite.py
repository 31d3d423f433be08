"""Running scenarios against targets: the harness API the CLI and the notebooks share.

A target names its scenario; the registry (plugpull.scenarios.registry) gives the scenario object, and
this module reads nothing of it but the contract (plugpull.scenarios.contract): its points, its
expansion and its ``run``.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby

from plugpull.results import Result
from plugpull.scenarios import Runtime, Settings
from plugpull.scenarios.registry import REGISTRY
from plugpull.targets import Target


def all_points() -> list[str]:
    """Every point of every scenario, in order, for the CLI's --point choices."""
    return REGISTRY.points()


def unselected_points(targets: list[Target], points: list[str]) -> str | None:
    """Why ``points`` select nothing for some of ``targets``; None when every point belongs to one of them.

    A point that no selected target's scenario has would run nothing and exit 0, so
    a CI job would test nothing: the CLI turns this into bad input.
    """
    scenarios = list(dict.fromkeys(t.scenario for t in targets))
    if not scenarios or not points:
        return None
    have = {name: REGISTRY[name].points for name in scenarios}
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
        scenario = REGISTRY[target.scenario]
        for point in [p for p in (points or scenario.points_by_default) if p in scenario.points]:
            runs.extend([(target, point)] * repeat)
    return runs


def run_plan(
    runs: list[tuple[Target, str]],
    settings: Settings | None = None,
    runtime: Runtime | None = None,
    *,
    jobs: int = 1,
    progress: Callable[[Target, str], None] | None = None,
    finished: Callable[[Target, str, list[Result]], None] | None = None,
    planned: Callable[[int], None] | None = None,
) -> list[Result]:
    """Run every (target, point); with ``jobs`` > 1, that many at once.

    ``runtime``: what the lines share (clean runs, fork servers); a new one without fork servers by
    default. Pass the same one to later calls to share their clean runs too; its caller closes it.

    ``progress`` is called as a run starts, ``finished`` with its results as it ends (from the
    worker threads when ``jobs`` > 1), so a caller can show each line the moment it completes.
    ``planned`` is called once with the number of lines after expansion (every-boundary makes one per
    boundary), before the first starts.

    Runs are independent: each has its own channel (socket, provider, store), workdir and
    process groups, so running them concurrently changes nothing but wall time. Results
    come back in ``runs`` order either way.
    """
    from plugpull import process

    process.begin_run()  # an earlier run of this process may have been interrupted (stop_all)
    settings = settings or Settings()
    runtime = runtime or Runtime()
    runs = expand(runs, settings, runtime)
    runtime.plan(runs)
    if planned is not None:
        planned(len(runs))

    def one(run: tuple[Target, str]) -> list[Result]:
        target, point = run
        if progress is not None:
            progress(target, point)
        scenario = REGISTRY[target.scenario]
        # A line may carry a value of its scenario's own option in its target options (a finding's power-loss line
        # names its cut so): Scenario.line_settings.
        results = scenario.run(target, point, scenario.line_settings(settings, target), runtime)
        if finished is not None:
            finished(target, point, results)
        return results

    if jobs <= 1:
        return [r for run in runs for r in one(run)]
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="plugpull-job") as pool:
        return [r for batch in pool.map(one, runs) for r in batch]


def expand(runs: list[tuple[Target, str]], settings: Settings, runtime: Runtime) -> list[tuple[Target, str]]:
    """Each run as the lines its scenario makes of it (``Scenario.expand``; every-boundary: one per boundary).

    Consecutive runs of one target are expanded together, so a target's lines come out boundary
    by boundary (before, then after), and the expanded lines are dispatched like any other (-j).
    """
    out: list[tuple[Target, str]] = []
    for target, group in groupby(runs, key=lambda run: run[0]):
        points = [point for _, point in group]
        scenario = REGISTRY[target.scenario]
        mine = scenario.line_settings(settings, target)
        out.extend((target, line) for line in scenario.expand(target, points, mine, runtime))
    return out


def run_scenario(
    target: Target,
    points: list[str] | None = None,
    *,
    repeat: int = 1,
    settings: Settings | None = None,
    runtime: Runtime | None = None,
    jobs: int = 1,
) -> list[Result]:
    """Run ``target``'s scenario at ``points`` (default: all of the scenario's points), ``repeat`` times each."""
    return run_plan(plan([target], points, repeat), settings, runtime, jobs=jobs)
