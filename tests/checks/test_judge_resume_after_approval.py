"""resume-after-approval's verdicts on hand-built evidence: every unproven run is ERROR."""

import signal
from dataclasses import replace

import pytest

from plugpull.checks import PAUSED_AGAIN_EXIT, REFUSED_EXIT, racer_outcomes
from plugpull.checks import judge_resume_after_approval as judge
from plugpull.evidence import ApprovalEvidence, ApprovalRun, KillProof
from plugpull.process import Outcome
from plugpull.results import Verdict


def exited(code=0, phase="approve", **changes) -> Outcome:
    return Outcome(argv=["a", phase], returncode=code, **changes)


def ran(code=0, calls=1, results=None, **changes) -> ApprovalRun:
    return ApprovalRun(outcome=exited(code, **changes), effect_calls=calls, results=results or [])


CALL = [{"seq": 1, "phase": "approve", "name": "refund", "key": None, "pid": 100, "group": 100}]
CLEAN = ApprovalEvidence(
    point="approve-elsewhere", start=exited(0, "start"), approvals=[ran()], counts={"refund": 1}, calls=CALL, timeout=5
)
PROOF = KillProof(group=100, caller_pid=100, caller_group=100, held_open_at_kill=True, closed_after_kill=0.01)


def evidence(point: str, **changes) -> ApprovalEvidence:
    """A run of ``point`` that passes; ``changes`` break one thing."""
    base = {
        "approve-elsewhere": dict(clean=None, approvals=[ran()]),
        "double-resume": dict(approvals=[ran(), ran(REFUSED_EXIT, calls=0)], counts_after_first={"refund": 1}),
        "racing-resumers": dict(approvals=[ran()] + [ran(REFUSED_EXIT, calls=0)] * 4, racers=5, gated=5),
        "killed-after-effect": dict(
            approvals=[ApprovalRun(exited(-signal.SIGKILL), 1)], proof=PROOF, recover=ran(0, calls=1, phase="recover")
        ),
    }[point]
    ev = ApprovalEvidence(
        **{
            "point": point,
            "start": exited(0, "start"),
            "clean": CLEAN,
            "counts": {"refund": 1},
            "calls": CALL,
            "timeout": 5,
            **base,
        }
    )
    return replace(ev, **changes)


@pytest.mark.parametrize("point", ["approve-elsewhere", "double-resume", "racing-resumers", "killed-after-effect"])
def test_each_point_passes_with_one_effect_and_its_expected_exits(point):
    assert judge(evidence(point)).verdict is Verdict.PASS, judge(evidence(point)).message


@pytest.mark.parametrize(
    "start, start_calls, message",
    [
        (exited(0, "start", spawn_error="no such file"), 0, "cannot start the target: no such file"),
        (exited(None, "start", timed_out=True), 0, "start did not reach the approval pause within 5s (killed)"),
        (exited(1, "start"), 0, "start ended (exit code 1) instead of pausing for approval with exit 0"),
        (
            exited(0, "start"),
            1,
            "start called record_effect 1 time(s) before any approval: the tool does not wait for approval",
        ),
    ],
)
def test_a_start_that_does_not_pause_cleanly_is_an_error(start, start_calls, message):
    j = judge(evidence("approve-elsewhere", start=start, start_calls=start_calls))
    assert (j.verdict, j.message) == (Verdict.ERROR, message)


def test_an_approval_that_never_reports_an_effect_is_an_error_not_a_lost_effect():
    j = judge(evidence("approve-elsewhere", counts={}, calls=[]))
    assert j.verdict is Verdict.ERROR and "never called record_effect" in j.message


@pytest.mark.parametrize(
    "approve, verdict, start_of_message",
    [
        (
            exited(REFUSED_EXIT, stderr="AlreadyResumed: gone\n"),
            Verdict.FAIL,
            "the framework refused the approval of a run paused in another process (exit 3: AlreadyResumed: gone)",
        ),
        (exited(1), Verdict.FAIL, "approve crashed (exit code 1)"),
        (exited(None, timed_out=True), Verdict.FAIL, "approve hung: killed after 5s"),
        (exited(0, spawn_error="nope"), Verdict.ERROR, "cannot start approve: nope"),
    ],
)
def test_a_first_approval_that_does_not_finish_fails_or_errors(approve, verdict, start_of_message):
    j = judge(evidence("approve-elsewhere", approvals=[ApprovalRun(approve, 0)]))
    assert j.verdict is verdict and j.message.startswith(start_of_message), j.message


