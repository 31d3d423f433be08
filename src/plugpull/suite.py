"""Running scenarios against targets: the harness API the CLI and the notebooks share.

Every scenario module has ``NAME``, ``POINTS`` and ``run(target, points, settings) ->
list[Result]``; a target names its scenario, and this module dispatches on it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType

from plugpull.results import Result
from plugpull.scenarios import Settings
from plugpull.targets import Target

#: scenario name -> module under plugpull.scenarios
SCENARIOS = {
    "kill-mid-tool": "kill_mid_tool",
    "lost-session-write": "lost_session_write",
    "resume-after-approval": "resume_after_approval",
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
        for point in [p for p in (points or module.POINTS) if p in module.POINTS]:
            runs.extend([(target, point)] * repeat)
    return runs


def run_plan(
    runs: list[tuple[Target, str]],
    settings: Settings | None = None,
    *,
    jobs: int = 1,
    progress: Callable[[Target, str], None] | None = None,
) -> list[Result]:
    """Run every (target, point); with ``jobs`` > 1, that many at once.

    Runs are independent: each has its own channel (socket, provider, store), workdir and
    process groups, so running them concurrently changes nothing but wall time. Results
    come back in ``runs`` order either way.
    """
    settings = settings or Settings()

    def one(run: tuple[Target, str]) -> list[Result]:
        target, point = run
        if progress is not None:
            progress(target, point)
        return scenario_module(target.scenario).run(target, [point], settings)

    if jobs <= 1:
        return [r for run in runs for r in one(run)]
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="plugpull-job") as pool:
        return [r for batch in pool.map(one, runs) for r in batch]


def run_scenario(
    target: Target, points: list[str] | None = None, *, repeat: int = 1, settings: Settings | None = None, jobs: int = 1
) -> list[Result]:
    """Run ``target``'s scenario at ``points`` (default: all of the scenario's points), ``repeat`` times each."""
    return run_plan(plan([target], points, repeat), settings, jobs=jobs)
