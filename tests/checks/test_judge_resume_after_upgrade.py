"""The resume-after-upgrade verdict on hand-built evidence: a refusal is FAIL, a release that cannot run is ERROR."""

import signal
from dataclasses import replace

import pytest

from plugpull.checks import REFUSED, check_releases, judge_resume_after_upgrade
from plugpull.evidence import CleanRun, KillProof, Outcome, UpgradeEvidence
from plugpull.results import Verdict

START_CALL = {"seq": 1, "phase": "start", "name": "charge", "key": "k1", "pid": 100, "held_at": 1.0}
RESUME_CALL = {"seq": 2, "phase": "resume", "name": "charge", "key": "k1", "pid": 200, "recorded": True}
REFUSAL = (
    "Traceback (most recent call last):\n  ...\nValueError: Checkpoint 'c1' was created by a different version "
    "of workflow 'checkout' and is not compatible with the current version.\n"
)


def clean(argv="a", returncode=0, counts=None, results=None, **changes) -> CleanRun:
    counts = {"charge": 1} if counts is None else counts
    return CleanRun(
        start=Outcome(argv=[argv, "start"], returncode=returncode, **changes),
        counts=counts,
        calls=sum(counts.values()),
        results=[{"charge": "done"}] if results is None else results,
    )


def upgraded(**changes) -> UpgradeEvidence:
    """A proven kill on A (before-effect) and a resume on B that finished with one effect."""
    ev = UpgradeEvidence(
        point="before-effect",
        start=Outcome(argv=["a", "start"], returncode=-signal.SIGKILL),
        clean=clean("a"),
        clean_resume=clean("b"),
        proof=KillProof(group=100, caller_pid=100, caller_group=100, held_open_at_kill=True, closed_after_kill=0.01),
        resume=Outcome(argv=["b", "resume"], returncode=0),
        counts={"charge": 1},
        calls=[START_CALL, RESUME_CALL],
        start_timeout=5,
        resume_timeout=5,
        golden=[{"charge": "done"}],
        resumed=[{"charge": "done"}],
        from_version="1.19.0",
        to_version="1.20.0",
        framework="fw",
    )
    return replace(ev, **changes)


def refused_by_b(**changes) -> UpgradeEvidence:
    refusal = {
        "resume": Outcome(argv=["b", "resume"], returncode=1, stderr=REFUSAL),
        "calls": [START_CALL],
        "counts": {"charge": 0},
        "resumed": [],
    }
    return upgraded(**{**refusal, **changes})


def test_a_resume_on_the_new_release_that_finishes_with_one_effect_passes():
    j = judge_resume_after_upgrade(upgraded())
    assert j.verdict is Verdict.PASS, j.message


def test_a_new_release_that_will_not_load_the_saved_run_fails_as_refused_with_its_message():
    j = judge_resume_after_upgrade(refused_by_b())
    assert j.verdict is Verdict.FAIL
    assert j.message.startswith(f"{REFUSED}: 1.20.0 would not resume what 1.19.0 saved (exit code 1): ValueError:")
    assert "different version of workflow" in j.message
    assert j.message.endswith("stuck: effect lost: the provider saw 0 charge (expected 1)")
    assert j.show == "resume"


def test_a_refusal_after_the_effect_says_the_run_is_stuck_with_the_effect_done_once():
    j = judge_resume_after_upgrade(refused_by_b(point="after-effect", counts={"charge": 1}))
    assert j.verdict is Verdict.FAIL and j.message.startswith(REFUSED)
    assert j.message.endswith("stuck: the provider saw exactly 1 charge")


def test_a_resume_that_asked_for_an_effect_and_then_crashed_is_a_crash_not_a_refusal():
    ev = upgraded(resume=Outcome(argv=["b", "resume"], returncode=1, stderr="boom"), counts={"charge": 1})
    j = judge_resume_after_upgrade(ev)
    assert j.verdict is Verdict.FAIL
    assert j.message.startswith("resume crashed (exit code 1)")


def test_a_duplicate_after_the_upgrade_fails_as_kill_mid_tool_does():
    j = judge_resume_after_upgrade(upgraded(point="after-effect", counts={"charge": 2}))
    assert j.verdict is Verdict.FAIL
    assert j.message.startswith("effect duplicated: the provider saw 2 charge")


def test_the_golden_result_is_the_resume_releases_clean_run():
    # A's clean run said "a", B's says "b": the run finishes on B, so "b" is what it must report.
    ev = upgraded(clean=clean("a", results=[{"charge": "a"}]), golden=[{"charge": "b"}], resumed=[{"charge": "b"}])
    assert judge_resume_after_upgrade(ev).verdict is Verdict.PASS
    j = judge_resume_after_upgrade(replace(ev, resumed=[{"charge": "a"}]))
    assert j.verdict is Verdict.FAIL and "result differs from the clean run" in j.message


def test_a_usage_error_on_resume_is_the_agents_error_not_a_refusal():
    ev = refused_by_b(resume=Outcome(argv=["b", "resume"], returncode=2, stderr="usage: agent {start}\n"))
    j = judge_resume_after_upgrade(ev)
    assert j.verdict is Verdict.ERROR and "usage message" in j.message


def test_a_hung_resume_is_a_hang_not_a_refusal():
    ev = refused_by_b(resume=Outcome(argv=["b", "resume"], returncode=-9, timed_out=True))
    j = judge_resume_after_upgrade(ev)
    assert j.verdict is Verdict.FAIL and j.message.startswith("resume hung")


@pytest.mark.parametrize(
    "evidence, reason",
    [
        # The resume release cannot even import the target: ERROR, before any resume is read.
        (
            refused_by_b(clean_resume=clean("b", returncode=1, counts={}, results=[])),
            "on the resume release (B): a clean run (no kill) ended (exit code 1)",
        ),
        (
            refused_by_b(clean_resume=clean("b", spawn_error="b: No such file")),
            "on the resume release (B): cannot start",
        ),
        (refused_by_b(clean_resume=None), "the clean run on the resume release (B) was not run"),
        (upgraded(clean=clean("a", returncode=1, counts={})), "on the start release (A): a clean run (no kill) ended"),
        (upgraded(clean_resume=clean("b", counts={"refund": 1})), "owe different effects (A: charge; B: refund)"),
        (upgraded(proof=None, calls=[], start=Outcome(argv=["a"], returncode=0)), "never called record_effect"),
        (upgraded(start=Outcome(argv=["a"], returncode=0)), "did not die of SIGKILL"),
    ],
)
def test_anything_unproven_or_a_release_that_cannot_run_the_target_is_an_error(evidence, reason):
    j = judge_resume_after_upgrade(evidence)
    assert j.verdict is Verdict.ERROR, j.message
    assert reason in j.message


def test_two_releases_that_run_the_target_cleanly_are_ready_for_the_upgrade():
    assert check_releases(upgraded()) is None


def test_the_evidence_keeps_both_releases_and_no_process_output():
    data = refused_by_b().to_dict()
    assert (data["from_version"], data["to_version"]) == ("1.19.0", "1.20.0")
    assert "stderr" not in data["resume"] and "stderr" not in data["clean_resume"]["start"]
