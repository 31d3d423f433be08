"""Benchmark: what plugpull costs on top of a target, and what the fork server and -j save.

    uv run python -m plugpull.benchmark [--reps 3] [--skip-suite]

Everything is measured in one run and reported as ratios against a baseline measured in the
same run (this machine is shared and noisy; absolute times drift). Medians over ``--reps``:

- bare: ``COMMAND start`` then ``COMMAND resume`` (``approve`` for a paused run) of each built-in
  target, no fault, the provider answering every call (the least a target needs to run at all);
- through plugpull: one line of the target's scenario (its clean run or probe, the faulted
  start, the kill, the resume), cold;
- forked: the same line with ``--fork-server`` (a warm server; its one-time import is excluded
  and reported separately);
- suite: every built-in line once, serial against ``-j 2``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import statistics
import time
from collections.abc import Callable

from plugpull import suite
from plugpull.channel import Channel
from plugpull.forkserver import ForkServers
from plugpull.scenarios import Runtime, Settings, target_env, workdir
from plugpull.scenarios.registry import REGISTRY
from plugpull.store import Store
from plugpull.targets import BUILT_INS, Target


def median_time(reps: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(reps):
        began = time.monotonic()
        run()
        times.append(time.monotonic() - began)
    return statistics.median(times)


def bare_cycle(target: Target) -> None:
    """The scenario's first two phases (start then resume; approve, for a paused run), no fault, with only
    what the target needs (a channel)."""
    settings = Settings()
    with workdir(settings) as path, Channel(store=Store()) as channel:
        env = target_env(channel, path)
        for phase in REGISTRY[target.scenario].phases[:2]:
            Runtime().spawn([*target.argv, phase], env=env, cwd=None).wait(300)


def one_line(target: Target, forks: ForkServers | None = None) -> None:
    # A new Runtime each time: every repetition runs its own clean run, as a user's one line does.
    point = REGISTRY[target.scenario].points[0]
    results = suite.run_plan([(target, point)], Settings(timeout=300), Runtime(forks=forks))
    if any(r.verdict.value == "ERROR" for r in results):
        raise SystemExit(f"benchmark: {target.label()} gave ERROR: {results[0].message}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--skip-suite", action="store_true")
    parser.add_argument("--only-suite", action="store_true")
    args = parser.parse_args(argv)

    installed = [b for b in BUILT_INS.values() if b.installed()]
    print(
        f"date {time.strftime('%Y-%m-%d', time.gmtime())}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}, reps {args.reps} (medians)"
    )
    for b in installed:
        dist = b.variants[0].framework
        print(f"  {dist} {importlib.metadata.version(dist)}")
    print()
    print(
        "| target | bare start+resume | through plugpull (1 line) | ratio | forked line | cold/forked | server import |"
    )
    print("|---|---|---|---|---|---|---|")
    for b in [] if args.only_suite else installed:
        target = b.variants[0]
        bare = median_time(args.reps, lambda t=target: bare_cycle(t))
        cold = median_time(args.reps, lambda t=target: one_line(t))
        forks = ForkServers()
        try:
            server_import = median_time(1, lambda t=target, f=forks: one_line(t, f))  # starts the server once
            forked = median_time(args.reps, lambda t=target, f=forks: one_line(t, f))
        finally:
            forks.close()
        label = target.label(importlib.metadata.version(target.framework))
        print(
            f"| {label} | {bare:.2f} s | {cold:.2f} s | {cold / bare:.2f} | {forked:.2f} s | "
            f"{cold / forked:.2f} | first forked line {server_import:.2f} s |",
            flush=True,
        )

    if not args.skip_suite:
        targets = [v for b in installed for v in b.variants]
        runs = suite.plan(targets)
        serial = median_time(1, lambda: suite.run_plan(runs, Settings(timeout=300), jobs=1))
        parallel = median_time(1, lambda: suite.run_plan(runs, Settings(timeout=300), jobs=2))
        print()
        print("| suite (every built-in line once) | serial | -j 2 | serial / -j 2 |")
        print("|---|---|---|---|")
        print(f"| {len(runs)} lines | {serial:.1f} s | {parallel:.1f} s | {serial / parallel:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
