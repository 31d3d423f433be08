"""What a findings notebook calls, inside its kernel: the logic, so notebooks stay thin.

Runs in the pin set's environment, which installs plugpull (no dependencies), the framework,
pandas, matplotlib and ipykernel: so this module imports pandas and matplotlib lazily, in the
functions that draw, and never papermill or nbconvert (harness side).
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform
import random
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from plugpull import rendering
from plugpull.notes import describe
from plugpull.report import record
from plugpull.results import Result, Verdict, tally
from plugpull.scenarios import Settings
from plugpull.suite import run_scenario
from plugpull.targets import BUILT_INS, Target


def version_of(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment(framework: str | list[str], plugpull_commit: str | None) -> dict[str, Any]:
    """Versions and platform, read here in the kernel (never copied from a pin file).

    The installed plugpull has no .git, so its commit comes in as a parameter from the harness.
    A finding about several frameworks passes them all: each one's version is read (None when this
    environment lacks it) and the record is named after the first one installed.
    """
    frameworks = [framework] if isinstance(framework, str) else list(framework)
    found = {name: version_of(name) for name in frameworks}
    now = dt.datetime.now(dt.timezone.utc)
    return {
        "framework": next((name for name in frameworks if found[name]), frameworks[0]),
        "date": now.date().isoformat(),
        "started_at": now.isoformat(timespec="seconds"),
        "versions": {
            **found,
            "plugpull": version_of("plugpull"),
            "plugpull_commit": plugpull_commit,
            "python": platform.python_version(),
            "os": platform.platform(),
            "pandas": version_of("pandas"),
            "matplotlib": version_of("matplotlib"),
            "ipykernel": version_of("ipykernel"),
        },
        "python_executable": sys.executable,
        "cpus": os.cpu_count(),
    }


def select_targets(name: str, options: dict[str, list[Any]]) -> list[Target]:
    """The built-in target's variants whose options take one of the listed values, in built-in order.

    ``{"durability": ["sync"]}`` keeps the variants with durability=sync; ``{}`` keeps all.
    A listed value no variant has is an error naming the values there are.
    """
    if name not in BUILT_INS:
        raise ValueError(f"unknown target {name!r}; built-in targets here: {', '.join(BUILT_INS)}")
    built_in = BUILT_INS[name]
    if not built_in.installed():
        raise RuntimeError(f"target {name!r} needs {built_in.module!r}, which this kernel's environment lacks")
    for key, values in options.items():
        known = sorted({str(v.options.get(key)) for v in built_in.variants})
        for value in values:
            if str(value) not in known:
                raise ValueError(f"target {name!r} has no variant with {key}={value}; known: {', '.join(known)}")
    return [
        v
        for v in built_in.variants
        if all(str(v.options.get(k)) in {str(x) for x in vals} for k, vals in options.items())
    ]


def select_installed(names: list[str], options: dict[str, list[Any]]) -> tuple[list[Target], list[str]]:
    """For a finding about several frameworks: the variants of each built-in target whose framework
    this kernel can import, and one line per name saying what ran here or why it was skipped.

    An option applies to the targets whose variants carry it (``durability`` to langgraph-approval
    only); a key no listed target carries, or a value none has, is an error. No target installed is one too.
    """
    unknown = [n for n in names if n not in BUILT_INS]
    if unknown:
        raise ValueError(f"unknown target {unknown[0]!r}; built-in targets here: {', '.join(BUILT_INS)}")
    for key in options:
        if not any(key in v.options for n in names for v in BUILT_INS[n].variants):
            raise ValueError(f"no target of {', '.join(names)} has the option {key!r}")
    targets: list[Target] = []
    said: list[str] = []
    for name in names:
        built_in = BUILT_INS[name]
        framework = built_in.variants[0].framework or built_in.module
        if not built_in.installed():
            said.append(f"{name}: skipped, {framework} is not installed in this environment")
            continue
        mine = {k: v for k, v in options.items() if any(k in t.options for t in built_in.variants)}
        kept = select_targets(name, mine)
        targets += kept
        said.append(f"{name}: {framework} {version_of(framework)}, {len(kept)} variant(s)")
    if not targets:
        raise RuntimeError(f"none of {', '.join(names)} can run here: this environment has none of their frameworks")
    return targets, said


def run_lines(
    targets: list[Target], points: list[str], repeats: int, seed: int | None, timeout: float, racers: int | None = None
) -> tuple[list[Result], float]:
    """Run every (target, point) ``repeats`` times; returns the results in line order and the wall time.

    With a seed the runs happen in a shuffled order, so a slow drift on a shared machine (page
    cache, other jobs) spreads over every line instead of landing on the last ones; the results
    are put back in line order (target, point, repeat) for the table and the text.
    """
    jobs = [(t, p, r) for t, target in enumerate(targets) for p, point in enumerate(points) for r in range(repeats)]
    order = list(jobs)
    if seed is not None:
        random.Random(seed).shuffle(order)
    settings = Settings(timeout=timeout)
    if racers is not None:  # resume-after-approval, racing-resumers
        settings.racers = racers
    done: dict[tuple[int, int, int], list[Result]] = {}
    began = time.monotonic()
    for job in order:
        t, p, _ = job
        done[job] = run_scenario(targets[t], [points[p]], settings=settings)
    return [r for job in jobs for r in done[job]], time.monotonic() - began


def table(results: list[Result]):
    """One row per result: what the HTML shows and what results.md is generated from."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "verdict": r.verdict.value,
                "scenario": r.scenario,
                "point": r.point,
                "version": r.version,
                "options": " ".join(f"{k}={v}" for k, v in r.options.items()),
                "effects": counts_text(r),
                "seconds": round(r.seconds, 2),
                "message": r.message,
                # Notes whose condition held on the line's evidence, apart from what was measured.
                "notes": "; ".join(describe(note) for note in r.notes),
            }
            for r in results
        ]
    )


