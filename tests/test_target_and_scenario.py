"""``--target T --scenario S`` runs S on T, or exits 2 naming the targets that have S: never T's own scenario instead."""

import pytest

from plugpull.cli import build_parser, main, select_targets, targets_with
from plugpull.errors import UsageError
from plugpull.scenarios.registry import REGISTRY
from plugpull.targets import BUILT_INS


def installed_with(scenario) -> list[str]:
    return [n for n in targets_with(scenario) if BUILT_INS[n].installed() and BUILT_INS[n].missing_program() is None]


@pytest.mark.parametrize("scenario", [s for s in REGISTRY if s.name != "resume-after-upgrade"], ids=str)
def test_a_target_that_has_the_scenario_runs_its_lines_only(scenario):
    having = installed_with(scenario)
    if not having:
        pytest.skip(f"no target with {scenario.name} lines is installed here")
    args = build_parser().parse_args(["--target", having[0], "--scenario", scenario.name])
    chosen = select_targets(args)
    assert chosen and {t.scenario for t in chosen} == {scenario.name}


@pytest.mark.parametrize("scenario", [s for s in REGISTRY if s.name != "resume-after-upgrade"], ids=str)
def test_a_target_without_the_scenario_is_one_line_naming_those_that_have_it(scenario, capsys):
    having = targets_with(scenario)
    lacking = [n for n in BUILT_INS if n not in having and BUILT_INS[n].installed()]
    if not lacking:
        pytest.skip(f"every installed built-in has {scenario.name} lines (it adopts them all)")
    assert main(["--target", lacking[0], "--scenario", scenario.name]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    # The scenario's own refusal where it has one (every-boundary: "has no kill-and-resume run (it is a ... target)"),
    # else the targets that have its lines.
    named = (
        f"plugpull: target {lacking[0]!r} has no {scenario.name} lines; the targets that have them: {', '.join(having)}"
    )
    assert line == named or (line.startswith(f"plugpull: target {lacking[0]!r} has no ") and scenario.name not in line)


def test_resume_after_upgrade_refuses_a_target_and_says_how_to_run_it():
    args = build_parser().parse_args(["--target", "langgraph", "--scenario", "resume-after-upgrade"])
    with pytest.raises(UsageError, match="plugpull report --finding resume-after-upgrade"):
        select_targets(args)


def test_the_streaming_target_is_named_when_the_plain_one_is_asked_for_cancel_mid_stream():
    assert "langgraph-stream" in targets_with(REGISTRY["cancel-mid-stream"])
    assert "langgraph" not in targets_with(REGISTRY["cancel-mid-stream"])
