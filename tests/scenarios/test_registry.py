"""The built-in scenarios as the registry holds them: in --scenario's order, each with checks that
tests/checks judge on hand-built evidence, and every-boundary adopting the other scenarios' built-ins."""

from pathlib import Path

import pytest

from plugpull import cli
from plugpull.aim import Aim
from plugpull.errors import UsageError
from plugpull.scenarios.registry import DEFAULT_SCENARIO, REGISTRY
from plugpull.targets import BUILT_INS, Target

CHECK_TESTS = Path(__file__).parent.parent / "checks"
DOCS = Path(__file__).parent.parent.parent / "docs"


def test_the_built_in_scenarios_in_the_order_they_are_listed():
    assert REGISTRY.names() == [
        "kill-mid-tool",
        "lost-session-write",
        "resume-after-approval",
        "every-boundary",
        "resume-after-upgrade",
        "power-loss",
        "cancel-mid-stream",
        "tool-error",
    ]
    assert DEFAULT_SCENARIO == "kill-mid-tool"


@pytest.mark.parametrize("scenario", list(REGISTRY), ids=REGISTRY.names())
def test_each_built_in_scenarios_checks_are_pure_functions_judged_in_tests_checks(scenario):
    tested = "\n".join(p.read_text() for p in CHECK_TESTS.glob("test_*.py"))
    for check in scenario.checks:
        assert check.__module__.startswith("plugpull.checks"), check
        assert check.__name__ in tested, f"{check.__name__} is judged on hand-built evidence nowhere in tests/checks"


@pytest.mark.parametrize("scenario", list(REGISTRY), ids=REGISTRY.names())
def test_docs_cli_names_each_built_in_scenario(scenario):
    assert f"| `{scenario.name}` |" in (DOCS / "cli.md").read_text()


def test_docs_cli_lists_every_option_of_the_command():
    text = (DOCS / "cli.md").read_text()
    flags = [s for action in cli.build_parser()._actions for s in action.option_strings if s.startswith("--")]
    assert [f for f in flags if f"`{f}" not in text] == []


def test_every_boundary_kills_an_approval_agent_in_approve_and_a_kill_mid_tool_agent_in_start():
    approval = Target(name="a", argv=("a",), scenario="resume-after-approval")
    killed = Target(name="k", argv=("k",))
    assert REGISTRY.adopt("every-boundary", approval).phases == ("start", "approve", "recover")
    assert REGISTRY.adopt("every-boundary", killed).phases == ("start", "resume")
    assert {REGISTRY.adopt("every-boundary", t).scenario for t in (approval, killed)} == {"every-boundary"}


def test_every_boundary_leaves_out_a_variant_aimed_at_a_save_and_refuses_a_store_target():
    aimed = Target(name="a", argv=("a",), aim=Aim(saves=(("checkpoint-save", 2, "withheld"),)))
    assert REGISTRY.adopt("every-boundary", aimed) is None
    with pytest.raises(UsageError, match="has no kill-and-resume run \\(it is a lost-session-write target\\)"):
        REGISTRY.adopt("every-boundary", BUILT_INS["openai-agents"].variants[0])


def test_resume_after_upgrade_takes_two_commands_and_no_built_in():
    (target,) = REGISTRY["resume-after-upgrade"].agents(["python a.py", "python b.py"])
    assert (target.argv, target.resume_argv) == (("python", "a.py"), ("python", "b.py"))
    with pytest.raises(UsageError, match="; got 1$"):
        REGISTRY["resume-after-upgrade"].agents(["python a.py"])
    with pytest.raises(UsageError, match="not --target"):
        REGISTRY.adopt("resume-after-upgrade", BUILT_INS["langgraph"].variants[0])
