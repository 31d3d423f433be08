"""Benchmark: what plugpull costs on top of a target, and what the fork server and -j save.

    uv run python -m plugpull.benchmark [--reps 3] [--skip-suite]
    uv run python -m plugpull.benchmark --cycles [--map langgraph] [--repeat 1 4] [--against DIR]
        [--floor [two-phase] [one-phase]]

Everything is measured in one run and reported as ratios against a baseline measured in the
same run (this machine is shared and noisy; absolute times drift). Medians over ``--reps``:

- bare: ``COMMAND start`` then ``COMMAND resume`` (``approve`` for a paused run) of each built-in
  target, no fault, the provider answering every call (the least a target needs to run at all);
- through plugpull: one line of the target's scenario (its clean run or probe, the faulted
  start, the kill, the resume), cold;
- forked: the same line with ``--fork-server`` (a warm server; its one-time import is excluded
  and reported separately);
- suite: every built-in line once, serial against ``-j 2``.

``--cycles`` measures the throughput of aimed kill-and-resume cycles: each map's
every-boundary lines (``plugpull ... --scenario every-boundary --fork-server -j 2 --json``) run as one
``plugpull`` process at two ``--repeat`` counts, and the marginal CPU per cycle is the difference of
their CPU over the difference of their lines. The CPU is the kernel's accounting of the whole process
tree: ``os.wait4`` of the ``plugpull`` process returns its own user + sys time plus that of every
descendant reaped below it (the fork server reaps its forked children and plugpull reaps the server
and adopted orphans, so their time reaches plugpull's children's total before plugpull exits;
getrusage(2)). The clean run, the fork server's import and plugpull's own start are paid by both
counts, so they drop out of the difference. ``--against DIR`` runs the same commands with DIR's
``src`` first on PYTHONPATH (another checkout: the code before a change), alternated with this one,
and prints after / before per map. Each row also gives the measured process's own CPU per cycle (RUSAGE_SELF: the
harness's share). ``--floor`` also measures the LangGraph map's floor the same way (``floor_run``: the map's target
forked twice a cycle, killed at the same boundaries, with no plugpull at all; ``one-phase``: one whole start per map
copying its workdir at each boundary, a resume per copy) and prints plugpull / floor.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugpull.forkserver import ForkServers
    from plugpull.targets import Target

# The harness's modules are imported where they are used, not here: the floor's process (``--floor``)
# imports this module and should hold what the fork server holds, not the whole harness.


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
    from plugpull.channel import Channel
    from plugpull.scenarios import Runtime, Settings, target_env, workdir
    from plugpull.scenarios.registry import REGISTRY
    from plugpull.store import Store

    settings = Settings()
    with workdir(settings) as path, Channel(store=Store()) as channel:
        env = target_env(channel, path)
        for phase in REGISTRY[target.scenario].phases[:2]:
            Runtime().spawn([*target.argv, phase], env=env, cwd=None).wait(300)


def one_line(target: Target, forks: ForkServers | None = None) -> None:
    # A new Runtime each time: every repetition runs its own clean run, as a user's one line does.
    from plugpull import suite
    from plugpull.scenarios import Runtime, Settings
    from plugpull.scenarios.registry import REGISTRY

    point = REGISTRY[target.scenario].points[0]
    results = suite.run_plan([(target, point)], Settings(timeout=300), Runtime(forks=forks))
    if any(r.verdict.value == "ERROR" for r in results):
        raise SystemExit(f"benchmark: {target.label()} gave ERROR: {results[0].message}")


#: The every-boundary maps the throughput benchmark measures: name -> the plugpull arguments that select it.
#: The LangGraph map's target arguments, without the phase: its map runs them, and so does its floor (floor_run).
LANGGRAPH_ARGV = ["no-key", "--durability", "sync"]
MAPS = {
    "langgraph": ["--agent", "{python} -m plugpull.targets.langgraph_refund " + " ".join(LANGGRAPH_ARGV)],
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
    own: float = 0.0  # user + sys of the measured process alone (plugpull's harness; the floor's forking parent)
    phases: dict[str, float] | None = None  # the floor's: median CPU of a forked start and of a resume


def measure_map(name: str, repeat: int, source: str | None = None) -> Measured:
    """Run one map ``repeat`` times in one ``plugpull`` process; the kernel's accounting of its tree.

    ``source`` FLOOR: the map's floor instead (``floor_run``: the same target, no plugpull)."""
    if source in (FLOOR, ONE_PHASE_FLOOR):
        floor = f"from plugpull.benchmark import floor_run; code = floor_run({repeat}, {source == ONE_PHASE_FLOOR})"
        argv = [sys.executable, "-c", OWN_CPU.format(main=floor)]
        return measure(name, argv, dict(os.environ))
    args = [a.format(python=sys.executable) for a in MAPS[name]]
    argv = [sys.executable, "-c", OWN_CPU.format(main="from plugpull.cli import main; code = main()")]
    argv += [*args, "--scenario", "every-boundary", "--fork-server", "-j", "2", "--json", "--repeat", str(repeat)]
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(source, "src"), env.get("PYTHONPATH")]))
    return measure(name, argv, env)


