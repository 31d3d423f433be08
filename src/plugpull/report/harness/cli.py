"""``plugpull report``: run the findings notebooks on their pin sets, and the subcommands around their records.

  plugpull report [run] [--finding ID] [--pin NAME] [-p KEY VALUE] [--executor local|dask] [--scheduler ADDRESS]
  plugpull report check [--finding ID]
  plugpull report regenerate
  plugpull report list [--json] [--finding ID] [--pin NAME]
  plugpull report merge DIR [DIR ...]
  plugpull report sweep FINDING [--versions RANGE] [--bisect] [--only-missing] [-p KEY VALUE]
  plugpull report summary FINDING
  plugpull report issue-body FINDING
  plugpull report bundle FINDING [--pin NAME] [--out DIR]
  plugpull report jupyter-path [--finding ID] [--pin NAME]
  plugpull report new ID --agent FILE --scenario NAME --pin DIST==VERSION [--pin ...] [--issue URL] [--agent-args ARGS]
  plugpull report recall [--mutant FRAMEWORK/NAME] [--framework NAME] [-j N] [--executor local|dask]
                         [--scheduler ADDRESS] [--verify-only | --page-only]

``run`` is the default: ``plugpull report --finding ID --pin NAME`` is ``plugpull report run --finding ID --pin NAME``
(what every record's "how to reproduce" cell prints, so it stays). Every subcommand takes ``--root DIR``.
The flags these subcommands replace (``--check``, ``--regenerate``, ``--list``, ``--merge``, ``--sweep``,
``--summary``, ``--issue-body``, ``--bundle``, ``--jupyter-path``) still work for one release: each prints one line
on stderr with the subcommand to type instead, then runs it (docs/report.md, "Subcommands").

Exit codes:
  0  every (finding, pin set) produced its report; check: nothing wrong; regenerate, merge: pages written;
     list, jupyter-path, issue-body: printed; summary, bundle: written; sweep: every release ran or was
     recorded as cannot run, and the summary was written
  1  check found problems (printed one per line: a record that contradicts its finding's claim, a witness that
     disagrees or did not run for a bug or documented claim, a FAIL claim without its kind or support, an invalid
     record, a committed record from uncommitted files, a machine path in a record, a generated page that is
     stale, findings/ over 100 MB); a notebook or an environment failed (named at the end; its HTML and JSON,
     with ``error``, were still written), or a run finding's summary.html could not be written; summary: its
     notebook failed; bundle: a requirements file could not be compiled (nothing written)
  2  bad input, before anything runs (one line): an unknown subcommand or option, an unknown finding or pin set,
     a lock that does not resolve, a parameter the notebook does not declare, no uv; --executor dask without
     distributed or with a scheduler that cannot be reached; merge of an invalid record or of a run id already
     there with other content (nothing is copied); sweep: a --versions range that is not PEP 440, an index that
     cannot list the releases or gives no upload times; bundle of a finding with no bug claim, a bug claim with
     no witness, a pin set with no record or whose newest record does not show the bug, an --out that is not a
     writable folder (nothing written); jupyter-path with no pin set built; new: an id that exists, an agent file
     that does not, an unknown scenario, a --pin that is not DIST==VERSION or does not resolve (nothing written)
  130 interrupted (Ctrl-C)

``recall`` (docs/report.md, "Recall"): 0 its record and docs/finding-recall.md were written; with --verify-only,
every mutant verified (else 1); 2 bad input or a mutant whose patch does not apply.
"""

from __future__ import annotations

import argparse
import ast
import json
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from plugpull.arguments import ArgParser, UsageError
from plugpull.errors import ParseError
from plugpull.report.harness import environment, executors, history, merge, pages, pipeline, recall
from plugpull.report.harness.finding import Finding, FindingError, PinSet, find_root, load_all, read_once

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
PROG = "plugpull report"


class Parser(ArgParser):
    def error(self, message: str) -> None:  # one line, exit 2, no usage dump; the subcommand named
        raise ParseError(message, PROG if self.prog == f"{PROG} run" else self.prog)


# --- the parser -------------------------------------------------------------------------------------------

