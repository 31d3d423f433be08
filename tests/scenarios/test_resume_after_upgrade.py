"""resume-after-upgrade with real processes: start on one release, a real SIGKILL, resume on another."""

import signal
import sys

import pytest

from forked_agents import forked_agent
from installed import requires
from plugpull.results import Verdict
from plugpull.scenarios import Runtime, Settings
from plugpull.scenarios.resume_after_upgrade import run_point
from plugpull.targets import Target, upgrade_targets

FAST = Settings(timeout=60)
AGENT = forked_agent("versioned_framework").argv  # python -m versioned_framework


@pytest.fixture(scope="module")
def runtime(agent_forks):
    """The module's tests share their clean runs; the fake framework's phases fork from the module's server
    (tests/forked_agents.py), each its own group, killed by a real SIGKILL."""
    return Runtime(forks=agent_forks)


def upgrade(start: tuple[str, str], resume: tuple[str, str]) -> Target:
    """versioned_framework.py at release/policy ``start`` for A and ``resume`` for B."""
    return Target(name="agent", argv=(*AGENT, *start), resume_argv=(*AGENT, *resume), scenario="resume-after-upgrade")


@pytest.mark.parametrize("point", ["before-effect", "after-effect"])
def test_a_release_that_loads_the_old_state_finishes_the_run_with_one_effect(point, runtime):
    result = run_point(upgrade(("1.0", "accept"), ("2.0", "accept")), point, FAST, runtime)
    assert result.verdict is Verdict.PASS, result.message
    assert result.evidence["start"]["returncode"] == -signal.SIGKILL
    assert result.evidence["proof"]["caller_group"] == result.evidence["proof"]["group"]
    assert (result.evidence["from_version"], result.evidence["to_version"]) == ("1.0", "2.0")
    assert result.version == "2.0"
    assert result.evidence["counts"] == {"charge": 1}


@pytest.mark.parametrize("point, counts", [("before-effect", {"charge": 0}), ("after-effect", {"charge": 1})])
def test_a_release_that_refuses_the_old_state_fails_as_refused_and_quotes_it(point, counts, runtime):
    result = run_point(upgrade(("1.0", "accept"), ("2.0", "refuse")), point, FAST, runtime)
    assert result.verdict is Verdict.FAIL
    assert result.message.startswith(
        "refused the saved run: 2.0 would not resume what 1.0 saved (exit code 1): "
        "ValueError: state saved by fakefw 1.0 is not compatible with fakefw 2.0; stuck: "
    )
    assert result.evidence["counts"] == counts
    assert "not compatible" in result.stderr  # resume's own account is under the line


def test_the_same_refusing_release_on_both_sides_passes(runtime):
    # The refusal is about the upgrade only: a resume on the release that saved the run goes on.
    result = run_point(upgrade(("2.0", "refuse"), ("2.0", "refuse")), "after-effect", FAST, runtime)
    assert result.verdict is Verdict.PASS, result.message


def test_a_resume_release_that_cannot_import_the_target_is_an_error_not_a_refusal(runtime):
    result = run_point(upgrade(("1.0", "accept"), ("2.0", "broken")), "before-effect", FAST, runtime)
    assert result.verdict is Verdict.ERROR
    assert result.message.startswith("on the resume release (B): a clean run (no kill) ended (exit code 1)")
    assert "cannot import name 'Workflow'" in result.stderr
    assert "resume" not in result.evidence or result.evidence["resume"] is None


def test_a_target_without_a_resume_command_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="two commands"):
        run_point(Target(name="agent", argv=AGENT, scenario="resume-after-upgrade"), "after-effect")


@requires("agent_framework")
def test_the_built_in_agent_framework_upgrade_runs_on_one_release_end_to_end():
    # The plumbing with the real framework, A and B both this environment (the cross-release runs are the
    # finding's records: findings/resume-after-upgrade/).
    control = [t for t in upgrade_targets("agent-framework", sys.executable) if t.options["variant"] == "control"]
    result = run_point(control[0], "after-effect", Settings(timeout=120))
    assert result.verdict is Verdict.PASS, result.message
    assert result.evidence["from_version"] == result.evidence["to_version"] == result.version
    assert result.target == f"agent-framework-core {result.version} -> {result.version} variant=control"
