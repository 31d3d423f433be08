"""plugpull from a test: run it on an agent command and get the results as objects (the pytest fixture's engine).

    from plugpull.testing import run
    results = run("python my_agent.py", points=["after-effect"])
    assert all(r.verdict == "PASS" for r in results), results

The options are the CLI's (``--scenario``, ``--point``, ``--target``, ``--hold`` ...), parsed and checked by the
same code, so a test runs exactly what ``plugpull`` would. Each result's repr is its result line and the
list's repr is the text output, so an assertion failure reads like ``plugpull``'s own output.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields

from plugpull.rendering import format_text, shown_point, shown_target
from plugpull.results import Result, Verdict


class RunResult(Result):
    """A result whose repr is its result line: ``FAIL   kill-mid-tool  after-effect refund#1  ...  message``."""

    def __repr__(self) -> str:
        return "  ".join(
            [f"{self.verdict.value:<5}", self.scenario, shown_point(self), shown_target(self), self.message]
        )

    __str__ = __repr__

    @classmethod
    def of(cls, result: Result) -> RunResult:
        return cls(**{f.name: getattr(result, f.name) for f in fields(Result)})


class Results(list):
    """The results of one run, in plugpull's order; its repr is plugpull's text output (line, summary, notes, stderr)."""

    def __repr__(self) -> str:
        return format_text(list(self)) if self else "(no results)"

    __str__ = __repr__

    @property
    def passed(self) -> bool:
        """Every line PASS (and at least one line ran)."""
        return bool(self) and all(r.verdict is Verdict.PASS for r in self)

    def failed(self) -> Results:
        """The lines that are not PASS (FAIL and ERROR)."""
        return Results(r for r in self if r.verdict is not Verdict.PASS)


def words(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def argv_for(
    command: str | Iterable[str] | None = None,
    *,
    target: str | Iterable[str] | None = None,
    scenario: str | None = None,
    points: str | Iterable[str] | None = None,
    hold: str | None = None,
    timeout: float = 120.0,
    repeat: int = 1,
    jobs: int = 1,
    fork_server: bool = False,
    workdir: str | None = None,
    keep_workdir: bool = False,
) -> list[str]:
    """The ``plugpull`` command line these options mean."""
    argv: list[str] = []
    for c in words(command):
        argv += ["--agent", c]
    for t in words(target):
        argv += ["--target", t]
    if scenario is not None:
        argv += ["--scenario", scenario]
    for p in words(points):
        argv += ["--point", p]
    if hold is not None:
        argv += ["--hold", hold]
    argv += ["--timeout", str(timeout), "--repeat", str(repeat), "--jobs", str(jobs)]
    if fork_server:
        argv.append("--fork-server")
    if workdir is not None:
        argv += ["--workdir", workdir]
    if keep_workdir:
        argv.append("--keep-workdir")
    return argv


def run(command: str | Iterable[str] | None = None, **options) -> Results:
    """Run plugpull on ``command`` (an ``--agent`` command, or several) with the CLI's options; the results.

    Bad options raise :class:`plugpull.arguments.UsageError` with the CLI's one-line message. On Ctrl-C the
    targets' process groups are killed before the interrupt goes on (they run in their own sessions).
    """
    from plugpull import cli

    args = cli.build_parser().parse_args(argv_for(command, **options))
    targets = cli.select_targets(args)
    try:
        results = cli.run(args, targets, show_progress=False)
    except KeyboardInterrupt:
        from plugpull import process

        process.stop_all()
        raise
    return Results(RunResult.of(r) for r in results)