COMMANDS: dict[str, str] = {
    "run": "run the findings' notebooks on their pin sets and write their records and own pages (the default: "
    "`plugpull report --finding ID` runs ID); README.md, docs/results.md and the scorecard wait for regenerate",
    "check": "validate the records, judge the newest per pin set against the claims and witnesses, check the "
    "claims' kinds and that the generated pages are up to date; run nothing",
    "regenerate": "rewrite the generated notebooks from finding.toml, and every generated page from the records "
    "(docs/results.md, the scorecard, README's and docs' generated sections); run nothing",
    "list": "print the (finding, pin set) jobs a run would make, one per line or --json; run nothing",
    "merge": "copy the run records under each DIR into findings/ (never replacing one), then regenerate the pages",
    "sweep": "run FINDING on every release of its framework in --versions (a pin set generated per release), "
    "then write its summary",
    "summary": "write findings/FINDING/summary.html (versions x lines heatmap, flips) from its records; run nothing",
    "issue-body": "print Markdown for an upstream issue from FINDING's records; run nothing",
    "bundle": "write a folder and .zip per (bug claim's witness, failing release) of FINDING that a maintainer runs "
    "without this repository; run nothing",
    "jupyter-path": "gather the private kernels of the pin sets built so far in one folder and print it, for "
    "JUPYTER_PATH; run nothing",
    "new": "make findings/ID/ from a user's agent (finding.toml with claim stubs, the agent, a witness stub, a locked "
    "pin set per --pin) and its generated notebook and page; run nothing",
    "recall": "run every built-in target of each mutant's framework on its patched release (findings/recall/mutants/) "
    "and the unpatched one, and write docs/finding-recall.md: which planted bugs plugpull catches",
}


def _finding_filter(parser: argparse.ArgumentParser, what: str = "only this finding") -> None:
    parser.add_argument("--finding", action="append", default=[], metavar="ID", help=f"{what} (repeatable)")


def _pin_filter(parser: argparse.ArgumentParser, what: str = "only this pin set") -> None:
    parser.add_argument("--pin", action="append", default=[], metavar="NAME", help=f"{what} (repeatable)")


def _parameters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-p",
        "--parameter",
        action="append",
        nargs=2,
        default=[],
        metavar=("KEY", "VALUE"),
        help="notebook parameter; VALUE is JSON when it parses as JSON, else a string (repeatable)",
    )


def build_parser() -> Parser:
    parser = Parser(
        prog=PROG,
        description="Run every finding's notebook with papermill on each of its pin sets and write "
        "findings/<id>/<date>/<pin>-<run id>.{ipynb,html,json} (never replacing one) and the finding's own pages; "
        "the other subcommands read, check, merge and publish those records.",
        epilog="With no subcommand, `plugpull report [options]` is `plugpull report run [options]`. "
        "`plugpull report SUBCOMMAND --help` shows each one's options. The flags these subcommands replace "
        f"({', '.join(ALIASES)}) still work for one release and say what to type instead. "
        "docs/report.md has the details.",
    )
    common = Parser(add_help=False)
    common.add_argument("--root", type=Path, metavar="DIR", help="repository root (default: found from the cwd)")
    sub = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=Parser)
    made = {
        name: sub.add_parser(name, parents=[common], help=text, description=text[0].upper() + text[1:] + ".")
        for name, text in COMMANDS.items()
    }

    run = made["run"]
    _finding_filter(run)
    _pin_filter(run)
    _parameters(run)
    run.add_argument(
        "--executor",
        choices=("local", "dask"),
        default="local",
        help="where the jobs run: local (default), one after another here; dask, one per worker of --scheduler",
    )
    run.add_argument("--scheduler", metavar="ADDRESS", help="with --executor dask: the scheduler, e.g. tcp://HOST:8786")

    _finding_filter(made["check"], "only this finding's records and claims; the pages are checked whole")

    listing = made["list"]
    _finding_filter(listing)
    _pin_filter(listing)
    listing.add_argument(
        "--json", action="store_true", help="a JSON list of {finding, pin} on one line, for a CI matrix"
    )

    made["merge"].add_argument(
        "folders",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="a split run's findings/<id>/<date>/ folder or an artifact folder",
    )

    sweep = made["sweep"]
    sweep.add_argument("finding", metavar="FINDING")
    sweep.add_argument(
        "--versions",
        default="",
        metavar="RANGE",
        help="a PEP 440 range of releases, e.g. '>=0.20' (default: every release)",
    )
    sweep.add_argument(
        "--bisect",
        action="store_true",
        help="run only the releases needed to find each flip of each claimed line (reusing the newest record of a "
        "release that has one) and say whether both sides of each were run",
    )
    sweep.add_argument(
        "--only-missing",
        action="store_true",
        help="leave out the releases that already have a record (finish an interrupted sweep)",
    )
    _parameters(sweep)

    made["summary"].add_argument("finding", metavar="FINDING")
    made["issue-body"].add_argument("finding", metavar="FINDING")

    bundle = made["bundle"]
    bundle.add_argument("finding", metavar="FINDING")
    _pin_filter(bundle, "only this failing release's pin set")
    bundle.add_argument("--out", type=Path, metavar="DIR", help="where to write (default findings/FINDING/bundles/)")

    _finding_filter(made["jupyter-path"])
    _pin_filter(made["jupyter-path"])

    new = made["new"]
    new.add_argument("id", metavar="ID", help="the finding's id: its folder findings/ID/")
    new.add_argument("--agent", required=True, type=Path, metavar="FILE", help="the agent (docs/agent-protocol.md)")
    new.add_argument("--scenario", required=True, metavar="NAME", help="the scenario the agent runs")
    new.add_argument(
        "--pin", action="append", default=[], metavar="DIST==VERSION", help="a release to run on (repeatable)"
    )
    new.add_argument("--issue", metavar="URL", help="the upstream issue")
    new.add_argument("--agent-args", default="", metavar="ARGS", help="the agent's own arguments, e.g. '--flag'")
    recall.add_arguments(made["recall"])
    return parser


