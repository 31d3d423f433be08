"""every-boundary with real processes: a fake framework whose unsafe boundaries are known, killed at each."""

import functools
import os
import signal
import sys
from pathlib import Path

import pytest

from plugpull import suite
from plugpull.aim import Aim
from plugpull.forkserver import ForkServers
from plugpull.results import Verdict
from plugpull.scenarios import Runtime, Settings
from plugpull.targets import agent

AGENTS = Path(__file__).parent.parent / "agents"
FAST = Settings(timeout=30)
#: The module's fork server: the fake framework's phases (about a hundred) fork from one process that imported it
#: and plugpull once instead of each starting an interpreter; each is still its own group, SIGKILLed for real.
FORKS = ForkServers()


@pytest.fixture(scope="module", autouse=True)
def forked_agents():
    """tests/agents on the targets' PYTHONPATH (``python -m boundary_framework``); the fork server stops at the end."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(AGENTS), before]))
    try:
        yield
    finally:
        FORKS.close()
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def run_scenario(target, points=None, *, settings, jobs=1) -> list:
    """suite.run_scenario with the module's fork server and, as before, a runtime of its own (its own clean run)."""
    return suite.run_scenario(target, points, settings=settings, runtime=Runtime(forks=FORKS), jobs=jobs)


def boundary_framework(variant: str):
    return agent(f"{sys.executable} -m boundary_framework {variant}", "every-boundary")


@functools.cache
def plain_map() -> list:
    """The whole boundary map of the plain fake framework, run once for the two tests that read it."""
    return run_scenario(boundary_framework("plain"), settings=Settings(timeout=30), jobs=2)


def failed(results) -> set[str]:
    return {r.point for r in results if r.verdict is Verdict.FAIL}


def test_the_clean_run_lists_every_boundary_in_order_and_each_line_names_its_place():
    results = plain_map()
    assert [r.point for r in results] == [
        f"{side} {label}"
        for label in (
            "model-call 1",
            "checkpoint-save 1",
            "effect refund 1",
            "checkpoint-save 2",
            "model-call 2",
            "checkpoint-save 3",
        )
        for side in ("before", "after")
    ]
    places = [(r.evidence["boundary"]["index"], r.evidence["boundary"]["of"]) for r in results]
    assert places == [(i, 6) for i in range(1, 7) for _ in range(2)]
    assert all(r.verdict is not Verdict.ERROR for r in results), [r.message for r in results]
    # Every kill is proven as kill-mid-tool's is: the held call's caller in the killed group, SIGKILL.
    for r in results:
        assert r.evidence["start"]["returncode"] == -signal.SIGKILL
        assert r.evidence["proof"]["caller_group"] == r.evidence["proof"]["group"]


def test_the_map_finds_exactly_the_unsafe_boundaries_of_the_fake_framework():
    plain = plain_map()
    assert failed(plain) == {"after effect refund 1", "before checkpoint-save 2"}
    lose = run_scenario(boundary_framework("lose-answer"), settings=Settings(timeout=30), jobs=2)
    assert failed(lose) == {"after effect refund 1", "before checkpoint-save 2", "after checkpoint-save 3"}
    by_point = {r.point: r for r in lose}
    assert "2 refund" in by_point["after effect refund 1"].message
    assert 'result differs from the clean run: $.answer: clean "refunded", resumed null' in (
        by_point["after checkpoint-save 3"].message
    )


def test_boundary_picks_lines_by_place_label_or_name():
    settings = Settings(timeout=30, aim=Aim(boundaries=("3", "model-call")))
    results = run_scenario(boundary_framework("plain"), ["after"], settings=settings)
    assert [r.point for r in results] == ["after model-call 1", "after effect refund 1", "after model-call 2"]


def test_a_boundary_that_matches_nothing_is_one_error_naming_the_clean_runs_boundaries():
    settings = Settings(timeout=30, aim=Aim(boundaries=("tool-call",)))
    [result] = run_scenario(boundary_framework("plain"), ["after"], settings=settings)
    assert result.verdict is Verdict.ERROR
    assert "--boundary tool-call matched no boundary of the clean run: model-call 1, checkpoint-save 1" in (
        result.message
    )