@pytest.mark.parametrize("point", ["double-resume", "racing-resumers", "killed-after-effect"])
def test_every_later_point_needs_a_clean_approval_that_ran(point):
    missing = judge(evidence(point, clean=None))
    crashed = judge(evidence(point, clean=replace(CLEAN, approvals=[ran(4, calls=0)], counts={}, calls=[])))
    hung = judge(evidence(point, clean=replace(CLEAN, approvals=[ran(-9, timed_out=True)])))
    assert missing.verdict is crashed.verdict is hung.verdict is Verdict.ERROR
    assert crashed.message.startswith("a clean approval (no fault) did not pass, so this point proves nothing")
    assert not crashed.without_fault


PAUSED_AGAIN = replace(CLEAN, approvals=[ran(PAUSED_AGAIN_EXIT, calls=0)], counts={}, calls=[])


@pytest.mark.parametrize("point", ["double-resume", "racing-resumers", "killed-after-effect"])
@pytest.mark.parametrize(
    "clean, says",
    [
        (
            PAUSED_AGAIN,
            "effect lost: the run paused again instead of running the approved tool (approve exited 5); "
            "the provider saw no effect",
        ),
        (replace(CLEAN, counts={"refund": 2}), "effect duplicated: the provider saw 2 refund (expected 1)"),
        (
            replace(CLEAN, approvals=[ran(REFUSED_EXIT, calls=0, stderr="refused: nothing pending\n")], counts={}),
            "the framework refused the approval of a run paused in another process (exit 3: refused: nothing "
            "pending); the provider saw no effect",
        ),
    ],
)
def test_a_clean_approval_that_breaks_what_a_point_checks_fails_it_without_any_fault(point, clean, says):
    j = judge(evidence(point, clean=clean))
    assert (j.verdict, j.without_fault, j.show) == (Verdict.FAIL, True, "clean")
    assert j.message == f"without any fault: a clean approval (start + approve, no fault): {says}"


def test_an_approval_that_leaves_the_run_paused_again_loses_the_approved_tool():
    j = judge(evidence("approve-elsewhere", approvals=[ran(PAUSED_AGAIN_EXIT, calls=0)], counts={}, calls=[]))
    assert (j.verdict, j.show, j.without_fault) == (Verdict.FAIL, "approve", True)
    assert j.message == (
        "effect lost: the run paused again instead of running the approved tool (approve exited 5); "
        "the provider saw no effect"
    )


def test_an_approval_that_runs_the_tool_and_then_pauses_again_did_not_finish():
    j = judge(evidence("approve-elsewhere", approvals=[ran(PAUSED_AGAIN_EXIT)]))
    assert (j.verdict, j.message) == (
        Verdict.FAIL,
        "the run paused again instead of finishing (approve exited 5); the provider saw exactly 1 refund",
    )


def test_a_recover_that_pauses_again_loses_the_approved_tool_it_was_killed_in():
    ev = evidence(
        "killed-after-effect",
        approvals=[ApprovalRun(exited(-signal.SIGKILL), 1)],
        recover=ran(PAUSED_AGAIN_EXIT, calls=0, phase="recover"),
        counts={},
    )
    j = judge(replace(ev, point="killed-before-effect"))
    assert (j.verdict, j.show) == (Verdict.FAIL, "recover")
    assert j.message == (
        "effect lost: the run paused again instead of running the approved tool (recover exited 5); "
        "the provider saw 0 refund (expected 1)"
    )


def test_a_racer_that_leaves_the_run_paused_again_is_counted_and_fails_the_race():
    approvals = [ran()] + [ran(REFUSED_EXIT, calls=0)] * 3 + [ran(PAUSED_AGAIN_EXIT, calls=0)]
    ev = evidence("racing-resumers", approvals=approvals)
    j = judge(ev)
    assert (j.verdict, j.message) == (
        Verdict.FAIL,
        "1 of 5 approvers ran the approved tool, 3 refused (exit 3), 1 paused again (exit 5); "
        "the provider saw exactly 1 refund",
    )
    assert racer_outcomes(ev) == {"ran the tool": 1, "refused": 3, "paused again": 1}