# --- today's flags, one release more -------------------------------------------------------------------------

#: The flags the subcommands replace (docs/report.md, "Subcommands"): flag -> subcommand.
ALIASES = {
    "--check": "check",
    "--regenerate": "regenerate",
    "--list": "list",
    "--merge": "merge",
    "--sweep": "sweep",
    "--summary": "summary",
    "--issue-body": "issue-body",
    "--bundle": "bundle",
    "--jupyter-path": "jupyter-path",
}


def _legacy_parser() -> Parser:
    """Every option ``plugpull report`` took before the subcommands, parsed only to say them as a subcommand."""
    parser = Parser(prog=PROG, add_help=False)
    parser.add_argument("-h", "--help", action="store_true")
    for flag in ("--check", "--regenerate", "--list", "--jupyter-path", "--json", "--bisect", "--only-missing"):
        parser.add_argument(flag, action="store_true")
    parser.add_argument("--merge", nargs="+")
    for flag in ("--sweep", "--summary", "--issue-body", "--bundle", "--versions", "--out", "--root", "--scheduler"):
        parser.add_argument(flag)
    parser.add_argument("--executor")
    parser.add_argument("--finding", action="append", default=[])
    parser.add_argument("--pin", action="append", default=[])
    parser.add_argument("-p", "--parameter", action="append", nargs=2, default=[])
    return parser


def translate(argv: Sequence[str]) -> tuple[list[str], str | None]:
    """``argv`` that names no subcommand, as the subcommand argv it means, and the line saying what to type
    instead when it used a flag the subcommands replace (None for a run: ``run`` is the default)."""
    args = _legacy_parser().parse_args(list(argv))
    modes = [flag for flag in ALIASES if getattr(args, flag[2:].replace("-", "_")) not in (None, False)]
    if not modes:
        return ["run", *argv], None
    if len(modes) > 1:
        raise UsageError(
            f"{' and '.join(modes)} are subcommands now, one at a time: "
            + "; ".join(f"{PROG} {ALIASES[m]}" for m in modes)
        )
    command = ALIASES[modes[0]]
    new = [command]
    value = getattr(args, modes[0][2:].replace("-", "_"))
    if isinstance(value, str):
        new.append(value)
    elif isinstance(value, list):
        new += value
    for flag, values in (("--finding", args.finding), ("--pin", args.pin)):
        for item in values:
            new += [flag, item]
    for key, item in args.parameter:
        new += ["-p", key, item]
    for flag in ("--json", "--bisect", "--only-missing"):
        if getattr(args, flag[2:].replace("-", "_")):
            new.append(flag)
    for flag in ("--versions", "--out", "--executor", "--scheduler", "--root"):
        item = getattr(args, flag[2:])
        if item is not None:
            new += [flag, item]
    if args.help:
        new.append("--help")
    hint = f"{PROG}: {modes[0]} is the subcommand `{command}` now (the flag goes in a later release): {PROG} {shlex.join(new)}"
    return new, hint


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, str | None]:
    """The subcommand and its options, and the line to print when ``argv`` used an alias (else None)."""
    argv = list(argv)
    hint = None
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        raise UsageError(f"unknown subcommand {argv[0]!r}; subcommands: {', '.join(COMMANDS)}")
    if not argv or argv[0] not in (*COMMANDS, "-h", "--help"):
        argv, hint = translate(argv)
    args, extra = build_parser().parse_known_args(argv)
    if extra:  # named after the subcommand, not the top parser that collected them
        raise ParseError(f"unrecognized arguments: {' '.join(extra)}", where(args.command))
    return args, hint


def where(command: str) -> str:
    """How errors name a subcommand: ``plugpull report check``; a run (the default) is ``plugpull report``."""
    return PROG if command == "run" else f"{PROG} {command}"


