"""every-boundary's verdicts on hand-built evidence: aimed, double and random kills."""

import signal

from plugpull.checks import judge_every_boundary
from plugpull.evidence import BoundaryEvidence, CleanRun, KillProof
from plugpull.process import Outcome
from plugpull.results import Verdict

KILLED = -signal.SIGKILL


def proof(group=100):
    return KillProof(group=group, caller_pid=group, caller_group=group, held_open_at_kill=True, closed_after_kill=0.01)


def evidence(**changes) -> BoundaryEvidence:
    ev = BoundaryEvidence(
        point="after model-call 1",
        side="after",
        start=Outcome(argv=["a", "start"], returncode=KILLED),
        clean=CleanRun(start=Outcome(argv=["a", "start"], returncode=0), counts={"refund": 1}, calls=1),
        golden=[{"refund": "done"}],
        proof=proof(),
        resume=Outcome(argv=["a", "resume"], returncode=0),
        resumed=[{"refund": "done"}],
        counts={"refund": 1},
        start_timeout=5,
        resume_timeout=5,
    )
    for key, value in changes.items():
        setattr(ev, key, value)
    return ev


def test_a_proven_kill_with_one_refund_and_the_golden_result_passes():
    assert judge_every_boundary(evidence()).verdict is Verdict.PASS


def test_start_that_never_reached_the_boundary_is_an_error_not_a_pass():
    j = judge_every_boundary(evidence(proof=None, start=Outcome(argv=[], returncode=0)))
    assert j.verdict is Verdict.ERROR
    assert "without reaching after model-call 1 (the clean run reached it)" in j.message


def test_a_double_crash_is_judged_on_the_resume_after_the_second_kill():
    ev = evidence(
        point="after-twice model-call 1",
        twice=True,
        resume=Outcome(argv=["a", "resume"], returncode=KILLED),
        second_proof=proof(200),
        second_reached=True,
        final=Outcome(argv=["a", "resume"], returncode=0),
        final_results=[{"refund": "done"}],
        counts={"refund": 2},
    )
    j = judge_every_boundary(ev)
    assert j.verdict is Verdict.FAIL
    assert j.message.startswith("after two kills: effect duplicated: the provider saw 2 refund")


def test_an_unproven_second_kill_is_an_error():
    second = proof(200)
    second.held_open_at_kill = False
    ev = evidence(
        point="after-twice model-call 1",
        twice=True,
        resume=Outcome(argv=["a", "resume"], returncode=KILLED),
        second_proof=second,
        final=Outcome(argv=["a", "resume"], returncode=0),
        final_results=[{"refund": "done"}],
    )
    assert judge_every_boundary(ev).verdict is Verdict.ERROR


def test_a_random_kill_needs_sigkill_and_then_is_judged_like_an_aimed_one():
    random = dict(point="random 1", side="random", proof=None, killed_at=0.2, landed="before any boundary")
    assert judge_every_boundary(evidence(**random)).verdict is Verdict.PASS
    exited = evidence(**{**random, "start": Outcome(argv=[], returncode=1)})
    assert judge_every_boundary(exited).verdict is Verdict.ERROR
    lost = evidence(**{**random, "counts": {"refund": 0}})
    assert judge_every_boundary(lost).verdict is Verdict.FAIL
