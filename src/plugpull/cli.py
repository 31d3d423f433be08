"""The `plugpull` command: parse arguments, run scenarios, print results. No scenario logic.

Exit codes (docs/cli.md):
  0  every result is PASS, or FAILs without --strict
  1  --strict and at least one FAIL
  2  any ERROR, bad input, an asked-for framework that is not installed, or a --junit file that
     cannot be written
  130 interrupted (Ctrl-C); targets and temporary files are cleaned up first
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import datetime, timezone

from plugpull import suite
from plugpull import targets as targets_mod
from plugpull.arguments import ArgParser, UsageError
from plugpull.rendering import format_tally, format_text
from plugpull.results import Result, Verdict, tally, to_document

EXIT_OK, EXIT_FAIL, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


def build_parser() -> ArgParser:
    parser = ArgParser(
        prog="plugpull",
        description="Break an agent run on purpose and check that its framework recovers without losing "
        "or repeating side effects.",
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
        help="your agent: plugpull runs 'COMMAND start' and 'COMMAND resume' (repeatable); with --scenario "
        "resume-after-upgrade give it exactly twice, one command per environment: the first starts (release A), "
        "the second resumes (release B)",
    )
    parser.add_argument(
        "--scenario",
        default=None,
        choices=list(suite.SCENARIOS),
        help="the scenario --agent targets run (default kill-mid-tool; resume-after-approval "
        "runs COMMAND start/approve/recover; resume-after-upgrade runs CMD_A start, then CMD_B resume); "
        "alone, the built-in targets made for it",
    )
    parser.add_argument(
        "--point",
        action="append",
        default=[],
        choices=suite.all_points(),
        help="fault point (repeatable; default: every point of each scenario)",
    )
    parser.add_argument(
        "--hold",
        metavar="NAME[:N]",
        default=None,
        help="the effect call a kill point holds: the N-th call of effect NAME (default N=1); "
        "without it, the first call of any effect",
    )
    parser.add_argument(
        "--sibling",
        metavar="NAME:STATE",
        default=None,
        help="kill-mid-tool with --hold: another tool call of the same model turn, and its state when the "
        "held call is killed: NAME:finished (its effect call answered) or NAME:running (its effect call "
        "held too, so both are in flight)",
    )
    parser.add_argument(
        "--boundary",
        action="append",
        default=[],
        metavar="WHICH",
        help="every-boundary: the boundaries to kill at (repeatable): a place in the clean run's list (7), "
        "a label ('model-call 2', 'effect refund 1'), a name (model-call) or 'effect'; default: every boundary",
    )
    parser.add_argument(
        "--random-kills",
        type=int,
        default=0,
        metavar="N",
        help="every-boundary: N kills at uniformly random moments of the run, with where each landed "
        "(alone, instead of the aimed kills; with --point before/after, as well)",
    )
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
        default=1,
        metavar="N",
        help="run N points at once, each with its own channel and workdir (default 1)",
    )
    parser.add_argument(
        "--fork-server",
        action="store_true",
        help="fork built-in Python targets from a process that imported the framework once "
        "(faster sweeps; see docs/DECISIONS.md for what differs from a cold start)",
    )
    parser.add_argument(
        "--workdir",
        metavar="DIR",
        default=None,
        help="where each point's PLUGPULL_WORKDIR is created (default: the system temp dir)",
    )
    parser.add_argument(
        "--keep-workdir", action="store_true", help="keep each point's PLUGPULL_WORKDIR and print where it is"
    )
    return parser


def select_targets(args: argparse.Namespace) -> list[targets_mod.Target]:
    if getattr(args, "random_kills", 0) < 0:
        raise UsageError("--random-kills must be a whole number >= 0")
    if getattr(args, "random_kills", 0) and args.scenario is None:
        args.scenario = "every-boundary"
    if args.scenario == "every-boundary":
        return select_boundary_targets(args)
    if getattr(args, "boundary", None):
        raise UsageError("--boundary applies to --scenario every-boundary")
    if args.scenario == UPGRADE:
        return check_options(args, [upgrade_target(args)])
    chosen: list[targets_mod.Target] = []
    unknown = [n for n in args.target if n not in targets_mod.BUILT_INS]
    if unknown:
        raise UsageError(f"unknown target {unknown[0]!r}; known targets: {', '.join(targets_mod.BUILT_INS)}")
    names = args.target or ([] if args.agent else list(targets_mod.BUILT_INS))
    if args.scenario is not None and not args.target:
        # `plugpull --scenario S` alone runs the built-in targets made for S.
        names = [n for n in names if targets_mod.BUILT_INS[n].variants[0].scenario == args.scenario]
    for name in dict.fromkeys(names):
        built_in = targets_mod.BUILT_INS[name]
        if not built_in.installed():
            if args.target:
                raise UsageError(
                    f"target {name!r} needs {built_in.module!r}, which is not installed: "
                    f"pip install 'plugpull[{built_in.extra}]'"
                )
            print(
                f"plugpull: skipping {name}: {built_in.module} is not installed "
                f"(pip install 'plugpull[{built_in.extra}]')",
                file=sys.stderr,
            )
            continue
        chosen.extend(built_in.variants)
    for command in args.agent:
        try:
            chosen.append(targets_mod.agent(command, args.scenario or "kill-mid-tool"))
        except ValueError as exc:
            raise UsageError(f"--agent {command!r}: {exc}") from None
    return check_options(args, chosen)


UPGRADE = "resume-after-upgrade"


def upgrade_target(args: argparse.Namespace) -> targets_mod.Target:
    """resume-after-upgrade takes exactly two --agent commands, one per environment (A starts, B resumes).

    Built-in targets run it through ``plugpull report --finding resume-after-upgrade``, which builds
    both environments from pin sets; here the user's two commands name them.
    """
    usage = f'--scenario {UPGRADE} takes exactly two commands: --agent "CMD_A" --agent "CMD_B" (A starts, B resumes)'
    if args.target:
        raise UsageError(f"{usage}, not --target; built-in targets: plugpull report --finding {UPGRADE}")
    if len(args.agent) != 2:
        raise UsageError(f"{usage}; got {len(args.agent)}")
    try:
        return targets_mod.upgrade_agent(*args.agent)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def check_options(args: argparse.Namespace, chosen: list[targets_mod.Target]) -> list[targets_mod.Target]:
    """The options that apply to every selection; the chosen targets back when they are valid."""
    if args.repeat < 1:
        raise UsageError("--repeat must be a whole number >= 1")
    if args.jobs < 1:
        raise UsageError("--jobs must be a whole number >= 1")
    if args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    hold = getattr(args, "hold", None)
    if hold is not None:
        args.hold = parse_hold(hold)
        if not any(t.scenario in HOLDING_SCENARIOS for t in chosen):
            raise UsageError(f"--hold applies to {', '.join(HOLDING_SCENARIOS)}; no selected target runs one")
    sibling = getattr(args, "sibling", None)
    if sibling is not None:
        args.sibling = parse_sibling(sibling, args.hold)
        if not any(t.scenario == "kill-mid-tool" for t in chosen):
            raise UsageError("--sibling applies to kill-mid-tool; no selected target runs it")
    why = suite.unselected_points(chosen, getattr(args, "point", []) or [])
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


def select_boundary_targets(args: argparse.Namespace) -> list[targets_mod.Target]:
    """Targets for every-boundary: the built-ins' kill-and-resume variants (approval agents killed in approve)."""
    from plugpull.scenarios.every_boundary import as_every_boundary

    unknown = [n for n in args.target if n not in targets_mod.BUILT_INS]
    if unknown:
        raise UsageError(f"unknown target {unknown[0]!r}; known targets: {', '.join(targets_mod.BUILT_INS)}")
    names = args.target or ([] if args.agent else list(targets_mod.BOUNDARY_TARGETS))
    chosen: list[targets_mod.Target] = []
    for name in dict.fromkeys(names):
        built_in = targets_mod.BUILT_INS[name]
        if built_in.variants[0].scenario == "lost-session-write":
            raise UsageError(f"target {name!r} has no kill-and-resume run (it is a lost-session-write target)")
        if not built_in.installed():
            if args.target:
                raise UsageError(
                    f"target {name!r} needs {built_in.module!r}, which is not installed: "
                    f"pip install 'plugpull[{built_in.extra}]'"
                )
            print(f"plugpull: skipping {name}: {built_in.module} is not installed", file=sys.stderr)
            continue
        chosen.extend(as_every_boundary(t) for t in built_in.variants)
    for command in args.agent:
        try:
            chosen.append(targets_mod.agent(command, "every-boundary"))
        except ValueError as exc:
            raise UsageError(f"--agent {command!r}: {exc}") from None
    if args.repeat < 1:
        raise UsageError("--repeat must be a whole number >= 1")
    if args.jobs < 1:
        raise UsageError("--jobs must be a whole number >= 1")
    if args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    if getattr(args, "sibling", None) is not None:
        raise UsageError("--sibling does not apply to every-boundary (it applies to kill-mid-tool)")
    if getattr(args, "hold", None) is not None:
        raise UsageError("--hold does not apply to every-boundary (it holds every boundary in turn; use --boundary)")
    if args.random_kills:
        args.point = [*args.point, "random"] if args.point else ["random"]
    elif "random" in (args.point or []):
        raise UsageError("--point random needs --random-kills N")
    why = suite.unselected_points(chosen, args.point or [])
    if why is not None:
        raise UsageError(why)
    if args.workdir is not None:
        check_writable_dir(args.workdir)
    return chosen