# --- what the subcommands share and do ----------------------------------------------------------------------


def parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def declared_parameters(finding: Finding) -> dict[str, Any]:
    """The notebook's ``parameters`` cell, name -> default value (None when it is not a literal)."""
    import papermill

    try:
        declared = papermill.inspect_notebook(str(finding.notebook))
    except Exception as exc:
        raise UsageError(f"finding {finding.id!r}: cannot read notebook {finding.notebook}: {exc}") from None
    if not declared:
        raise UsageError(f"finding {finding.id!r}: notebook {finding.notebook} has no cell tagged 'parameters'")
    defaults = {}
    for name, info in declared.items():
        try:
            defaults[name] = ast.literal_eval(info["default"])
        except (ValueError, SyntaxError):
            defaults[name] = None
    return defaults


def _same_kind(value: Any, default: Any) -> bool:
    if default is None or value is None:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) == isinstance(default, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float))
    return isinstance(value, type(default))


def overrides_of(args: argparse.Namespace) -> dict[str, Any]:
    overrides = {key: parse_value(value) for key, value in args.parameter}
    for key in overrides:
        if key in pipeline.RESERVED:
            raise UsageError(f"parameter {key!r} is set by plugpull report itself")
    return overrides


def job_parameters(finding: Finding, overrides: dict[str, Any]) -> dict[str, Any]:
    """finding.toml's parameters with the claims' line repeats and ``-p`` overrides, checked against the
    notebook's ``parameters`` cell (UsageError on a name it does not declare or a value of another kind)."""
    if not finding.notebook.is_file():
        raise UsageError(f"finding {finding.id!r}: notebook {finding.notebook} does not exist")
    declared = declared_parameters(finding)
    for key, value in {**finding.parameters, **overrides}.items():
        if key not in declared:
            raise UsageError(
                f"parameter {key!r} is not declared by {finding.notebook.name}; it declares: "
                f"{', '.join(k for k in declared if k not in pipeline.RESERVED)}"
            )
        if not _same_kind(value, declared[key]):
            raise UsageError(
                f"parameter {key!r}={json.dumps(value)} for {finding.notebook.name}: expected a "
                f"{type(declared[key]).__name__} like {json.dumps(declared[key])}"
            )
    # The timing lines of finding.toml's claims run `repeats` times each (a notebook that does not
    # declare line_repeats runs every line `repeats` times).
    claimed = {"line_repeats": finding.line_repeats()} if "line_repeats" in declared else {}
    return {**finding.parameters, **claimed, **overrides}


def select(args: argparse.Namespace, root: Path, skipped: list[Finding]) -> list[tuple[Finding, PinSet]]:
    """The (finding, pin set) pairs --finding and --pin ask for, in order; unknown names raise UsageError.

    Findings left out because their notebook is not written yet are appended to ``skipped``.
    """
    try:
        findings = load_all(root)
    except FindingError as exc:
        raise UsageError(str(exc)) from None
    unknown = [f for f in args.finding if f not in findings]
    if unknown:
        raise UsageError(f"unknown finding {unknown[0]!r}; findings: {', '.join(findings) or 'none'}")
    chosen = [findings[f] for f in dict.fromkeys(args.finding)]
    if not chosen:
        # Like `plugpull` skipping a framework that is not installed: a finding whose notebook is not
        # written yet (its target has not landed) is skipped with a note, and is an error when asked for.
        chosen = [f for f in findings.values() if f.notebook.is_file()]
        skipped.extend(f for f in findings.values() if not f.notebook.is_file())
    pins_known = {p.name for f in chosen for p in f.pins}
    missing = [p for p in args.pin if p not in pins_known]
    if missing:
        raise UsageError(
            f"unknown pin set {missing[0]!r} for {', '.join(f.id for f in chosen)}; "
            f"pin sets: {', '.join(sorted(pins_known))}"
        )
    return [(f, p) for f in chosen for p in f.pins if not args.pin or p.name in args.pin]


def plan(args: argparse.Namespace, root: Path, skipped: list[Finding]) -> list[pipeline.Job]:
    """Every (finding, pin set) to run with its parameters, each lock hash-pinned; UsageError on bad input
    (:func:`resolve` checks the locks against the index)."""
    pairs = select(args, root, skipped)
    chosen = list({f.id: f for f, _ in pairs}.values())
    overrides = overrides_of(args)
    jobs = []
    for finding in chosen:
        parameters = job_parameters(finding, overrides)
        for pin in [p for f, p in pairs if f.id == finding.id]:
            jobs.append(pipeline.Job(finding, pin, parameters))
    try:
        for job in jobs:
            job.pin.check_locked()
    except FindingError as exc:
        raise UsageError(str(exc)) from None
    return jobs


