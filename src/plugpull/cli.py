"""The `plugpull` command: parse arguments, run scenarios, print results. No scenario logic.

Exit codes (docs/cli.md, which also lists every option and which scenarios read it):
  0  every result is PASS, or FAILs without --strict
  1  --strict and at least one FAIL
  2  any ERROR, bad input, an asked-for framework that is not installed, or a --junit file that
     cannot be written
  130 interrupted (Ctrl-C); targets and temporary files are cleaned up first
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import datetime, timezone

from plugpull import aim, suite
from plugpull import targets as targets_mod
from plugpull.aim import Aim
from plugpull.arguments import ArgParser
from plugpull.errors import UsageError
from plugpull.rendering import closing_line, format_coverage, format_tally, format_text, tour_line
from plugpull.results import Result, Verdict, tally, to_document
from plugpull.scenarios import Runtime, Settings
from plugpull.scenarios.contract import Scenario
from plugpull.scenarios.registry import DEFAULT_SCENARIO, REGISTRY

EXIT_OK, EXIT_FAIL, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130

#: Lines at once a core in the default run (plain ``plugpull`` and ``plugpull --all``): a forked line spends most
#: of its wall time waiting (a SIGKILL's proof, a phase's grace, a gate its racing phases wait at), which a second
#: line on the same core fills (docs/performance.md).
DEFAULT_RUN_JOBS = 2


#: ``plugpull report``'s subcommands (src/plugpull/report/harness/cli.py COMMANDS, which tests/test_cli.py
#: holds this to), named in --help without importing the report harness for every run.
REPORT_SUBCOMMANDS = (
    "run",
    "check",
    "regenerate",
    "list",
    "merge",
    "sweep",
    "summary",
    "issue-body",
    "bundle",
    "jupyter-path",
    "new",
    "recall",
)

USAGE = (
    "plugpull [--target NAME]... [--agent COMMAND]... [--scenario NAME] [--point POINT]... [options]\n"
    "       plugpull report SUBCOMMAND [options]     (findings: plugpull report --help)"
)


def read_by(option: str) -> str:
    """The scenarios that read ``option`` (a Settings field), as their contract declares, for --help."""
    return ", ".join(scenario.name for scenario in REGISTRY if option in scenario.read_options)


def build_parser() -> ArgParser:
    parser = ArgParser(
        prog="plugpull",
        usage=USAGE,
        description="Break an agent run on purpose and check that its framework recovers without losing "
        "or repeating side effects. `plugpull report SUBCOMMAND` runs and checks the findings (reproducible "
        "claims about framework releases, each in a locked environment): "
        + ", ".join(REPORT_SUBCOMMANDS)
        + "; `plugpull report --help`, docs/report.md.",
        epilog="exit codes: 0 no ERROR (FAILs too, unless --strict); 1 --strict and a FAIL; 2 an ERROR or bad "
        "input; 130 interrupted. Findings: plugpull report --help. Every option: docs/cli.md",
    )
    parser.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="NAME",
        help=f"built-in target to run (repeatable): {', '.join(targets_mod.BUILT_INS)}",
    )
    parser.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="COMMAND",
        help="your agent: plugpull runs 'COMMAND start' and 'COMMAND resume' (repeatable)"
        + "".join(f"; with --scenario {s.name} {s.agent_usage}" for s in REGISTRY if s.agent_usage),
    )
    parser.add_argument(
        "--scenario",
        default=None,
        choices=REGISTRY.names(),
        help=f"the scenario --agent targets run (default {DEFAULT_SCENARIO}); alone, the built-in targets made "
        "for it. The commands each runs: "
        + "; ".join(f"{scenario.name}: COMMAND {'/'.join(scenario.phases)}" for scenario in REGISTRY),
    )
    parser.add_argument(
        "--point",
        action="append",
        default=[],
        choices=suite.all_points(),
        help="fault point (repeatable; default: every point of each scenario"
        + "".join(f", {s.name} only {'/'.join(s.default_points)}" for s in REGISTRY if s.default_points)
        + ")",
    )
    aim.add_options(parser, read_by)  # where the fault lands: --hold, --sibling, --save, --boundary, ...
    parser.add_argument("--json", action="store_true", help='print {"schema": 3, "results": [...]}')
    parser.add_argument("--strict", action="store_true", help="exit 1 when any result is FAIL")
    parser.add_argument(
        "--junit",
        metavar="FILE",
        default=None,
        help="also write the results as JUnit XML to FILE (one testcase per line), for CI test reports",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="per phase: start reaching the tool, resume finishing (default 120)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help="run every line N times and print verdict counts per line"
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="run N lines at once, each with its own channel and workdir (default 1; the default run: "
        f"{DEFAULT_RUN_JOBS} a core)",
    )
    parser.add_argument(
        "--fork-server",
        action="store_true",
        help="fork built-in Python targets from a process that imported the framework once "
        "(faster sweeps; see docs/DECISIONS.md for what differs from a cold start); the default run does",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="with no --target, --agent, --scenario or --point: every line of every installed built-in target, "
        "not the tour (a FAIL and a PASS per framework and scenario) that plain `plugpull` runs",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="the default run (plugpull, plugpull --all): start every phase as a fresh interpreter, as a deploy "
        "does, instead of forking the built-in targets from a fork server",
    )
    parser.add_argument(
        "--workdir",
        metavar="DIR",
        default=None,
        help="where each line's PLUGPULL_WORKDIR is created (default: the system temp dir; made if missing)",
    )
    parser.add_argument(
        "--keep-workdir", action="store_true", help="keep each line's PLUGPULL_WORKDIR and print where it is"
    )
    for scenario in REGISTRY:  # the options scenarios own (Scenario.add_options), each in its group
        scenario.add_options(parser)
    return parser


#: The common options that choose lines (argparse attribute, flag): with none of them, no aim (plugpull.aim.FLAGS)
#: and no scenario's own option, the run is the default run (check_default_run).
SELECTING = (("target", "--target"), ("agent", "--agent"), ("scenario", "--scenario"), ("point", "--point"))

#: Whole-number and positive options: (attribute, least value, the one-line error).
RANGES = (
    ("repeat", 1, "--repeat must be a whole number >= 1"),
    ("jobs", 1, "--jobs must be a whole number >= 1"),
)


def check_ranges(args: argparse.Namespace) -> None:
    """The range checks, once for every selection."""
    aim.check_ranges(args)
    for attribute, least, message in RANGES:
        value = getattr(args, attribute, least)
        if value is not None and value < least:
            raise UsageError(message)
    if not 0 < args.timeout < float("inf"):  # nan fails both comparisons
        raise UsageError("--timeout must be a positive number of seconds")


def select_targets(args: argparse.Namespace) -> list[targets_mod.Target]:
    """The targets to run, every input checked first (bad input is a UsageError, and nothing has run)."""
    check_ranges(args)
    scenario = selected_scenario(args)
    check_default_run(args)
    chosen = built_in_targets(args, scenario)
    chosen += (scenario or REGISTRY[DEFAULT_SCENARIO]).agents(args.agent)
    return check_options(args, chosen)


def selecting(args: argparse.Namespace) -> list[str]:
    """The options given that choose lines themselves (a target, a scenario, a point, a scenario's option)."""
    flags = [flag for attribute, flag in SELECTING if getattr(args, attribute, None)]
    owned = [scenario.flag(name) for scenario in REGISTRY for name in scenario.options_given(args)]
    return flags + [f.flag for f in aim.given(args)] + owned


def check_default_run(args: argparse.Namespace) -> None:
    """Settle the default run: with no selecting option, plain ``plugpull`` runs the tour and ``--all`` every line,
    both forked from fork servers (unless ``--cold``) and ``DEFAULT_RUN_JOBS`` lines a core (unless ``-j``); a
    selection runs as it always did (cold, one line at a time, unless ``--fork-server`` or ``-j``)."""
    chosen = selecting(args)
    default_run = not chosen
    every, cold = getattr(args, "all", False), getattr(args, "cold", False)
    if every and chosen:
        raise UsageError(f"--all runs every line of the default run; {chosen[0]} chooses the lines itself: give one")
    if cold and not default_run:
        raise UsageError(
            f"--cold applies to the default run (plugpull, plugpull --all); with {chosen[0]} the phases start cold "
            "unless --fork-server"
        )
    if cold and getattr(args, "fork_server", False):
        raise UsageError("--cold and --fork-server contradict each other: give one")
    args.tour = default_run and not every
    if default_run and not cold:
        args.fork_server = True
    if getattr(args, "jobs", None) is None:
        args.jobs = DEFAULT_RUN_JOBS * cores() if default_run else 1


def cores() -> int:
    """The processors this process may run on (its affinity where the OS says, else every one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def selected_scenario(args: argparse.Namespace) -> Scenario | None:
    """``--scenario``, or the scenario an option given without it selects (``Scenario.selected_by``)."""
    if args.scenario is None:
        for scenario in REGISTRY:
            if any(aim.flag_of(option).given(args) for option in scenario.selected_by):
                args.scenario = scenario.name
    return None if args.scenario is None else REGISTRY[args.scenario]


def built_in_targets(args: argparse.Namespace, scenario: Scenario | None) -> list[targets_mod.Target]:
    """The built-in variants named with --target; without --target or --agent, every built-in (with
    --scenario, those the scenario runs by default), each as ``scenario`` adopts it."""
    unknown = [n for n in args.target if n not in targets_mod.BUILT_INS]
    if unknown:
        raise UsageError(f"unknown target {unknown[0]!r}; known targets: {', '.join(targets_mod.BUILT_INS)}")
    if args.target or args.agent:
        names = list(args.target)
    elif scenario is None:
        names = list(targets_mod.BUILT_INS)
    elif scenario.default_targets is not None:
        names = list(scenario.default_targets)
    else:  # `plugpull --scenario S` alone runs the built-in targets made for S.
        names = [n for n, b in targets_mod.BUILT_INS.items() if b.variants[0].scenario == scenario.name]
    chosen: list[targets_mod.Target] = []
    for name in dict.fromkeys(names):
        built_in = targets_mod.BUILT_INS[name]
        variants = adopted_variants(built_in, scenario)
        if scenario is not None and not variants and args.target:
            raise UsageError(
                f"target {name!r} has no {scenario.name} lines; the targets that have them: "
                + ", ".join(targets_with(scenario))
            )
        if not built_in.installed():
            from plugpull.targets.installation import how_to_install

            if args.target:
                raise UsageError(
                    f"target {name!r} needs {built_in.module!r}, which is not installed: {how_to_install(built_in.extra)}"
                )
            print(
                f"plugpull: skipping {name}: {built_in.module} is not installed ({how_to_install(built_in.extra)})",
                file=sys.stderr,
            )
            continue
        absent = built_in.missing_program()
        if absent is not None:
            if args.target:
                raise UsageError(f"target {name!r} cannot run here: {absent}")
            print(f"plugpull: skipping {name}: {absent}", file=sys.stderr)
            continue
        missing = built_in.server_missing()
        if missing is not None:
            if args.target:
                raise UsageError(missing)
            print(f"plugpull: skipping {name}: {missing}", file=sys.stderr)
            continue
        chosen.extend(variants)
    return chosen


def adopted_variants(built_in: targets_mod.BuiltIn, scenario: Scenario | None) -> list[targets_mod.Target]:
    """A built-in's variants as ``scenario`` runs them (all of them without one): those it adopts and that then run
    it. A variant a scenario leaves as it is runs its own scenario, and a user who asked for another gets an error,
    not the lines of the scenario that variant was made for."""
    variants = list(built_in.variants)
    if scenario is None:
        return variants
    adopted = (scenario.adopt(v, REGISTRY.get(v.scenario)) for v in variants)
    return [v for v in adopted if v is not None and v.scenario == scenario.name]


def targets_with(scenario: Scenario) -> list[str]:
    """The built-in targets that have lines of ``scenario`` (installed here or not), for the error that names them."""
    names = []
    for name, built_in in targets_mod.BUILT_INS.items():
        try:
            if adopted_variants(built_in, scenario):
                names.append(name)
        except UsageError:  # a variant the scenario refuses outright (its message names why)
            continue
    return names


def check_options(args: argparse.Namespace, chosen: list[targets_mod.Target]) -> list[targets_mod.Target]:
    """The options that apply to every selection; the chosen targets back when they are valid."""
    scenarios = [REGISTRY[name] for name in dict.fromkeys(t.scenario for t in chosen)]
    for flag in aim.given(args):
        check_applies(flag, scenarios)
    args.scenario_options = own_options(args, scenarios)
    check_holds(aim.held_calls(args), scenarios)
    args.aim = aim.from_args(args)
    points = list(getattr(args, "point", None) or [])
    for scenario in scenarios:
        points = scenario.points_for(points, settings_of(args))
    args.point = points
    why = suite.unselected_points(chosen, points)
    if why is not None:
        raise UsageError(why)
    junit = getattr(args, "junit", None)
    if junit is not None:
        from plugpull.junit import check_writable

        why = check_writable(junit)
        if why is not None:
            raise UsageError(f"--junit {junit!r} {why}")
    if args.workdir is not None:  # last: it may create the directory, and bad input leaves nothing behind
        check_writable_dir(args.workdir)
    return chosen


def own_options(args: argparse.Namespace, scenarios: list[Scenario]) -> dict[str, object]:
    """The options scenarios own (Scenario.Options), by scenario: one given for a scenario no selected target runs
    is bad input, as an option of Settings is (it would change nothing)."""
    owned: dict[str, object] = {}
    for scenario in REGISTRY:
        values = scenario.options_given(args)
        if values and scenario not in scenarios:
            flag = scenario.flag(next(iter(values)))
            raise UsageError(f"{flag} applies to {scenario.name}; no selected target runs it")
        if scenario in scenarios and scenario.Options is not None:
            owned[scenario.name] = scenario.options_from(values)
    return owned


def check_holds(holds: tuple[tuple[str, int], ...], scenarios: list[Scenario]) -> None:
    """A repeated --hold makes one line per held call: only the scenarios that read ``holds`` run such lines."""
    if len(holds) > 1:
        single = [s.name for s in scenarios if s.holds_calls and "holds" not in s.read_options]
        if single:
            raise UsageError(
                f"--hold given {len(holds)} times: only {read_by('holds')} runs one line per held call; "
                f"{', '.join(single)} holds one (give --hold once)"
            )


def check_applies(flag: aim.Flag, scenarios: list[Scenario]) -> None:
    """An option no selected scenario reads is bad input: it would change nothing."""
    option = flag.field
    if any(option in s.read_options for s in scenarios):
        return
    refusing = next((s for s in scenarios if option in s.refuses), None)
    if refusing is not None:
        raise UsageError(f"{flag.flag} does not apply to {refusing.name} ({refusing.refuses[option]})")
    readers = [s.name for s in REGISTRY if option in s.read_options]
    raise UsageError(
        f"{flag.flag} applies to {', '.join(readers)}; no selected target runs {'one' if len(readers) > 1 else 'it'}"
    )


def settings_of(args: argparse.Namespace) -> Settings:
    """The options the run was given, as every scenario reads them."""
    return Settings(
        timeout=args.timeout,
        keep_workdir=getattr(args, "keep_workdir", False),
        workdir_root=args.workdir,
        aim=getattr(args, "aim", None) or Aim(),
        options=dict(getattr(args, "scenario_options", None) or {}),
    )


def check_writable_dir(path: str) -> None:
    """--workdir must be a writable directory; a missing one is created if its parent exists."""
    import os
    import tempfile

    if not os.path.exists(path):
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise UsageError(f"--workdir {path!r}: its parent {parent!r} is not a directory")
        try:
            os.mkdir(path)
        except OSError as exc:
            raise UsageError(f"--workdir {path!r} cannot be created: {exc.strerror or exc}") from None
    if not os.path.isdir(path):
        raise UsageError(f"--workdir {path!r} is not a directory")
    try:
        tempfile.TemporaryDirectory(dir=path).cleanup()
    except OSError as exc:
        raise UsageError(f"--workdir {path!r} is not writable: {exc.strerror or exc}") from None


def exit_code(results: list[Result], strict: bool) -> int:
    verdicts = {r.verdict for r in results}
    if Verdict.ERROR in verdicts:
        return EXIT_ERROR
    if strict and Verdict.FAIL in verdicts:
        return EXIT_FAIL
    return EXIT_OK


def run(args: argparse.Namespace, targets: list[targets_mod.Target], *, show_progress: bool = True) -> list[Result]:
    """Run the selected lines; with ``show_progress``, live progress on stderr (plugpull.progress)."""
    from contextlib import nullcontext

    from plugpull import progress as progress_mod

    if getattr(args, "tour", False):
        runs = targets_mod.tour_plan(targets, args.repeat)
    else:
        runs = suite.plan(targets, args.point or None, args.repeat)
    shown = progress_mod.choose(len(runs), json_output=args.json) if show_progress else None
    hooks = {}
    if shown is not None:
        hooks = {"progress": shown.started, "finished": shown.finished, "planned": shown.planned}
    forks = None
    if args.fork_server:
        from plugpull.forkserver import ForkServers

        forks = ForkServers()
    with shown if shown is not None else nullcontext(), Runtime(forks=forks) as runtime:
        return suite.run_plan(runs, settings_of(args), runtime, jobs=args.jobs, **hooks)


def write_junit(path: str, results: list[Result], argv: list[str], repeat: int, started: datetime) -> str | None:
    """Write the JUnit file; why it could not be written, or None."""
    from plugpull import junit

    try:
        junit.write(path, junit.document(results, junit.run_properties(results, argv, repeat), started))
    except OSError as exc:
        return f"--junit {path!r} cannot be written: {exc.strerror or exc}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["report"]:  # its own parser and exit codes: src/plugpull/report/harness/cli.py
        from plugpull.report.harness.cli import main as report_main

        return report_main(argv[1:])
    try:
        args = build_parser().parse_args(argv)
        targets = select_targets(args)  # validate every input before anything runs
        if getattr(args, "random_kills", 0):
            print(
                f"plugpull: random kills drawn with --seed {args.aim.seed} (give it again to replay the same kills)",
                file=sys.stderr,
            )
        started = datetime.now(timezone.utc)
        results = run(args, targets)
    except UsageError as exc:
        print(f"plugpull: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        # Targets run in their own sessions, so the terminal's SIGINT never reached them:
        # kill their groups here; each scenario then removes its own socket and workdir.
        from plugpull import process

        process.stop_all()
        print("plugpull: interrupted; targets killed, temporary files removed", file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.json:
        extra = {"tally": tally(results)} if args.repeat > 1 else {}
        print(json.dumps(to_document(results, **extra), indent=2))
    else:
        print(format_tally(results) if args.repeat > 1 else format_text(results))
        coverage = format_coverage(results)
        if coverage:
            print(coverage)
        print(f"\n{closing_line(results, args.strict)}")
        if getattr(args, "tour", False):
            print(tour_line(results))
    if args.junit is not None:
        # Checked before the run; a disk that filled up or a directory removed meanwhile still gets one line.
        why = write_junit(args.junit, results, argv, args.repeat, started)
        if why is not None:
            print(f"plugpull: {why}", file=sys.stderr)
            return EXIT_ERROR
    return exit_code(results, args.strict)


if __name__ == "__main__":
    sys.exit(main())
