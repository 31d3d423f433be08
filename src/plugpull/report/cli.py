"""``plugpull report``: run the findings notebooks on their pin sets; ``--check`` validates the results.

Exit codes:
  0  every (finding, pin set) produced its report; or --check found nothing wrong; or --regenerate wrote the pages;
     or --list printed the jobs; or --merge copied the records and wrote the pages
  1  --check found problems (printed: a record that contradicts its finding's claim, a witness that disagrees
     or did not run for a bug or documented claim, a FAIL claim without its kind or support, an invalid
     record, a generated page out of date); or a notebook or an environment failed (named at the end;
     its HTML and JSON, with ``error``, were still written)
  2  bad input, before anything runs: unknown finding or pin set, a lock that does not resolve,
     a parameter the notebook does not declare, no uv; --executor dask without distributed or with a
     scheduler that cannot be reached; --merge of an invalid record or of a run id already there with
     other content (nothing is copied)
  130 interrupted (Ctrl-C)
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from plugpull.arguments import ArgParser, UsageError
from plugpull.report import environment, executor, merge, pipeline, results_page
from plugpull.report.finding import Finding, FindingError, PinSet, find_root, load_all

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def build_parser() -> ArgParser:
    parser = ArgParser(
        prog="plugpull report",
        description="Run every finding notebook with papermill on each of "
        "its pin sets; write findings/<id>/<date>/<pin>-<run id>.{ipynb,html,json} (never replacing one) and docs/results.md.",
    )
    parser.add_argument("--finding", action="append", default=[], metavar="ID", help="only this finding (repeatable)")
    parser.add_argument("--pin", action="append", default=[], metavar="NAME", help="only this pin set (repeatable)")
    parser.add_argument(
        "-p",
        "--parameter",
        action="append",
        nargs=2,
        default=[],
        metavar=("KEY", "VALUE"),
        help="notebook parameter; VALUE is JSON when it parses as JSON, else a string (repeatable)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="validate every run record, judge the newest per (finding, pin set) against the finding's claims "
        "(one line per contradiction) and their witnesses, check every FAIL claim's kind and what backs it, and check "
        "that docs/results.md and the generated doc sections are up to date; with --finding, only those findings' "
        "records and claims; run nothing",
    )
    parser.add_argument(
        "--regenerate",
        action="store_true",
        help="rewrite docs/results.md and every generated doc section from the records on disk; run nothing",
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="print the (finding, pin set) jobs that would run (honours --finding and --pin), one per line; run nothing",
    )
    parser.add_argument(
        "--json", action="store_true", help="with --list: a JSON list of {finding, pin}, for a CI matrix"
    )
    parser.add_argument(
        "--jupyter-path",
        action="store_true",
        help="gather the private kernels of the pin sets built so far (honours --finding and --pin) in one folder "
        "and print it, for JUPYTER_PATH; run nothing",
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="copy the run records under each DIR (a split run's findings/<id>/<date>/ folder or an artifact folder) "
        "into findings/, never replacing one, then rewrite docs/results.md and the generated sections; run nothing",
    )
    parser.add_argument(
        "--executor",
        choices=("local", "dask"),
        default="local",
        help="where the jobs run: local (default), one after another here; dask, one per worker of --scheduler",
    )
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", help="with --executor dask: the scheduler, e.g. tcp://HOST:8786"
    )
    parser.add_argument(
        "--sweep",
        metavar="FINDING",
        help="run FINDING on every release of its framework in --versions (the package index lists them; a "
        "hash-locked pin set is generated per release, resolved as of its release date), then write its summary",
    )
    parser.add_argument(
        "--versions",
        default="",
        metavar="RANGE",
        help="with --sweep: a PEP 440 range of releases, e.g. '>=0.20' (default: every release)",
    )
    parser.add_argument(
        "--bisect",
        action="store_true",
        help="with --sweep: run only the releases needed to find each flip of each claimed line "
        "(reusing the newest record of a release that has one) and say whether both sides of each were run",
    )
    parser.add_argument(
        "--only-missing",
        action="store_true",
        help="with --sweep: leave out the releases that already have a record (finish an interrupted sweep)",
    )
    parser.add_argument(
        "--summary",
        metavar="FINDING",
        help="write findings/FINDING/summary.html (versions x lines heatmap, flips) from its records; run nothing",
    )
    parser.add_argument(
        "--issue-body",
        metavar="FINDING",
        help="print Markdown for an upstream issue from FINDING's records (claim, versions x lines, flips, "
        "environment, reproduce command, reports to attach); run nothing",
    )
    parser.add_argument("--root", type=Path, metavar="DIR", help="repository root (default: found from the cwd)")
    return parser


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
    """Every (finding, pin set) to run with its parameters; any bad input raises UsageError first."""
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
        environment.uv_binary()
        for job in jobs:
            for lock in job.pin.locks():
                environment.check_resolves(lock)
    except FindingError as exc:
        raise UsageError(str(exc)) from None
    return jobs


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_all(jobs: list[pipeline.Job], root: Path, runner: executor.Local | executor.Dask | None = None) -> int:
    """Run ``jobs`` on ``runner`` (default: here, in order), then regenerate docs/results.md."""
    runner = runner or executor.Local()
    commit = pipeline.plugpull_commit(root)
    outcomes = []
    began = time.monotonic()
    position = {id(job): i for i, job in enumerate(jobs, 1)}
    job_began: dict[int, float] = {}

    def head(job: pipeline.Job) -> str:
        return f"[{position[id(job)]}/{len(jobs)}] {job.finding.id} {job.pin.name}"

    def progress(job: pipeline.Job, step: str) -> None:
        t = job_began.setdefault(id(job), time.monotonic())
        say(f"{head(job)}: start" if step == "start" else f"{head(job)}: {time.monotonic() - t:6.1f} s  {step}")

    for outcome in runner.outcomes(jobs, root, commit, progress):
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
    page = results_page.write(root)
    say(f"\n{len(outcomes)} report(s) in {time.monotonic() - began:.1f} s; regenerated {page.relative_to(root)}")
    say(format_phases(outcomes))
    failed = [o for o in outcomes if o.error]
    if failed:
        say("failed: " + "; ".join(f"{o.job.finding.id} {o.job.pin.name} ({o.error})" for o in failed))
        return EXIT_FAILED
    return EXIT_OK


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
    """--check (with --finding: the records and claims of those findings; the pages whole)."""
    chosen = None
    if only:
        try:
            known = load_all(root)
        except FindingError:
            known = None  # results_page.check prints why finding.toml does not load (exit 1, as without --finding)
        unknown = [f for f in only if known is not None and f not in known]
        if unknown:
            raise UsageError(f"unknown finding {unknown[0]!r}; findings: {', '.join(known) or 'none'}")
        chosen = set(only)
    problems = results_page.check(root, chosen)
    for problem in problems:
        print(problem)
    # Inconclusive lines are not wrong: their runs could not tell. They are shown so someone runs more.
    for line in results_page.inconclusive(root, chosen):
        print(line)
    if problems:
        print(f"plugpull report --check: {len(problems)} problem(s)", file=sys.stderr)
        return EXIT_FAILED
    newest = [(p, d) for p, d in results_page.latest(root) if chosen is None or d["finding"] in chosen]
    records = [p for p in results_page.record_paths(root) if chosen is None or p.parent.parent.name in chosen]
    print(
        f"plugpull report --check: {len(records)} records are valid, the newest of "
        f"{len(newest)} (finding, pin set) pairs hold their claims and witnesses, the claims have their kinds, "
        "docs/results.md and the generated sections are up to date"
        + (f" (findings: {', '.join(sorted(chosen))})" if chosen else "")
    )
    return EXIT_OK


def regenerate(root: Path) -> int:
    try:
        page = results_page.write(root)
    except FindingError as exc:
        raise UsageError(str(exc)) from None
    print(f"plugpull report --regenerate: wrote {page.relative_to(root)} and the generated doc sections")
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
            "no pin set environment is built yet: run plugpull report --finding ID --pin NAME first "
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
    page = results_page.write(root)
    print(
        f"plugpull report --merge: {len(new)} new record(s) from {len(folders)} folder(s); "
        f"wrote {page.relative_to(root)} and the generated doc sections"
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


def single(args: argparse.Namespace, root: Path) -> int:
    """--sweep, --summary or --issue-body: one finding, one at a time."""
    chosen = [
        flag
        for flag, value in (("--sweep", args.sweep), ("--summary", args.summary), ("--issue-body", args.issue_body))
        if value
    ]
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(chosen)} go one at a time")
    if args.check or args.regenerate or args.finding or args.pin or args.list or args.merge or args.jupyter_path:
        raise UsageError(
            f"{chosen[0]} takes one finding and no --check, --regenerate, --list, --merge, --jupyter-path, "
            "--finding or --pin"
        )
    if args.json or args.executor != "local" or args.scheduler:
        # Sweeps run here: the Dask executor takes the jobs of a plain report run (docs/report.md).
        raise UsageError(f"{chosen[0]} takes no --json, --executor or --scheduler")
    if (args.versions or args.bisect or args.only_missing) and not args.sweep:
        raise UsageError("--versions, --bisect and --only-missing go with --sweep FINDING")
    if args.issue_body:
        from plugpull.report import issue_body

        if args.parameter:
            raise UsageError("--issue-body takes no -p: it reads the records")
        print(issue_body.render(root, _finding(root, args.issue_body)), end="")
        return EXIT_OK
    if args.summary:
        if args.parameter:
            raise UsageError("--summary takes no -p: it reads the records")
        finding = _finding(root, args.summary)
        return write_summary(root, finding)
    return run_sweep(args, root, _finding(root, args.sweep))


def write_summary(root: Path, finding: Finding) -> int:
    from plugpull.report import summary

    try:
        path = summary.write(root, finding.id)
    except RuntimeError as exc:
        say(f"plugpull report: {exc}")
        return EXIT_FAILED
    say(f"plugpull report: wrote {path.relative_to(root)}")
    return EXIT_OK


def run_sweep(args: argparse.Namespace, root: Path, finding: Finding) -> int:
    from plugpull.report import sweep

    parameters = job_parameters(finding, overrides_of(args))
    try:
        environment.uv_binary()
        versions = sweep.released_versions(finding.framework, args.versions)
    except FindingError as exc:
        raise UsageError(str(exc)) from None
    commit = pipeline.plugpull_commit(root)
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
        say=say,
        versions=versions,
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
    results_page.write(root)
    # A release that cannot run is a result of the sweep, not a failure of it; a summary that fails is.
    return write_summary(root, finding)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        root = args.root or find_root(Path.cwd())
        if root is None or not (root / "findings").is_dir():
            raise UsageError("no findings/ folder here or above; run from the plugpull repository or pass --root")
        root = root.resolve()
        if args.sweep or args.summary or args.issue_body:
            return single(args, root)
        if args.versions or args.bisect or args.only_missing:
            raise UsageError("--versions, --bisect and --only-missing go with --sweep FINDING")
        modes = [
            f
            for f, on in (
                ("--check", args.check),
                ("--regenerate", args.regenerate),
                ("--list", args.list),
                ("--merge", args.merge),
                ("--jupyter-path", args.jupyter_path),
            )
            if on
        ]
        if len(modes) > 1:
            raise UsageError(f"{' and '.join(modes)} go one at a time")
        if args.json and not args.list:
            raise UsageError("--json goes with --list")
        if args.scheduler and args.executor != "dask":
            raise UsageError("--scheduler goes with --executor dask")
        if args.executor == "dask" and not args.scheduler:
            raise UsageError("--executor dask needs --scheduler ADDRESS (e.g. tcp://HOST:8786)")
        if modes and args.executor != "local":
            raise UsageError(f"{modes[0]} runs nothing: it takes no --executor")
        if args.check or args.regenerate or args.merge:
            if args.check and not (args.pin or args.parameter):
                return check(root, args.finding)
            if args.finding or args.pin or args.parameter:
                raise UsageError(
                    f"{modes[0]} takes no --finding, --pin or -p: it reads every record"
                    + (" (--check takes --finding)" if args.check else "")
                )
            if args.merge:
                return merge_records(args.merge, root)
            return regenerate(root)
        if args.list or args.jupyter_path:
            if args.parameter:
                raise UsageError(f"{modes[0]} takes no -p: it is about (finding, pin set) pairs")
            return list_jobs(args, root) if args.list else jupyter_path(args, root)
        skipped: list[Finding] = []
        jobs = plan(args, root, skipped)
        for finding in skipped:
            say(f"plugpull report: skipping {finding.id}: no notebook {finding.notebook.relative_to(root)} yet")
        if not jobs:
            raise UsageError("nothing to run: no finding has the asked-for pin sets")
        runner = executor.Dask(args.scheduler) if args.executor == "dask" else executor.Local()
        try:
            return run_all(jobs, root, runner)
        finally:
            runner.close()
    except UsageError as exc:
        print(f"plugpull report: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("plugpull report: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