def resolve(jobs: list[pipeline.Job]) -> None:
    """UsageError unless uv is there and every lock of ``jobs`` resolves (``uv pip install --dry-run``: it asks
    the index unless the environment is built already); the last check before a run, being the slowest."""
    try:
        environment.uv_binary()
        for job in jobs:
            for lock in job.pin.locks():
                environment.check_resolves(lock)
    except FindingError as exc:
        raise UsageError(str(exc)) from None


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_all(jobs: list[pipeline.Job], root: Path, runner: executors.Local | executors.Dask | None = None) -> int:
    """Run ``jobs`` on ``runner`` (default: here, in order), then write the run findings' own pages
    (:func:`finding_pages`); the pages about every finding wait for ``regenerate``."""
    runner = runner or executors.Local()
    # Per finding: a run names a commit only when that commit holds the finding and src/ as they ran.
    sources = {job.finding.id: pipeline.source(root, job.finding) for job in jobs}
    outcomes = []
    began = time.monotonic()
    position = {id(job): i for i, job in enumerate(jobs, 1)}
    job_began: dict[int, float] = {}

    def head(job: pipeline.Job) -> str:
        return f"[{position[id(job)]}/{len(jobs)}] {job.finding.id} {job.pin.name}"

    def progress(job: pipeline.Job, step: str) -> None:
        t = job_began.setdefault(id(job), time.monotonic())
        say(f"{head(job)}: start" if step == "start" else f"{head(job)}: {time.monotonic() - t:6.1f} s  {step}")

    for outcome in runner.outcomes(jobs, root, sources, progress):
        job = outcome.job
        outcomes.append(outcome)
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(outcome.verdicts.items())) or "no results"
        where = outcome.files[".html"].relative_to(root) if ".html" in outcome.files else "?"
        status = f"FAILED: {outcome.error}" if outcome.error else verdicts
        if outcome.worker:
            status += f" (on {outcome.worker})"
        say(
            f"{head(job)}: {outcome.phases.get('total', 0):6.1f} s  {status}; {where}"
            + (f"; claim: {outcome.status}" if outcome.status else "")
        )
    outcomes.sort(key=lambda o: position[id(o.job)])  # a cluster finishes them in any order
    written, failed_pages = finding_pages(root, [job.finding.id for job in jobs])
    say(
        f"\n{len(outcomes)} report(s) in {time.monotonic() - began:.1f} s; wrote "
        + (", ".join(str(p.relative_to(root)) for p in written) or "no page")
        + ". README.md, docs/results.md and the scorecard change on `plugpull report regenerate`"
    )
    say(format_phases(outcomes))
    failed = [o for o in outcomes if o.error]
    if failed:
        say("failed: " + "; ".join(f"{o.job.finding.id} {o.job.pin.name} ({o.error})" for o in failed))
        return EXIT_FAILED
    return EXIT_FAILED if failed_pages else EXIT_OK


def finding_pages(root: Path, finding_ids: list[str]) -> tuple[list[Path], list[str]]:
    """After a run: the pages that are only these findings' (pages.write_findings, and findings/<id>/summary.html
    where the repository has the summary notebook), the paths written and the findings whose summary failed."""
    from plugpull.report.harness import summary

    written = pages.write_findings(root, finding_ids)
    failed = []
    if (root / summary.NOTEBOOK).is_file():
        for finding_id in dict.fromkeys(finding_ids):
            try:
                written.append(summary.write(root, finding_id))
            except RuntimeError as exc:
                say(f"{PROG}: {finding_id}: {exc}")
                failed.append(finding_id)
    return written, failed


PHASES = (
    "venv",
    "kernel_register",
    "plugpull_install",
    "kernel_start",
    "cells",
    "scenario",
    "witnesses",
    "nbconvert",
    "total",
)


def format_phases(outcomes: list[pipeline.Outcome]) -> str:
    """Seconds per phase per report; ``cells`` includes ``scenario`` (the scenario runs in a cell)."""
    name_width = max(len(f"{o.job.finding.id} {o.job.pin.name}") for o in outcomes)
    lines = [f"{'phase seconds':<{name_width}}  " + "  ".join(f"{p:>16}" for p in PHASES)]
    for o in outcomes:
        cells = [f"{o.phases[p]:>16.1f}" if p in o.phases else f"{'-':>16}" for p in PHASES]
        lines.append(f"{o.job.finding.id + ' ' + o.job.pin.name:<{name_width}}  " + "  ".join(cells))
    return "\n".join(lines)