#: The measured process's command: ``main`` sets ``code``; its own CPU (RUSAGE_SELF, all its threads, none of
#: its children) goes to stderr last, so the harness's share of a cycle is a difference too.
OWN_CPU = """import resource, sys
try:
    {main}
finally:
    own = resource.getrusage(resource.RUSAGE_SELF)
    print("own cpu", own.ru_utime + own.ru_stime, file=sys.stderr)
sys.exit(code)
"""


def measure(name: str, argv: list[str], env: dict[str, str]) -> Measured:
    """Run ``argv``, which prints ``{"results": [{"verdict": ...}, ...]}``; its lines, verdicts, wall and tree CPU."""
    began = time.monotonic()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=env)
        out = proc.stdout.read()
        proc.stdout.close()
        status, cpu, user, system = tree_cpu(proc.pid)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - began
        err.seek(0)
        last = (err.read().decode(errors="replace").strip().splitlines() or [""])[-1]
    own = float(last.split()[-1]) if last.startswith("own cpu ") else float("nan")
    try:
        document = json.loads(out)
        results = document["results"]
    except (ValueError, KeyError):
        raise SystemExit(f"benchmark: the {name} map gave no JSON (exit {proc.returncode})") from None
    verdicts: dict[str, int] = {}
    for r in results:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
    return Measured(len(results), verdicts, wall, cpu, user, system, own, document.get("phases"))


#: ``--floor``'s code label: the LangGraph map's cycles with no harness at all (``floor_run``).
FLOOR = "floor"
#: ``--floor one-phase``'s: the same map with one forked phase a cycle (``floor_run(one_phase=True)``).
ONE_PHASE_FLOOR = "floor, one phase"


