"""The tour plain ``plugpull`` runs (plugpull.targets.registry.TOUR; docs/cli.md, "The default run").

Its lines are chosen, not judged: each is a line the findings claim (a FAIL or a PASS, never a timing line), and per
framework and scenario of the built-ins it has a claimed FAIL and a claimed PASS wherever the claims have both. The
verdicts are still measured (tests/targets/test_tour_run.py runs a tour for real).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator
from pathlib import Path

import pytest

from plugpull.report.harness.finding import load_all
from plugpull.report.kernel.claims import Claim, Expectation
from plugpull.scenarios.registry import REGISTRY
from plugpull.targets import BUILT_INS, TOUR, Target, tour_plan

ROOT = Path(__file__).parent.parent
FINDINGS = load_all(ROOT)


def installed_version(framework: str | None) -> str | None:
    if framework is None:
        return None
    try:
        return importlib.metadata.version(framework)
    except importlib.metadata.PackageNotFoundError:
        return None


def claims_of(target: Target, point: str) -> list[Claim]:
    """The claims of the findings that name ``target``'s built-in which match its line at ``point``."""
    return [
        claim
        for finding in FINDINGS.values()
        if target.name in finding.targets
        for claim in finding.claims
        if claim.matches(target.scenario, point, target.framework, target.options)
    ]


def expectations(claim: Claim, target: Target) -> list[Expectation]:
    """What ``claim`` expects of the installed release of ``target``'s framework; where it is not installed, every
    expectation of the claim (a framework of another environment: CrewAI's, or more-frameworks not synced)."""
    version = installed_version(target.framework)
    if version is None:
        return list(claim.expect)
    found = claim.expectation("", version)
    return [] if found is None else [found]


def verdicts(target: Target, point: str) -> set[str]:
    """The verdicts the non-timing claims expect of this line ("FAIL", "PASS"); empty when none claims it."""
    return {
        e.verdict
        for claim in claims_of(target, point)
        if not claim.timing
        for e in expectations(claim, target)
        if e.verdict is not None
    }


def stops() -> Iterator[tuple[Target, str]]:
    """Every line the tour names: (the stop's variant, point); kill-mid-tool's effect calls are the run's."""
    for stop in TOUR:
        (variant,) = [v for v in BUILT_INS[stop.target].variants if stop.selects(v)]
        for point in stop.points:
            yield variant, point


def test_every_line_of_the_tour_is_a_claimed_verdict_and_none_is_a_timing_line():
    for target, point in stops():
        line = f"{target.name} {target.options} {point}"
        assert point in REGISTRY[target.scenario].points, line
        claims = claims_of(target, point)
        assert claims, f"no finding claims the tour's line {line}"
        # A timing line is one sample of a rate: the tour's closing line says none of its lines is one.
        assert not any(claim.timing for claim in claims), f"the tour's line {line} is a timing line"
        assert all(e.verdict in ("FAIL", "PASS") for c in claims for e in expectations(c, target)), line


def test_per_framework_and_scenario_the_tour_has_a_claimed_fail_and_a_claimed_pass():
    # What the claims have per (framework, scenario), over every variant and point of the built-ins...
    claimed: dict[tuple[str | None, str], set[str]] = {}
    for built_in in BUILT_INS.values():
        for variant in built_in.variants:
            for point in REGISTRY[variant.scenario].points_by_default:
                claimed.setdefault((variant.framework, variant.scenario), set()).update(verdicts(variant, point))
    # ...and what the tour's lines are claimed to show.
    toured: dict[tuple[str | None, str], set[str]] = {}
    for target, point in stops():
        toured.setdefault((target.framework, target.scenario), set()).update(verdicts(target, point))
    missing = {key: have - toured.get(key, set()) for key, have in claimed.items() if have - toured.get(key, set())}
    assert not missing, f"the tour lacks, per (framework, scenario), a claimed {missing}"
    assert ("langgraph", "kill-mid-tool") in toured and toured[("langgraph", "kill-mid-tool")] == {"FAIL", "PASS"}


def test_a_stop_names_exactly_one_variant():
    with pytest.raises(ValueError, match="name 0 variants"):
        BUILT_INS["langgraph"].stop({"durability": "sync"}, "before-effect")
    with pytest.raises(ValueError, match="points"):
        BUILT_INS["langgraph"].stop({"durability": "sync", "key": "none"})
    stop = BUILT_INS["langgraph"].stop({"durability": "sync", "key": "none"}, "after-effect")
    assert [v.options for v in BUILT_INS["langgraph"].variants if stop.selects(v)] == [
        {"durability": "sync", "key": "none"}
    ]


def args_of(*argv: str):
    from plugpull.cli import build_parser, select_targets

    args = build_parser().parse_args(list(argv))
    return args, select_targets(args)


def test_plain_plugpull_plans_the_tour_forked_and_parallel_and_a_selection_runs_as_before(capsys):
    from plugpull import cli

    args, chosen = args_of()
    assert (args.tour, args.fork_server, args.jobs) == (True, True, cli.DEFAULT_RUN_JOBS * cli.cores())
    planned = tour_plan(chosen)
    expected = [(v, p) for v, p in stops() if BUILT_INS[v.name].installed() and v in chosen]
    assert sorted((t.name, str(t.options), p) for t, p in planned) == sorted(
        (t.name, str(t.options), p) for t, p in expected
    )
    assert planned, "no built-in target of the tour is installed"
    # --all: every line of the same targets, forked and parallel too; --cold: started fresh.
    every, chosen_all = args_of("--all")
    assert (every.tour, every.fork_server, every.jobs) == (False, True, args.jobs)
    assert [t.name for t in chosen_all] == [t.name for t in chosen]
    cold, _ = args_of("--cold", "-j", "3")
    assert (cold.tour, cold.fork_server, cold.jobs) == (True, False, 3)
    # A selection: as before this change, cold and one line at a time.
    name = planned[0][0].name
    selected, _ = args_of("--target", name)
    assert (selected.tour, selected.fork_server, selected.jobs) == (False, False, 1)
    scenario, _ = args_of("--scenario", "kill-mid-tool", "--first-effect")
    assert (scenario.tour, scenario.fork_server) == (False, False)
    capsys.readouterr()  # the "skipping X" lines of targets not installed here


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--all", "--target", "langgraph"], "--all runs every line of the default run; --target chooses the lines"),
        (["--all", "--first-effect"], "--all runs every line of the default run; --first-effect chooses the lines"),
        (["--all", "--point", "after-effect"], "--all runs every line of the default run; --point chooses the lines"),
        (["--cold", "--agent", "python agent.py"], "--cold applies to the default run (plugpull, plugpull --all)"),
        (["--cold", "--fork-server"], "--cold and --fork-server contradict each other"),
    ],
)
def test_all_and_cold_with_what_they_cannot_apply_to_are_one_line_exit_2(plugpull_main, tmp_path, argv, says):
    run = plugpull_main(*argv)
    assert run.returncode == 2
    assert run.stderr.startswith(f"plugpull: {says}") and run.stderr.count("\n") == 1, run.stderr
    assert run.stdout == "" and list(tmp_path.iterdir()) == []
