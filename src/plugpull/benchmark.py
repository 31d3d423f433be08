"""Benchmark: what plugpull costs on top of a target, and what the fork server and -j save.

    uv run python -m plugpull.benchmark [--reps 3] [--skip-suite]
    uv run python -m plugpull.benchmark --cycles [--map langgraph] [--repeat 1 4] [--against DIR]

Everything is measured in one run and reported as ratios against a baseline measured in the
same run (this machine is shared and noisy; absolute times drift). Medians over ``--reps``:

- bare: ``COMMAND start`` then ``COMMAND resume`` (``approve`` for a paused run) of each built-in
  target, no fault, the provider answering every call (the least a target needs to run at all);
- through plugpull: one line of the target's scenario (its clean run or probe, the faulted
  start, the kill, the resume), cold;
- forked: the same line with ``--fork-server`` (a warm server; its one-time import is excluded
  and reported separately);
- suite: every built-in line once, serial against ``-j 2``.

``--cycles`` measures the throughput of aimed kill-and-resume cycles (issue 26): each map's
every-boundary lines (``plugpull ... --scenario every-boundary --fork-server -j 2 --json``) run as one
``plugpull`` process at two ``--repeat`` counts, and the marginal CPU per cycle is the difference of
their CPU over the difference of their lines. The CPU is the kernel's accounting of the whole process
tree: ``os.wait4`` of the ``plugpull`` process returns its own user + sys time plus that of every
descendant reaped below it (the fork server reaps its forked children and plugpull reaps the server
and adopted orphans, so their time reaches plugpull's children's total before plugpull exits;
getrusage(2)). The clean run, the fork server's import and plugpull's own start are paid by both
counts, so they drop out of the difference. ``--against DIR`` runs the same commands with DIR's
``src`` first on PYTHONPATH (another checkout: the code before a change), alternated with this one,
and prints after / before per map.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

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


#: The every-boundary maps issue 26 measures: name -> the plugpull arguments that select it.
MAPS = {
    "langgraph": ["--agent", "{python} -m plugpull.targets.langgraph_refund no-key --durability sync"],
    "openai-agents-approval": ["--target", "openai-agents-approval"],
    "agent-framework": ["--target", "agent-framework"],
}
#: CPU-seconds an hour on the 2 cores this project's figures are quoted for.
CORE_SECONDS_AN_HOUR = 2 * 3600


@dataclass
class Measured:
    """One ``plugpull`` process: its lines, verdicts, wall and the CPU of its whole tree."""

    lines: int
    verdicts: dict[str, int]
    wall: float
    cpu: float  # user + sys, the process and every descendant reaped below it
    user: float
    sys: float


def measure_map(name: str, repeat: int, source: str | None = None) -> Measured:
    """Run one map ``repeat`` times in one ``plugpull`` process; the kernel's accounting of its tree."""
    args = [a.format(python=sys.executable) for a in MAPS[name]]
    argv = [sys.executable, "-c", "import sys; from plugpull.cli import main; sys.exit(main())"]
    argv += [*args, "--scenario", "every-boundary", "--fork-server", "-j", "2", "--json", "--repeat", str(repeat)]
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(source, "src"), env.get("PYTHONPATH")]))
    began = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    out = proc.stdout.read()
    proc.stdout.close()
    status, cpu, user, system = tree_cpu(proc.pid)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - began
    try:
        results = json.loads(out)["results"]
    except (ValueError, KeyError):
        raise SystemExit(f"benchmark: the {name} map gave no JSON (exit {proc.returncode})") from None
    verdicts: dict[str, int] = {}
    for r in results:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    return Measured(len(results), verdicts, wall, cpu, user, system)


def tree_cpu(pid: int) -> tuple[int, float, float, float]:
    """Reap child ``pid``: (wait status, user + sys, user, sys) of it and every descendant reaped below it.

    wait4, not Popen.wait: its rusage is the child's own plus its RUSAGE_CHILDREN, which holds every
    descendant that was waited for down the tree (getrusage(2)). A descendant nobody reaped is not in it:
    the fork server reaps its children, and plugpull its servers and the orphans it adopts as subreaper.
    """
    _pid, status, usage = os.wait4(pid, 0)
    return status, usage.ru_utime + usage.ru_stime, usage.ru_utime, usage.ru_stime


def marginal(low: Measured, high: Measured) -> tuple[float, float]:
    """CPU-seconds and wall seconds of one more line: the difference of two repeat counts over their lines."""
    extra = high.lines - low.lines
    if extra <= 0:
        raise SystemExit("benchmark: the higher --repeat gave no more lines")
    return (high.cpu - low.cpu) / extra, (high.wall - low.wall) / extra


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def cycles(args: argparse.Namespace) -> int:
    low, high = args.repeat
    sources = [("this", None)] + ([("before", args.against)] if args.against else [])
    print(
        f"date {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, load average {load()} (1/5/15 min)"
    )
    print(
        f"every-boundary --fork-server -j 2, --repeat {low} against --repeat {high}, alternated, {args.pairs} pair(s)"
    )
    print()
    print(
        "| map | code | lines | CPU (user + sys) | wall | marginal CPU/cycle | cycles/h (2 cores, CPU) | wall/cycle "
        "| verdicts | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    per_cycle: dict[tuple[str, str], list[float]] = {}
    for name in args.map:
        for _ in range(args.pairs):
            for label, source in sources:
                a = measure_map(name, low, source)
                b = measure_map(name, high, source)
                cpu, wall = marginal(a, b)
                per_cycle.setdefault((name, label), []).append(cpu)
                verdicts = ", ".join(f"{k} {v}" for k, v in sorted(b.verdicts.items()))
                print(
                    f"| {name} | {label} | {a.lines} / {b.lines} | {a.cpu:.1f} s / {b.cpu:.1f} s "
                    f"| {a.wall:.1f} s / {b.wall:.1f} s | **{cpu:.3f} s** | {CORE_SECONDS_AN_HOUR / cpu:,.0f} "
                    f"| {wall:.3f} s | {verdicts} | {load()} |",
                    flush=True,
                )
    if args.against:
        print()
        print("| map | marginal CPU/cycle, this | before | this / before |")
        print("|---|---|---|---|")
        for name in args.map:
            now = statistics.median(per_cycle[(name, "this")])
            then = statistics.median(per_cycle[(name, "before")])
            print(f"| {name} | {now:.3f} s | {then:.3f} s | {now / then:.2f} |")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--skip-suite", action="store_true")
    parser.add_argument("--only-suite", action="store_true")
    parser.add_argument("--cycles", action="store_true", help="marginal CPU per aimed kill-and-resume cycle (issue 26)")
    parser.add_argument("--map", action="append", choices=list(MAPS), help="with --cycles: the maps (default: all)")
    parser.add_argument("--repeat", type=int, nargs=2, default=[1, 4], metavar=("LOW", "HIGH"))
    parser.add_argument("--pairs", type=int, default=1, help="with --cycles: LOW/HIGH pairs per map and code")
    parser.add_argument("--against", metavar="DIR", help="with --cycles: also measure the checkout DIR, alternated")
    args = parser.parse_args(argv)
    if args.cycles:
        args.map = args.map or list(MAPS)
        if not (1 <= args.repeat[0] < args.repeat[1]):
            parser.error("--repeat LOW HIGH needs 1 <= LOW < HIGH")
        if args.against and not os.path.isdir(os.path.join(args.against, "src", "plugpull")):
            parser.error(f"--against {args.against}: no src/plugpull there")
        return cycles(args)

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
