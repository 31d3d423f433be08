"""Running scenarios against targets: the harness API the CLI and the notebooks share.

Every scenario module has ``NAME``, ``POINTS`` and ``run(target, points, settings) ->
list[Result]``; a target names its scenario, and this module dispatches on it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from plugpull.results import Result
from plugpull.scenarios import Settings
from plugpull.targets import Target

#: scenario name -> module under plugpull.scenarios
SCENARIOS = {
    "kill-mid-tool": "kill_mid_tool",
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


def run_scenario(target: Target, points: list[str] | None = None, *, repeat: int = 1,
                 settings: Settings | None = None) -> list[Result]:
    """Run ``target``'s scenario at ``points`` (default: all of the scenario's points), ``repeat`` times each."""
    module = scenario_module(target.scenario)
    chosen = [p for p in (points or module.POINTS) if p in module.POINTS]
    results: list[Result] = []
    for point in chosen:
        for _ in range(repeat):
            results.extend(module.run(target, [point], settings or Settings()))
    return results