def check(root: Path, only: list[str] | None = None) -> int:
    """``check`` (with --finding: the records and claims of those findings; the pages whole)."""
    chosen = None
    if only:
        try:
            known = load_all(root)
        except FindingError:
            known = None  # pages.check prints why finding.toml does not load (exit 1, as without --finding)
        unknown = [f for f in only if known is not None and f not in known]
        if unknown:
            raise UsageError(f"unknown finding {unknown[0]!r}; findings: {', '.join(known) or 'none'}")
        chosen = set(only)
    problems = pages.check(root, chosen)
    problems += generated_problems(root, chosen)
    for problem in problems:
        print(problem)
    # Inconclusive lines are not wrong: their runs could not tell. They are shown so someone runs more.
    for line in pages.inconclusive(root, chosen):
        print(line)
    for line in pages.legacy_dirty(root, chosen):
        print(line)
    if problems:
        print(f"{PROG} check: {len(problems)} problem(s)", file=sys.stderr)
        return EXIT_FAILED
    newest = [(p, d) for p, d in history.latest(root) if chosen is None or d["finding"] in chosen]
    records = [p for p in history.record_paths(root) if chosen is None or p.parent.parent.name in chosen]
    print(
        f"{PROG} check: {len(records)} records are valid, the newest of "
        f"{len(newest)} (finding, pin set) pairs hold their claims and witnesses, the claims have their kinds, "
        "docs/results.md, the scorecard and the generated sections are up to date"
        + (f" (findings: {', '.join(sorted(chosen))})" if chosen else "")
        + f"; findings/ holds {history.footprint(root)[0] / 1e6:.1f} of its {history.FINDINGS_BUDGET / 1e6:.0f} MB"
    )
    return EXIT_OK


def generated_problems(root: Path, only: set[str] | None = None) -> list[str]:
    """``check``'s lines about what is generated from finding.toml (a stale or missing notebook) and what `report new`
    left to write (a title, a claim stub, a witness stub); none when finding.toml does not load (pages.check says why)."""
    from plugpull.report.harness import scaffold

    try:
        findings = load_all(root)
    except FindingError:
        return []
    chosen = {k: f for k, f in findings.items() if only is None or k in only}
    return [*scaffold.stale(chosen, root), *(line for f in chosen.values() for line in scaffold.todo(f))]


def regenerate(root: Path) -> int:
    """Every generated notebook from its finding.toml, then the pages from the records (pages.write)."""
    from plugpull.report.harness import scaffold

    try:
        notebooks = scaffold.write_notebooks(load_all(root))
        page = pages.write(root)
    except FindingError as exc:
        raise UsageError(str(exc)) from None
    print(
        f"{PROG} regenerate: wrote {page.relative_to(root)}, the scorecard and the generated doc sections"
        + (f"; {len(notebooks)} notebook(s) from finding.toml" if notebooks else "")
    )
    return EXIT_OK


def new_finding(args: argparse.Namespace, root: Path) -> int:
    """``new``: findings/ID/ from a user's agent; every lock is compiled before anything is put in place."""
    from plugpull.report.harness import package_index, scaffold, sweep

    wanted = scaffold.parse_new(root, args.id, args.agent, args.scenario, args.pin, args.issue, args.agent_args)
    try:
        environment.uv_binary()
    except FindingError as exc:
        raise UsageError(str(exc)) from None
    index = package_index.configured(start=root)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"

    def compile_lock(pins: Path, name: str) -> str | None:
        # The oldest Python plugpull supports first, as the committed locks are; a framework that needs a newer one
        # (google-adk 2.x: 3.11) resolves for this interpreter's, which the environment is built with.
        error = sweep.compile_lock(pins, name, sweep.PYTHON_FLOOR, index)
        if error is not None and here != sweep.PYTHON_FLOOR:
            error = sweep.compile_lock(pins, name, here, index)
        return error

    began = time.monotonic()
    finding = scaffold.create(root, wanted, compile_lock)
    print(
        f"{PROG} new: wrote findings/{finding.id}/ (finding.toml, {wanted.agent.name}, witness/witness.py, "
        f"{len(finding.pins)} pin set(s)), {finding.notebook.relative_to(root)} and docs/finding-{finding.id}.md "
        f"in {time.monotonic() - began:.1f} s. Next: {PROG} run --finding {finding.id}, then fill in finding.toml's "
        f"TODOs ({PROG} check --finding {finding.id} lists them)"
    )
    return EXIT_OK


