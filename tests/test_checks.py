"""The verdict logic on hand-built evidence: every way a kill can be unproven is ERROR."""

import signal
from dataclasses import replace

import pytest

from plugpull.checks import judge_effects, judge_kill_mid_tool, prove_kill
from plugpull.evidence import KillEvidence, KillProof
from plugpull.process import Outcome
from plugpull.results import Verdict

CALL = [{"seq": 1, "phase": "start", "name": "charge", "key": None, "pid": 100}]


def proven(**changes) -> KillEvidence:
    ev = KillEvidence(
        point="after-effect",
        start=Outcome(argv=["a", "start"], returncode=-signal.SIGKILL),
        proof=KillProof(group=100, caller_pid=100, caller_group=100, held_open_at_kill=True, closed_after_kill=0.01),
        resume=Outcome(argv=["a", "resume"], returncode=0),
        counts={"charge": 1},
        calls=CALL,
        start_timeout=5,
        resume_timeout=5,
    )
    return replace(ev, **changes)


def proof(**changes) -> KillProof:
    return replace(proven().proof, **changes)


def test_a_proven_kill_with_one_effect_passes():
    assert judge_kill_mid_tool(proven()).verdict is Verdict.PASS


def test_two_effects_fail_as_duplicated():
    j = judge_kill_mid_tool(proven(counts={"charge": 2}))
    assert j.verdict is Verdict.FAIL
    assert j.message == "effect duplicated: the provider saw 2 charge (expected 1)"


def test_zero_effects_fail_as_lost():
    j = judge_kill_mid_tool(proven(counts={"charge": 0}))
    assert j.verdict is Verdict.FAIL and j.message.startswith("effect lost")


def test_every_name_is_judged_on_its_own():
    j = judge_effects({"charge:A": 0, "charge:B": 2, "email": 1})
    assert j.verdict is Verdict.FAIL
    assert "0 charge:A" in j.message and "2 charge:B" in j.message


@pytest.mark.parametrize(
    "evidence, reason",
    [
        (proven(start=Outcome(argv=["x"], spawn_error="x: No such file"), proof=None), "cannot start"),
        (proven(proof=None, calls=[], start=Outcome(argv=["a"], returncode=0)), "never called record_effect"),
        (proven(proof=None, calls=[], start=Outcome(argv=["a"], returncode=1)), "before the tool called"),
        (proven(proof=None, calls=[], start=Outcome(argv=["a"], timed_out=True)), "did not reach the tool"),
        (proven(proof=proof(caller_pid=None)), "could not say which process"),
        (proven(proof=proof(caller_group=None)), "gone before the kill"),
        (proven(proof=proof(caller_group=555)), "outside the killed group"),
        (proven(proof=proof(held_open_at_kill=False)), "no longer holding"),
        (proven(start=Outcome(argv=["a"], returncode=0)), "did not die of SIGKILL"),
        (proven(start=Outcome(argv=["a"], returncode=-signal.SIGTERM)), "did not die of SIGKILL"),
        (proven(proof=proof(closed_after_kill=None)), "did not close"),
        (proven(proof=proof(closed_after_kill=30.0)), "did not close"),
        (proven(proof=proof(survivors=[123])), "still alive"),
    ],
)
def test_an_unproven_kill_is_an_error_whatever_the_counts(evidence, reason):
    # Even a perfect count (1 effect) must not PASS when the kill is not proven.
    j = judge_kill_mid_tool(evidence)
    assert j.verdict is Verdict.ERROR
    assert reason in j.message
    assert prove_kill(evidence) == j


def test_a_hung_resume_fails_as_hung():
    j = judge_kill_mid_tool(proven(resume=Outcome(argv=["a"], timed_out=True)))
    assert j.verdict is Verdict.FAIL and j.message.startswith("resume hung") and j.show == "resume"


def test_a_crashed_resume_fails_and_still_counts_effects():
    j = judge_kill_mid_tool(proven(resume=Outcome(argv=["a"], returncode=1), counts={"charge": 0}))
    assert j.verdict is Verdict.FAIL
    assert j.message == "resume crashed (exit code 1); effect lost: the provider saw 0 charge (expected 1)"


def test_a_resume_that_cannot_start_is_an_error():
    j = judge_kill_mid_tool(proven(resume=Outcome(argv=["a"], spawn_error="gone")))
    assert j.verdict is Verdict.ERROR