def counts_text(result: Result) -> str:
    counts = result.evidence.get("counts") or {}
    return ", ".join(f"{name}={n}" for name, n in counts.items()) if isinstance(counts, dict) else str(counts)


def plot(results: list[Result], repeats: int):
    """Stacked bars: verdict counts per line (point, target options) over the repeats."""
    import matplotlib.pyplot as plt

    rows = tally(results)
    options = {(r.scenario, r.point, r.target): r.options for r in results}
    # One notebook is one framework version: the bar says the point and the variant's options
    # (and the framework, when one notebook ran several).
    frameworks = {(r.scenario, r.point, r.target): r.framework for r in results}
    several = len(set(frameworks.values())) > 1
    labels = [
        (f"{frameworks[(r['scenario'], r['point'], r['target'])]}\n" if several else "")
        + r["point"]
        + "".join(f"\n{k}={v}" for k, v in options[(r["scenario"], r["point"], r["target"])].items())
        for r in rows
    ]
    colors = {"PASS": "#2e7d32", "FAIL": "#c62828", "ERROR": "#9e9e9e"}
    fig, ax = plt.subplots(figsize=(max(5.0, 1.5 * len(rows) + 1.5), 4))
    bottom = [0] * len(rows)
    for verdict in Verdict:
        heights = [r[verdict.value] for r in rows]
        ax.bar(range(len(rows)), heights, bottom=bottom, color=colors[verdict.value], label=verdict.value)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_xticks(range(len(rows)), labels, fontsize=8)
    ax.set_ylabel(f"runs (of {repeats} per line)")
    ax.set_ylim(0, max(repeats, 1))
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("Verdicts per point and variant")
    fig.tight_layout()
    return fig


def text(results: list[Result]) -> str:
    """The result lines exactly as ``plugpull`` prints them (with resume's stderr under a line that shows it)."""
    return rendering.format_text(results)


def reproduce(finding: str, pin: str, parameters: dict[str, Any], commit: str | None) -> str:
    """The commands that re-run this report, for the notebook's "how to reproduce" cell."""
    overrides = " ".join(f"-p {k} {shlex.quote(_json(v))}" for k, v in parameters.items())
    lines = ["git clone <plugpull repository> plugpull && cd plugpull"]
    if commit and commit.endswith("-dirty"):
        lines.append(f"git checkout {commit[: -len('-dirty')]}  # this run had uncommitted changes on top of it")
    elif commit:
        lines.append(f"git checkout {commit}")
    lines.append(f"uv run plugpull report --finding {finding} --pin {pin}" + (f" {overrides}" if overrides else ""))
    return "\n".join(lines)


def write_record(
    path: str | os.PathLike[str],
    *,
    finding: str,
    pin: str,
    env: dict[str, Any],
    parameters: dict[str, Any],
    results: list[Result],
    scenario_seconds: float,
) -> dict[str, Any]:
    doc = record.build(
        finding=finding,
        pin=pin,
        date=env["date"],
        started_at=env["started_at"],
        finished_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        versions=env["versions"],
        parameters=parameters,
        results=results,
        framework=env["framework"],
        scenario_seconds=round(scenario_seconds, 3),
    )
    record.write(Path(path), doc)
    return doc


def _json(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value)
