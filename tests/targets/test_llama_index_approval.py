"""LlamaIndex Workflows' human-in-the-loop events under resume-after-approval: the Context the app saved when
the run asked for input, restored in new processes that send the answer; real processes, real SIGKILL.

A finished run's Context says so (its running flag) and the app refuses a second answer; nothing claims a
waiting request, so racing approvers all run the step, and a recovery answers again and refunds again.
"""

import signal

from installed import requires
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.scenarios.resume_after_approval import run_point
from plugpull.targets import BUILT_INS

pytestmark = requires("workflows")

SETTINGS = Settings(timeout=90)

(TARGET,) = BUILT_INS["llama-index-approval"].variants


def test_an_answer_sent_to_the_restored_context_runs_the_refund_step_once(forked):
    result = run_point(TARGET, "approve-elsewhere", SETTINGS, forked)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    assert result.evidence["counts"] == {"refund": 1}


def test_a_second_answer_is_refused_because_the_saved_run_is_no_longer_running(forked):
    result = run_point(TARGET, "double-resume", SETTINGS, forked)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    assert result.message.startswith("the second approval was refused (exit 3)")


def test_racing_approvers_that_restore_the_same_waiting_context_each_run_the_step(forked):
    result = run_point(TARGET, "racing-resumers", SETTINGS, forked)
    # A timing line: resume-after-approval-more-frameworks claims a FAIL rate in [0.8, 1] with 1 to 5 refunds (an
    # approver that restores the context after another answered finds no waiting request). One sample: either
    # outcome is held to its shape.
    outcomes, refunds = result.evidence["racer_outcomes"], result.evidence["counts"]["refund"]
    ran = outcomes.get("ran the tool", 0) + outcomes.get("ran the tool, crashed", 0)
    assert result.evidence["gated"] == 5 and ran == refunds, (outcomes, result.message)
    if result.verdict is Verdict.PASS:
        assert refunds == 1, (result.message, result.stderr)
    else:
        assert result.verdict is Verdict.FAIL and refunds >= 2, (result.message, result.stderr)
        assert result.message.startswith(f"{refunds} of 5 approvers ran the approved tool"), result.message


def test_a_recovery_after_a_kill_inside_the_approved_step_answers_again_and_refunds_again(forked):
    result = run_point(TARGET, "killed-after-effect", SETTINGS, forked)
    assert result.evidence["approvals"][0]["outcome"]["returncode"] == -signal.SIGKILL
    assert result.verdict is Verdict.FAIL
    assert result.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")