class FloorMarks:
    """The target's plugpull calls in a floor process: each side of each step counted, SIGKILL at the aimed one.

    The provider's rule (Provider.arm_step): ``aim`` (kind, name, n, side) is the n-th call of that kind and
    name on that side ("before" / "after" of a mark; an effect's "before" is its call, its "after" the effect
    recorded). The process kills itself there, from whichever thread reached it, as the harness's killpg
    would while it held that call.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: dict[tuple[str, str, str], int] = {}
        self.aim: tuple[str, str, int, str] | None = None
        self.steps: list[tuple[str, str, int]] = []  # the boundaries reached, in order: (kind, name, n)
        # The one-phase floor: the folder each side's copy of the workdir goes into, instead of a kill there.
        self.copies: str | None = None

    def reach(self, kind: str, name: str, side: str) -> None:
        with self.lock:
            n = self.seen[(kind, name, side)] = self.seen.get((kind, name, side), 0) + 1
            if side == "before":
                self.steps.append((kind, name, n))
            if self.aim == (kind, name, n, side):
                os.kill(os.getpid(), signal.SIGKILL)
            if self.copies is not None:
                # Under the lock, so no other marked step runs meanwhile; an unmarked thread still could, which a
                # kill would have stopped: a cost estimate, not a recovery test.
                shutil.copytree(
                    os.environ["PLUGPULL_WORKDIR"], os.path.join(self.copies, floor_line(kind, name, n, side))
                )

    def boundary(self) -> type:
        marks = self

        class boundary:  # noqa: N801 - plugpull.client.boundary's stand-in, used the same way
            def __init__(self, name: str) -> None:
                self.name = name

            def __enter__(self) -> boundary:
                marks.reach("mark", self.name, "before")
                return self

            def __exit__(self, exc_type: object, *exc: object) -> None:
                if exc_type is None:
                    marks.reach("mark", self.name, "after")

        return boundary

    def record_effect(self, name: str, *, key: str | None = None) -> dict[str, Any]:
        self.reach("effect", name, "before")
        # The provider: one line a call, in the phase's workdir (a new effect each time, as no-key's are).
        with open(os.path.join(os.environ["PLUGPULL_WORKDIR"], "effects"), "a") as effects:
            effects.write(f"{name} {key}\n")
        self.reach("effect", name, "after")
        return {"name": name, "key": key, "new": True, "count": 1}

    @staticmethod
    def record_result(value: Any) -> None:
        with open(os.path.join(os.environ["PLUGPULL_WORKDIR"], "result"), "w") as result:
            json.dump(value, result)


def floor_phase(
    run: Callable[[], object], marks: FloorMarks, path: str, aim: tuple | None, spent: list[float] | None = None
) -> int:
    """Fork one phase of the target in ``path``, aimed at ``aim`` (None: run to the end); its wait status.

    ``spent`` gets the phase's own CPU (user + sys, wait4), which is not the fork's cost in the parent."""
    from plugpull.forkserver import collapse_when_paid

    collapse_when_paid()  # as the fork server does before each fork
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            marks.aim = aim
            os.environ["PLUGPULL_WORKDIR"] = path
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            result = run()
            code = result if isinstance(result, int) else 0
            with open(os.path.join(path, "steps"), "w") as steps:
                json.dump(marks.steps, steps)
        except BaseException:
            with open(os.path.join(path, "error"), "w") as error:
                traceback.print_exc(file=error)
        finally:
            os._exit(code)
    _pid, status, usage = os.wait4(pid, 0)
    if spent is not None:
        spent.append(usage.ru_utime + usage.ru_stime)
    return status


def floor_line(kind: str, name: str, n: int, side: str) -> str:
    """A floor line's label, as plugpull's every-boundary names it: "after effect refund 1", "before model-call 2"."""
    return f"{side} {'effect ' if kind == 'effect' else ''}{name} {n}"


def floor_verdict(resumed: int, path: str, golden: str) -> str:
    """A floor line's verdict from its resume's wait status and its workdir: one refund and the golden answer PASS."""
    if resumed != 0:
        return "ERROR"
    refunds = (read_floor(path, "effects") or "").count("\n")
    return "FAIL" if refunds != 1 else "PASS" if read_floor(path, "result") == golden else "ERROR"


def read_floor(path: str, name: str) -> str | None:
    try:
        with open(os.path.join(path, name)) as f:
            return f.read()
    except FileNotFoundError:
        return None


def floor_copies(
    runs: dict, marks: FloorMarks, steps: list, repeat: int, top: str, golden: str, spent: dict[str, list[float]]
) -> list[dict[str, str]]:
    """The one-phase floor's lines (``floor_run``): a whole start copying its workdir at every side, a resume per copy."""
    results = []
    for round_ in range(repeat):
        marks.copies = os.path.join(top, f"copies-{round_}")
        os.mkdir(marks.copies)
        path = os.path.join(top, f"start-{round_}")
        os.mkdir(path)
        status = floor_phase(runs["start"], marks, path, None, spent["start"])
        copies, marks.copies = marks.copies, None
        for kind, name, n in steps:
            for side in ("before", "after"):
                label = floor_line(kind, name, n, side)
                copy = os.path.join(copies, label)
                verdict = "ERROR"  # the start failed or never reached that side
                if status == 0 and os.path.isdir(copy):
                    verdict = floor_verdict(
                        floor_phase(runs["resume"], marks, copy, None, spent["resume"]), copy, golden
                    )
                results.append({"point": label, "verdict": verdict})
        shutil.rmtree(copies)
        shutil.rmtree(path)
    return results