#: Scenarios whose kill points hold an effect call (lost-session-write breaks the store instead).
HOLDING_SCENARIOS = ("kill-mid-tool", "resume-after-approval", "resume-after-upgrade")


def parse_hold(spec: str) -> tuple[str, int]:
    """``NAME[:N]`` -> (NAME, N): hold the N-th call of effect NAME (N counts from 1)."""
    name, sep, nth = spec.rpartition(":")
    if not sep:
        name, nth = spec, "1"
    if not name or not nth.isdigit() or int(nth) < 1:
        raise UsageError(f"--hold {spec!r}: expected NAME or NAME:N with N a whole number >= 1, e.g. charge_card:2")
    return name, int(nth)


def parse_sibling(spec: str, hold: tuple[str, int] | None) -> tuple[str, str]:
    """``NAME:STATE`` -> (NAME, STATE), STATE one of provider.SIBLING_STATES; needs a --hold of another name."""
    from plugpull.provider import SIBLING_STATES

    name, sep, state = spec.rpartition(":")
    if not sep or not name or state not in SIBLING_STATES:
        raise UsageError(
            f"--sibling {spec!r}: expected NAME:STATE with STATE one of {', '.join(SIBLING_STATES)}, "
            "e.g. send_email:finished"
        )
    if hold is None:
        raise UsageError("--sibling needs --hold NAME: the call the kill lands in, beside the sibling")
    if name == hold[0]:
        raise UsageError(f"--sibling {spec!r}: the sibling must be another effect than --hold {hold[0]}")
    return name, state


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
    from plugpull.scenarios import Settings

    settings = Settings(
        timeout=args.timeout,
        keep_workdir=args.keep_workdir,
        workdir_root=args.workdir,
        hold=args.hold,
        sibling=getattr(args, "sibling", None),
        boundaries=tuple(getattr(args, "boundary", ()) or ()),
        random_kills=getattr(args, "random_kills", 0) or 0,
    )
    runs = suite.plan(targets, args.point or None, args.repeat)
    shown = progress_mod.choose(len(runs), json_output=args.json) if show_progress else None
    hooks = {"progress": shown.started, "finished": shown.finished} if shown is not None else {}
    with shown if shown is not None else nullcontext():
        if not args.fork_server:
            return suite.run_plan(runs, settings, jobs=args.jobs, **hooks)
        from plugpull.forkserver import ForkServers

        settings.forks = ForkServers()
        try:
            return suite.run_plan(runs, settings, jobs=args.jobs, **hooks)
        finally:
            settings.forks.close()


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
    if argv[:1] == ["report"]:  # its own parser and exit codes: src/plugpull/report/cli.py
        from plugpull.report.cli import main as report_main

        return report_main(argv[1:])
    try:
        args = build_parser().parse_args(argv)
        targets = select_targets(args)  # validate every input before anything runs
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
    elif args.repeat > 1:
        print(format_tally(results))
    else:
        print(format_text(results))
    if args.junit is not None:
        # Checked before the run; a disk that filled up or a directory removed meanwhile still gets one line.
        why = write_junit(args.junit, results, argv, args.repeat, started)
        if why is not None:
            print(f"plugpull: {why}", file=sys.stderr)
            return EXIT_ERROR
    return exit_code(results, args.strict)


if __name__ == "__main__":
    sys.exit(main())
