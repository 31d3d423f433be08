"""plugpull from a test: run it on an agent command and get the results as objects (the pytest fixture's engine).

    from plugpull.testing import run
    results = run("python my_agent.py", points=["after-effect"])
    results.assert_all_pass()            # the message is every line that did not PASS, with its evidence
    results.assert_exactly_once("refund")

One test item per kill point, so CI shows which point broke: ``kill_points(command)`` runs the agent's clean
run once (at collection) and lists its points, each with the options that run it alone::

    @pytest.mark.parametrize("point", kill_points(AGENT), ids=str)
    def test_each_kill_point(plugpull_run, point):
        plugpull_run(AGENT, **point.options).assert_all_pass()

The options are the CLI's (``--scenario``, ``--point``, ``--target``, ``--hold`` ...), parsed and checked by the
same code, so a test runs exactly what ``plugpull`` would. Each result's repr is its result line and the
list's repr is the text output, so an assertion failure reads like ``plugpull``'s own output.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

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

    def assert_all_pass(self) -> None:
        """Raise AssertionError unless every line PASSed; the message is each other line as plugpull prints it
        (the line, the call summary, why an effect counted twice, notes, the target's stderr tail)."""
        __tracebackhide__ = True  # pytest shows the test's line, not this one
        if not self:
            raise AssertionError("plugpull ran no line")
        failed = self.failed()
        if failed:
            raise AssertionError(f"{len(failed)} of {len(self)} plugpull lines did not PASS:\n{format_text(failed)}")

    def assert_exactly_once(self, name: str) -> None:
        """Raise AssertionError unless the provider counted effect ``name`` exactly once on every line.

        Only the count: a line that FAILs for another reason (a result that differs) passes this check. The
        message names each line where it did not hold, with the count and that line's evidence as plugpull prints it.
        """
        __tracebackhide__ = True
        if not self:
            raise AssertionError("plugpull ran no line")
        wrong = [(r, (r.evidence.get("counts") or {}).get(name)) for r in self]
        wrong = [(r, n) for r, n in wrong if n != 1]
        if not wrong:
            return
        if all(n is None for _, n in wrong):
            seen = sorted({k for r in self for k in (r.evidence.get("counts") or {})})
            counted = f"; counted: {', '.join(seen)}" if seen else "; no line counted any effect"
            raise AssertionError(f"{name} was counted on no plugpull line{counted}\n{format_text(list(self))}")
        blocks = [f"the provider saw {'no count of' if n is None else n} {name}:\n{format_text([r])}" for r, n in wrong]
        raise AssertionError(
            f"{name} not done exactly once on {len(wrong)} of {len(self)} plugpull lines:\n" + "\n".join(blocks)
        )


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
    boundary: str | Iterable[str] | None = None,
    sibling: str | None = None,
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
    for b in words(boundary):
        argv += ["--boundary", b]
    if sibling is not None:
        argv += ["--sibling", sibling]
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


@dataclass(frozen=True)
class KillPoint:
    """One kill point of an agent: its name (a test id) and the ``run``/``plugpull_run`` options that run it alone."""

    id: str
    options: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.id


def kill_points(
    command: str, *, scenario: str | None = None, timeout: float = 120.0, workdir: str | None = None
) -> list[KillPoint]:
    """The kill points of an agent, read from one clean run of it (no fault), for one test item each.

    kill-mid-tool: before and after each effect call of the clean run (``after-effect charge_card#1``: the
    options hold that call with ``--hold charge_card:1``); every-boundary: each side of each boundary
    (``after model-call 2``: ``--boundary 'model-call 2' --point after``); any other scenario: its points.
    When the clean run fails, one point ``every point`` runs the agent as given, so the ERROR shows in the
    test, not at collection. Bad options raise :class:`plugpull.arguments.UsageError`.
    """

    from plugpull import cli
    from plugpull.scenarios import Runtime
    from plugpull.scenarios.registry import REGISTRY

    args = cli.build_parser().parse_args(argv_for(command, scenario=scenario, timeout=timeout, workdir=workdir))
    targets = cli.select_targets(args)
    name = targets[0].scenario
    base = {} if scenario is None else {"scenario": scenario}
    if name not in ("kill-mid-tool", "every-boundary"):
        return [KillPoint(p, {**base, "points": p}) for p in REGISTRY[name].points]
    # every-boundary's expansion runs the clean run with boundary marks on and names each boundary ("effect refund 1");
    # kill-mid-tool's points are its effect calls.
    mapping = REGISTRY["every-boundary"]
    target = mapping.adopt(targets[0], REGISTRY.get(name))
    settings = cli.settings_of(args)
    if name == "kill-mid-tool":
        settings = settings.aimed(boundaries=("effect",))
    with Runtime() as runtime:
        lines = mapping.expand(target, ["before", "after"], settings, runtime)
    found = []
    for line in lines:
        side, _, label = line.partition(" ")
        if not label:  # the clean run failed or found no boundary: the points stay unexpanded
            return [KillPoint("every point", base)]
        if name == "every-boundary":
            found.append(KillPoint(line, {**base, "points": side, "boundary": label}))
        else:
            effect, _, nth = label.removeprefix("effect ").rpartition(" ")
            point = f"{side}-effect"
            found.append(KillPoint(f"{point} {effect}#{nth}", {**base, "points": point, "hold": f"{effect}:{nth}"}))
    return found or [KillPoint("every point", base)]