def floor_run(repeat: int, one_phase: bool = False) -> int:
    """The LangGraph map's cycles with no plugpull: the floor a cycle's CPU cannot go below with two forks.

    One process imports the map's target (``plugpull.targets.langgraph_refund``) and builds its tool and graph
    once with its own ``plugpull_prefork`` hook (what the fork server does), freezes the collector (and, from the
    ``COLLAPSE_AFTER``-th fork on, collapses its memory into huge pages, as the server does), then forks a clean
    ``start`` that lists the run's boundaries. For every boundary and side, ``repeat`` times: a fresh workdir, a forked ``start`` that runs until
    that side of that boundary and SIGKILLs itself (its plugpull calls are ``FloorMarks``'s: no channel, no
    socket), then a forked ``resume`` (``invoke(None, ...)`` from the same SQLite checkpointer) to the end; the
    line is judged from the effects file and the result (one refund and the clean run's answer: PASS; two
    refunds or none: FAIL; a start not killed where aimed or a resume that failed: ERROR). Prints
    ``{"results": [{"point", "verdict"}, ...], "phases": {"start": CPU-s, "resume": CPU-s}}`` (each phase's median).

    ``one_phase``: what a cycle would cost with one forked phase instead of two. Each repeat forks one ``start`` that
    runs to its end and copies its workdir at each side of each boundary (``FloorMarks.copies``), then a ``resume``
    per line on its copy, judged the same way. Not a crash test (nothing is killed); a design's cost.
    """
    import plugpull.targets.langgraph_refund as target

    marks = FloorMarks()
    target.boundary, target.record_effect, target.record_result = (
        marks.boundary(),
        marks.record_effect,
        marks.record_result,
    )
    runs = {phase: target.plugpull_prefork([*LANGGRAPH_ARGV, phase]) for phase in ("start", "resume")}
    gc.freeze()
    results = []
    spent: dict[str, list[float]] = {"start": [], "resume": []}
    with tempfile.TemporaryDirectory(prefix="plugpull-floor-") as top:
        clean = os.path.join(top, "clean")
        os.mkdir(clean)
        status = floor_phase(runs["start"], marks, clean, None)
        golden, steps = read_floor(clean, "result"), read_floor(clean, "steps")
        if status != 0 or golden is None or steps is None:
            raise SystemExit(f"benchmark: the floor's clean run failed: {read_floor(clean, 'error')}")
        if one_phase:
            results = floor_copies(runs, marks, json.loads(steps), repeat, top, golden, spent)
        for line, (kind, name, n) in enumerate([] if one_phase else json.loads(steps) * repeat):
            for side in ("before", "after"):
                path = os.path.join(top, f"{line}-{side}")
                os.mkdir(path)
                label = floor_line(kind, name, n, side)
                started = floor_phase(runs["start"], marks, path, (kind, name, n, side), spent["start"])
                if not (os.WIFSIGNALED(started) and os.WTERMSIG(started) == signal.SIGKILL):
                    verdict = "ERROR"  # the aimed side was not reached
                else:
                    verdict = floor_verdict(
                        floor_phase(runs["resume"], marks, path, None, spent["resume"]), path, golden
                    )
                results.append({"point": label, "verdict": verdict})
                shutil.rmtree(path)
    # The median CPU of a forked start (killed; in the one-phase floor, whole) and of a resume: what a cycle
    # costs without the forks themselves.
    phases = {phase: statistics.median(cpu) for phase, cpu in spent.items() if cpu}
    print(json.dumps({"results": results, "phases": phases}))
    return 0


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
    floor = [
        (label, label)
        for design, label in (("two-phase", FLOOR), ("one-phase", ONE_PHASE_FLOOR))
        if design in (args.floor or [])
    ]
    print(
        f"date {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, load average {load()} (1/5/15 min)"
    )
    print(
        f"every-boundary --fork-server -j 2, --repeat {low} against --repeat {high}, alternated (every other pair in reverse order), {args.pairs} pair(s)"
    )
    print()
    print(
        "| map | code | lines | CPU (user + sys) | wall | marginal CPU/cycle | of it, the measured process's own "
        "| cycles/h (2 cores, CPU) | wall/cycle | verdicts | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    per_cycle: dict[tuple[str, str], list[float]] = {}
    per_own: dict[tuple[str, str], list[float]] = {}
    phases: dict[str, list[dict[str, float]]] = {}
    for name in args.map:
        for pair in range(args.pairs):
            codes = sources + (floor if name == "langgraph" else [])
            # Every other pair in the reverse order: no code is always the one measured after the same other.
            for label, source in codes if pair % 2 == 0 else codes[::-1]:
                a = measure_map(name, low, source)
                b = measure_map(name, high, source)
                cpu, wall = marginal(a, b)
                own = (b.own - a.own) / (b.lines - a.lines)
                per_cycle.setdefault((name, label), []).append(cpu)
                per_own.setdefault((name, label), []).append(own)
                if b.phases:
                    phases.setdefault(label, []).append(b.phases)
                verdicts = ", ".join(f"{k} {v}" for k, v in sorted(b.verdicts.items()))
                print(
                    f"| {name} | {label} | {a.lines} / {b.lines} | {a.cpu:.1f} s / {b.cpu:.1f} s "
                    f"| {a.wall:.1f} s / {b.wall:.1f} s | **{cpu:.3f} s** | {own:.3f} s | {CORE_SECONDS_AN_HOUR / cpu:,.0f} "
                    f"| {wall:.3f} s | {verdicts} | {load()} |",
                    flush=True,
                )
    if args.against or args.floor:
        codes = [label for label, _ in sources]
        print()
        print("Medians; in brackets the measured process's own share (plugpull's harness; the floor's forking parent).")
        print()
        for name in args.map:
            floors = [label for label, _ in floor if (name, label) in per_cycle]
            now = {label: statistics.median(per_cycle[(name, label)]) for label in codes + floors}
            own = {label: statistics.median(per_own[(name, label)]) for label in codes + floors}
            ratios = [f"this / before {now['this'] / now['before']:.2f}"] if args.against else []
            ratios += [f"{code} / {bottom} {now[code] / now[bottom]:.2f}" for bottom in floors for code in codes]
            print(f"| map | marginal CPU/cycle, {' | '.join(codes + floors)} | ratios |")
            print(f"|---|{'---|' * len(codes + floors)}---|")
            cells = [f"{now[label]:.3f} s ({own[label]:.3f})" for label in codes + floors]
            print(f"| {name} | {' | '.join(cells)} | {', '.join(ratios)} |")
    for label, runs in phases.items():
        starts = " / ".join(f"{run['start'] * 1000:.1f}" for run in runs)
        resumes = " / ".join(f"{run['resume'] * 1000:.1f}" for run in runs)
        print()
        print(
            f"The {label}'s forked phases alone (median of each run at the higher count; wait4 of each child): "
            f"start {starts} ms, resume {resumes} ms."
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--skip-suite", action="store_true")
    parser.add_argument("--only-suite", action="store_true")
    parser.add_argument("--cycles", action="store_true", help="marginal CPU per aimed kill-and-resume cycle")
    parser.add_argument("--map", action="append", choices=list(MAPS), help="with --cycles: the maps (default: all)")
    parser.add_argument("--repeat", type=int, nargs=2, default=[1, 4], metavar=("LOW", "HIGH"))
    parser.add_argument("--pairs", type=int, default=1, help="with --cycles: LOW/HIGH pairs per map and code")
    parser.add_argument("--against", metavar="DIR", help="with --cycles: also measure the checkout DIR, alternated")
    parser.add_argument(
        "--floor",
        nargs="*",
        choices=("two-phase", "one-phase"),
        help="with --cycles: also measure the LangGraph map's floor, its target's cycles with no plugpull: two-phase "
        "(the default: a start killed at each side of each boundary, then a resume) and/or one-phase (one whole start "
        "copying its workdir at each side, then a resume per copy: what one forked phase a cycle would cost)",
    )
    args = parser.parse_args(argv)
    if args.floor == []:
        args.floor = ["two-phase"]
    if args.cycles:
        args.map = args.map or list(MAPS)
        if not (1 <= args.repeat[0] < args.repeat[1]):
            parser.error("--repeat LOW HIGH needs 1 <= LOW < HIGH")
        if args.against and not os.path.isdir(os.path.join(args.against, "src", "plugpull")):
            parser.error(f"--against {args.against}: no src/plugpull there")
        return cycles(args)

    from plugpull import suite
    from plugpull.forkserver import ForkServers
    from plugpull.scenarios import Settings
    from plugpull.targets import BUILT_INS

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