def test_a_second_approval_that_leaves_the_finished_run_paused_again_fails():
    j = judge(evidence("double-resume", approvals=[ran(), ran(PAUSED_AGAIN_EXIT, calls=0)]))
    assert (j.verdict, j.message) == (
        Verdict.FAIL,
        "the second approval left the finished run paused again (exit 5) instead of refusing (exit 3) or doing "
        "nothing (exit 0); the provider saw exactly 1 refund",
    )


def test_a_second_approval_that_runs_the_tool_again_fails_even_when_a_key_absorbs_it():
    j = judge(evidence("double-resume", approvals=[ran(), ran(0, calls=1)]))
    assert (j.verdict, j.message) == (
        Verdict.FAIL,
        "the second approval ran the approved tool again (exit code 0); the provider saw exactly 1 refund",
    )


def test_a_second_approval_that_does_nothing_and_exits_0_is_a_no_op_pass():
    j = judge(evidence("double-resume", approvals=[ran(), ran(0, calls=0)]))
    assert j.verdict is Verdict.PASS and j.message.startswith("the second approval was a no-op")


def test_a_second_approval_that_crashes_instead_of_refusing_fails():
    j = judge(evidence("double-resume", approvals=[ran(), ran(1, calls=0, stderr="Traceback\nValueError: x\n")]))
    assert j.verdict is Verdict.FAIL
    assert j.message.startswith("the second approval crashed (exit code 1: ValueError: x) instead of refusing (exit 3)")


def test_a_first_approval_without_its_effect_makes_the_second_prove_nothing():
    j = judge(evidence("double-resume", counts_after_first={"refund": 0}))
    assert j.verdict is Verdict.ERROR and "the first approval did not finish with one effect" in j.message


def test_racers_that_did_not_all_wait_at_the_gate_prove_no_race():
    j = judge(evidence("racing-resumers", gated=3))
    assert j.verdict is Verdict.ERROR
    assert j.message.startswith("only 3 of 5 approvers were waiting at plugpull's gate")


def test_two_racers_running_the_tool_fail_with_the_count():
    approvals = [ran(), ran()] + [ran(REFUSED_EXIT, calls=0)] * 3
    j = judge(evidence("racing-resumers", approvals=approvals, counts={"refund": 2}))
    assert (j.verdict, j.message) == (
        Verdict.FAIL,
        "2 of 5 approvers ran the approved tool, 3 refused (exit 3); effect duplicated: the provider saw 2 refund (expected 1)",
    )


def test_a_racer_that_crashes_instead_of_refusing_fails():
    approvals = [ran()] + [ran(REFUSED_EXIT, calls=0)] * 3 + [ran(1, calls=0, stderr="KeyError: 'pending'\n")]
    j = judge(evidence("racing-resumers", approvals=approvals))
    assert j.verdict is Verdict.FAIL and "1 crashed (exit code 1: KeyError: 'pending')" in j.message


def test_a_racer_that_crashed_on_a_locked_database_is_its_own_outcome_apart_from_the_runner():
    locked = "Traceback (most recent call last):\nsqlite3.OperationalError: database is locked\n"
    approvals = [ran()] + [ran(REFUSED_EXIT, calls=0)] * 3 + [ran(1, calls=0, stderr=locked)]
    ev = evidence("racing-resumers", approvals=approvals)
    j = judge(ev)
    assert (j.verdict, j.message) == (
        Verdict.FAIL,
        "1 of 5 approvers ran the approved tool, 3 refused (exit 3), 1 crashed: database is locked; "
        "the provider saw exactly 1 refund",
    )
    assert racer_outcomes(ev) == {"ran the tool": 1, "refused": 3, "crashed: database is locked": 1}


def test_a_lone_runner_that_crashed_is_named_as_crashed():
    approvals = [ran(1, stderr="RuntimeError: boom\n")] + [ran(REFUSED_EXIT, calls=0)] * 4
    ev = evidence("racing-resumers", approvals=approvals)
    j = judge(ev)
    assert j.verdict is Verdict.FAIL
    assert j.message.startswith(
        "1 of 5 approvers ran the approved tool and crashed (exit code 1: RuntimeError: boom), "
    )
    assert racer_outcomes(ev) == {"ran the tool, crashed": 1, "refused": 4}