def list_jobs(args: argparse.Namespace, root: Path) -> int:
    """The jobs a run with the same --finding/--pin would make (bad names are exit 2, as for a run)."""
    skipped: list[Finding] = []
    pairs = select(args, root, skipped)
    for finding in {f.id: f for f, _ in pairs}.values():
        if not finding.notebook.is_file():
            raise UsageError(f"finding {finding.id!r}: notebook {finding.notebook} does not exist")
    if not pairs:
        raise UsageError("nothing to run: no finding has the asked-for pin sets")
    if args.json:
        print(json.dumps([{"finding": f.id, "pin": p.name} for f, p in pairs]))
    else:
        for finding, pin in pairs:
            print(f"{finding.id} {pin.name}")
    return EXIT_OK


def jupyter_path(args: argparse.Namespace, root: Path) -> int:
    """The kernels' folders of the selected pin sets whose environment is built, joined for JUPYTER_PATH."""
    pairs = select(args, root, [])
    built = {env.kernel: env for _, pin in pairs if (env := environment.built(pin.requirements)) is not None}
    if not built:
        raise UsageError(
            "no pin set environment is built yet: run `plugpull report run --finding ID --pin NAME` first "
            f"(environments live in {environment.cache_dir() / 'envs'})"
        )
    print(environment.lab_kernels(list(built.values())))
    return EXIT_OK


def merge_records(folders: list[Path], root: Path) -> int:
    try:
        findings = load_all(root)
        new = merge.check(merge.collect(folders), root, findings)
    except (merge.MergeError, FindingError) as exc:
        raise UsageError(str(exc)) from None
    merge.place(new, root)
    page = pages.write(root)
    print(
        f"{PROG} merge: {len(new)} new record(s) from {len(folders)} folder(s); "
        f"wrote {page.relative_to(root)}, the scorecard and the generated doc sections"
    )
    return EXIT_OK


def _finding(root: Path, finding_id: str) -> Finding:
    try:
        findings = load_all(root)
    except FindingError as exc:
        raise UsageError(str(exc)) from None
    if finding_id not in findings:
        raise UsageError(f"unknown finding {finding_id!r}; findings: {', '.join(findings) or 'none'}")
    return findings[finding_id]


def write_bundles(root: Path, finding: Finding, pins: list[str], out: Path | None) -> int:
    """``bundle``: plan every bundle first (bad input is exit 2 before anything is compiled), then write them."""
    from plugpull.report.harness import bundle

    try:
        bundles = bundle.plan(finding, pins)
        target = (out if out is not None else bundle.default_out(finding)).absolute()
        bundle.check_out(target)
        environment.uv_binary()
        placed = bundle.write(bundles, target)
    except FindingError as exc:
        raise UsageError(str(exc)) from None
    except bundle.LockError as exc:
        say(f"{PROG} bundle {finding.id}: {exc} (nothing written)")
        return EXIT_FAILED
    for folder in placed:
        files = sorted(p for p in folder.iterdir() if p.is_file())
        size = sum(p.stat().st_size for p in files)
        archive = folder.with_name(folder.name + ".zip")
        shown = folder.relative_to(root) if folder.is_relative_to(root) else folder
        print(
            f"{PROG} bundle: wrote {shown}/ ({len(files)} files, {size / 1024:.0f} KiB) and "
            f"{archive.name} ({archive.stat().st_size / 1024:.0f} KiB)"
        )
    return EXIT_OK


def write_summary(root: Path, finding: Finding) -> int:
    from plugpull.report.harness import summary

    try:
        path = summary.write(root, finding.id)
    except RuntimeError as exc:
        say(f"plugpull report: {exc}")
        return EXIT_FAILED
    say(f"plugpull report: wrote {path.relative_to(root)}")
    return EXIT_OK