def test_a_double_crash_kills_resume_at_the_same_boundary_then_resumes_again():
    settings = Settings(timeout=30, aim=Aim(boundaries=("effect refund 1", "model-call 1")))
    results = run_scenario(boundary_framework("plain"), ["after-twice"], settings=settings)
    by_point = {r.point: r for r in results}
    twice = by_point["after-twice effect refund 1"]
    assert twice.verdict is Verdict.FAIL
    assert twice.message.startswith("after two kills: effect duplicated: the provider saw 3 refund")
    assert twice.evidence["resume"]["returncode"] == -signal.SIGKILL
    assert twice.evidence["second_proof"]["caller_group"] == twice.evidence["second_proof"]["group"]
    assert twice.evidence["final"]["returncode"] == 0
    model = by_point["after-twice model-call 1"]
    assert model.verdict is Verdict.PASS, model.message
    assert model.message.startswith("after two kills:")


def test_a_double_crash_whose_resume_passes_no_such_boundary_says_no_second_kill():
    settings = Settings(timeout=30, aim=Aim(boundaries=("model-call 2",)))
    [result] = run_scenario(boundary_framework("lose-answer"), ["before-twice"], settings=settings)
    # Resume from "refunded" makes one model call, its first: killed before it, then resumed again.
    assert result.evidence["second_reached"] is True
    settings = Settings(timeout=30, aim=Aim(boundaries=("checkpoint-save 3",)))
    [after] = run_scenario(boundary_framework("plain"), ["after-twice"], settings=settings)
    assert after.verdict is Verdict.PASS
    assert after.message.endswith("(resume passed no checkpoint-save boundary: no second kill)")
    assert after.evidence["second_reached"] is False


def test_random_kills_say_where_each_landed_and_are_judged_like_aimed_ones():
    settings = Settings(timeout=30, aim=Aim(random_kills=4))
    results = run_scenario(boundary_framework("plain"), ["random"], settings=settings, jobs=2)
    assert [r.point for r in results] == ["random 1", "random 2", "random 3", "random 4"]
    for r in results:
        assert r.verdict is not Verdict.ERROR, r.message
        landed = r.evidence["landed"]
        # Drawn inside the clean run's window, from its first boundary to its last.
        assert landed == "after the run ended" or landed.startswith(("between ", "after the last boundary"))
        assert 0 <= r.evidence["boundary"]["fraction"] < 1
        if landed != "after the run ended":
            assert r.evidence["start"]["returncode"] == -signal.SIGKILL
            assert r.evidence["killed_at"] >= 0


def random_kills(seed: int) -> list:
    """Three random kills of the slow agent from ``seed``, each run with its own clean run."""
    settings = Settings(timeout=30, aim=Aim(random_kills=3, seed=seed))
    return run_scenario(boundary_framework("slow"), ["random"], settings=settings)


@functools.cache
def seeded_155() -> list:
    """random_kills(155) run once for the tests that read one run of it (reproducing it takes a second run)."""
    return random_kills(155)


def test_random_kills_with_one_seed_are_the_same_kills_twice():
    # Seed 155 draws 7 %, 49 % and 88 % of the window: inside model-call 1, in the refund's
    # unsafe gap (0.3 s after its effect, before the save) and inside model-call 2.
    first, second = seeded_155(), random_kills(155)

    def kills(results):
        return [(r.evidence["boundary"]["fraction"], r.evidence["boundary"]["anchor_edge"]) for r in results]

    # The seed fixes where each kill is aimed (a fraction of the clean run's window and its anchor); where it lands
    # is a moment of a real run, so under load it can fall a boundary earlier or later: only its form is held here.
    assert kills(first) == kills(second)
    for results in (first, second):
        assert all(r.evidence["landed"].startswith("between ") for r in results), [
            r.evidence["landed"] for r in results
        ]
    assert [r.evidence["boundary"]["seed"] for r in first] == [155] * 3
    assert kills(random_kills(230))[0][0] != kills(first)[0][0]  # another seed, other kills


def test_a_random_kill_fail_names_the_aimed_kill_that_reproduces_it_alone():
    results = seeded_155()
    assert [r.verdict for r in results] == [Verdict.PASS, Verdict.FAIL, Verdict.PASS]
    command = f"{sys.executable} -m boundary_framework slow"
    aimed = results[1].evidence["aimed"]
    assert aimed == (
        f"plugpull --agent '{command}' --scenario every-boundary --boundary 'effect refund 1' --point after"
    )
    # Run alone, the aimed kill fails the same way.
    settings = Settings(timeout=30, aim=Aim(boundaries=("effect refund 1",)))
    [alone] = run_scenario(boundary_framework("slow"), ["after"], settings=settings)
    assert alone.verdict is Verdict.FAIL and alone.message.startswith("effect duplicated: the provider saw 2 refund")