def test_the_racer_that_ran_the_tool_must_report_the_golden_result():
    golden = [{"refund": "done"}]
    approvals = [ran(results=[])] + [ran(REFUSED_EXIT, calls=0)] * 4
    j = judge(evidence("racing-resumers", approvals=approvals, golden=golden))
    assert (j.verdict, j.message) == (
        Verdict.FAIL,
        "run did not finish: the approver that ran the tool exited 0 without a result",
    )
    approvals = [ran(results=golden)] + [ran(REFUSED_EXIT, calls=0)] * 4
    j = judge(evidence("racing-resumers", approvals=approvals, golden=golden))
    assert j.verdict is Verdict.PASS and j.message.endswith("; the result equals the clean run's")


def test_a_recover_that_exits_0_without_a_result_fails_as_unfinished():
    j = judge(evidence("killed-after-effect", golden=[{"refund": "done"}]))
    assert (j.verdict, j.message, j.show) == (
        Verdict.FAIL,
        "run did not finish: recover exited 0 without a result",
        "recover",
    )


def test_a_recover_with_another_result_fails_with_the_difference():
    recover = ran(0, calls=1, phase="recover", results=[{"refund": "pending"}])
    j = judge(evidence("killed-after-effect", golden=[{"refund": "done"}], recover=recover))
    assert (j.verdict, j.message) == (
        Verdict.FAIL,
        'result differs from the clean run: $.refund: clean "done", resumed "pending"',
    )


def test_a_clean_approval_with_two_results_has_no_golden_result():
    j = judge(evidence("killed-after-effect", golden=[1, 2]))
    assert j.verdict is Verdict.ERROR
    assert j.message.startswith("a clean approval (no fault) reported 2 results")


def test_fewer_than_two_racers_is_an_error():
    assert judge(evidence("racing-resumers", racers=1, approvals=[ran()])).verdict is Verdict.ERROR


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            dict(proof=None, approvals=[ApprovalRun(exited(0), 0)], calls=[]),
            "approve exited 0 and the tool never called record_effect",
        ),
        (
            dict(proof=replace(PROOF, caller_group=200)),
            "the held call came from pid 100 in process group 200, outside the killed group 100",
        ),
        (dict(approvals=[ApprovalRun(exited(0), 1)]), "approve did not die of SIGKILL (exit code 0)"),
        (
            dict(proof=replace(PROOF, closed_after_kill=None)),
            "the held call's connection did not close within 2s of the kill",
        ),
        (dict(recover=None), "recover was not run"),
        (dict(recover=ApprovalRun(exited(0, "recover", spawn_error="gone"))), "cannot start recover: gone"),
    ],
)
def test_a_killed_approval_that_is_not_proven_is_an_error(changes, message):
    j = judge(evidence("killed-after-effect", **changes))
    assert j.verdict is Verdict.ERROR and j.message.startswith(message), j.message


def test_a_run_that_recover_cannot_finish_fails_as_stuck_with_the_frameworks_words():
    stuck = ran(4, calls=0, phase="recover", stderr="log line\nAlreadyResumed: no pending interrupt\n")
    j = judge(evidence("killed-after-effect", recover=stuck))
    assert (j.verdict, j.message) == (
        Verdict.FAIL,
        "stuck: the run can no longer be finished: recover exit code 4: AlreadyResumed: no pending interrupt; "
        "the provider saw exactly 1 refund",
    )


def test_a_recovery_that_refunds_again_fails_as_duplicated():
    j = judge(evidence("killed-after-effect", counts={"refund": 2}))
    assert j.verdict is Verdict.FAIL and j.message.startswith("effect duplicated")


def test_a_recovery_that_never_reaches_the_tool_fails_as_lost():
    j = judge(evidence("killed-after-effect", counts={}, recover=ran(0, calls=0, phase="recover")))
    assert (j.verdict, j.message) == (Verdict.FAIL, "effect lost: the provider saw 0 refund (expected 1)")