def run_sweep(args: argparse.Namespace, root: Path, finding: Finding) -> int:
    from plugpull.report.harness import package_index, sweep

    parameters = job_parameters(finding, overrides_of(args))
    try:
        if any(pin.npm is not None for pin in finding.pins):  # an npm framework: its releases on the npm registry
            from plugpull.report.harness import npm

            sweep.select([], args.versions)
            project = npm.releases(finding.framework)
            versions = sweep.select(project.versions, args.versions)
            if not versions:
                raise FindingError(f"no release of {finding.framework} in {args.versions!r} on {project.shown}")
        else:
            environment.uv_binary()
            project, versions = sweep.listed(finding.framework, args.versions, package_index.configured(start=root))
    except FindingError as exc:
        raise UsageError(str(exc)) from None
    commit = pipeline.source(root, finding)
    outcomes: list[pipeline.Outcome] = []
    began = time.monotonic()

    def run_pin(pin: PinSet, error: str | None) -> None:
        job = pipeline.Job(finding, pin, parameters)
        head = f"[{len(outcomes) + 1}] {finding.id} {pin.name}"

        def make_env(job: pipeline.Job) -> environment.KernelEnv:
            if error is not None:
                raise RuntimeError(error)  # recorded as this release's "cannot run" reason
            job.pin.check_locked()
            return pipeline.locked_env(job)

        started = time.monotonic()
        outcome = pipeline.run(
            job,
            commit=commit,
            make_env=make_env,
            progress=lambda s: say(f"{head}: {time.monotonic() - started:6.1f} s  {s}"),
        )
        outcomes.append(outcome)
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(outcome.verdicts.items())) or "no results"
        status = f"cannot run: {outcome.error}" if outcome.error else verdicts
        say(f"{head}: {outcome.phases.get('total', 0):6.1f} s  {status}")

    sweep.run(
        finding,
        spec=args.versions,
        bisect=args.bisect,
        run_pin=run_pin,
        project=project,
        versions=versions,
        say=say,
        only_missing=args.only_missing,
    )
    wall = time.monotonic() - began
    scenarios = sum(o.phases.get("scenario", 0.0) for o in outcomes)
    built = sum(o.phases.get("venv", 0.0) + o.phases.get("kernel_register", 0.0) for o in outcomes)
    say(
        f"\n{len(outcomes)} run(s) in {wall:.1f} s: scenarios {scenarios:.1f} s, environments built {built:.1f} s, "
        f"outside the scenarios {wall - scenarios:.1f} s ({(wall - scenarios) / wall:.0%} of the wall time)"
    )
    if outcomes:
        say(format_phases(outcomes))
    pages.write_findings(root, [finding.id])  # its own pages; the others wait for `report regenerate`
    # A release that cannot run is a result of the sweep, not a failure of it; a summary that fails is.
    return write_summary(root, finding)


# --- the subcommands ------------------------------------------------------------------------------------------


def _run(args: argparse.Namespace, root: Path) -> int:
    if args.scheduler and args.executor != "dask":
        raise UsageError("--scheduler goes with --executor dask")
    if args.executor == "dask" and not args.scheduler:
        raise UsageError("--executor dask needs --scheduler ADDRESS (e.g. tcp://HOST:8786)")
    skipped: list[Finding] = []
    jobs = plan(args, root, skipped)
    for finding in skipped:
        say(f"{PROG}: skipping {finding.id}: no notebook {finding.notebook.relative_to(root)} yet")
    if not jobs:
        raise UsageError("nothing to run: no finding has the asked-for pin sets")
    # A scheduler that cannot be reached is found in seconds, before the locks are resolved against the index.
    runner = executors.Dask(args.scheduler) if args.executor == "dask" else executors.Local()
    try:
        resolve(jobs)
        return run_all(jobs, root, runner)
    finally:
        runner.close()


def _issue_body(args: argparse.Namespace, root: Path) -> int:
    from plugpull.report.harness import issue_body

    print(issue_body.render(root, _finding(root, args.finding)), end="")
    return EXIT_OK


def _reading_once(command: Callable[..., int], *args: Any) -> int:
    with read_once():
        return command(*args)


HANDLERS: dict[str, Callable[[argparse.Namespace, Path], int]] = {
    "run": _run,
    # Neither writes a finding.toml or a record: each is read once (finding.read_once).
    "check": lambda args, root: _reading_once(check, root, args.finding),
    "regenerate": lambda args, root: _reading_once(regenerate, root),
    "list": list_jobs,
    "merge": lambda args, root: merge_records(args.folders, root),
    "sweep": lambda args, root: run_sweep(args, root, _finding(root, args.finding)),
    "summary": lambda args, root: write_summary(root, _finding(root, args.finding)),
    "issue-body": _issue_body,
    "bundle": lambda args, root: write_bundles(root, _finding(root, args.finding), args.pin, args.out),
    "jupyter-path": jupyter_path,
    "new": new_finding,
    "recall": lambda args, root: recall.main(args, root),
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = PROG
    try:
        args, hint = parse(argv)
        prog = where(args.command)
        root = args.root or find_root(Path.cwd())
        if root is None or not (root / "findings").is_dir():
            raise UsageError("no findings/ folder here or above; run from the plugpull repository or pass --root")
        code = HANDLERS[args.command](args, root.resolve())
        if hint is not None:  # after the command's own output; bad input stays one line (below)
            print(hint, file=sys.stderr, flush=True)
        return code
    except SystemExit as exc:  # --help printed its text (argparse exits 0 after it)
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    except UsageError as exc:
        print(f"{getattr(exc, 'prog', prog)}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
