"""tool-error's verdicts on hand-built evidence: the fault proven first, then the effects and what the run claims."""

from dataclasses import replace

from plugpull.checks import judge_tool_error
from plugpull.checks.tool_error import claims_of
from plugpull.evidence import CleanRun, ToolErrorEvidence
from plugpull.process import Outcome
from plugpull.results import Verdict

DONE = {"answer": "The refund is done.", "claims": {"refund": "done"}}
FAILED = {"answer": "The refund could not be done.", "claims": {"refund": "failed"}}
HELD = {"seq": 1, "phase": "start", "name": "refund", "key": None, "held_at": "after-effect", "faulted": "ToolFault"}
MESSAGE = "refund: connection reset by peer"


def ended(returncode: int, stderr: str = "", timed_out: bool = False) -> Outcome:
    return Outcome(argv=["a"], returncode=returncode, stderr=stderr, timed_out=timed_out)


def evidence(**changes) -> ToolErrorEvidence:
    """raise-after-effect, retried with a key: one refund, the result the clean run's."""
    ev = ToolErrorEvidence(
        point="raise-after-effect",
        fault="ToolFault",
        side="after-effect",
        message=MESSAGE,
        clean=CleanRun(start=ended(0), counts={"refund": 1}, calls=1, results=[DONE]),
        start=ended(0),
        held=dict(HELD),
        counts={"refund": 1},
        calls=[HELD, {**HELD, "seq": 2, "held_at": None, "faulted": None}],
        start_timeout=30,
        golden=[DONE],
        finished=[DONE],
    )
    return replace(ev, **changes)


def test_one_refund_after_a_retry_passes_and_says_the_tool_was_called_again():
    judgement = judge_tool_error(evidence())
    assert judgement.verdict is Verdict.PASS
    assert judgement.message.startswith("after refund raised ToolFault after its effect (refund called again by start)")


def test_a_call_whose_caller_never_got_the_fault_is_an_error():
    judgement = judge_tool_error(evidence(held={**HELD, "faulted": None}, start=ended(-9)))
    assert judgement.verdict is Verdict.ERROR and "its caller never got the fault" in judgement.message


def test_nothing_held_is_an_error():
    judgement = judge_tool_error(evidence(held=None))
    assert (judgement.verdict, judgement.show) == (Verdict.ERROR, "start")


def test_a_start_that_hangs_after_the_fault_fails():
    judgement = judge_tool_error(evidence(start=ended(-9, timed_out=True)))
    assert judgement.verdict is Verdict.FAIL and judgement.message.startswith("start hung after refund raised")


def test_two_refunds_fail_as_duplicated_after_the_effect():
    judgement = judge_tool_error(evidence(counts={"refund": 2}))
    assert judgement.verdict is Verdict.FAIL
    assert judgement.message.endswith("(expected 1); refund was done before the fault and again by start")


def test_a_claim_of_success_with_no_effect_fails():
    ev = evidence(point="raise-before-effect", side="before-effect", counts={"refund": 0})
    judgement = judge_tool_error(ev)
    assert judgement.verdict is Verdict.FAIL and "the history claims refund succeeded; the provider saw none" in (
        judgement.message
    )


def test_a_claim_of_failure_with_the_effect_done_fails_and_without_the_effect_passes():
    after = judge_tool_error(evidence(finished=[FAILED]))
    assert after.verdict is Verdict.FAIL and "its user would retry a done refund" in after.message
    before = judge_tool_error(
        evidence(point="raise-before-effect", side="before-effect", counts={"refund": 0}, finished=[FAILED])
    )
    assert (before.verdict, before.message) == (
        Verdict.PASS,
        "after refund raised ToolFault before its effect: refund not done, and the run says it failed",
    )


def test_a_run_ended_in_the_tools_error_by_start_and_resume_says_it_failed():
    failing = dict(start=ended(1, MESSAGE), resume=ended(1, f"Traceback ...\nToolFault: {MESSAGE}"), finished=[])
    after = judge_tool_error(evidence(**failing))
    assert after.verdict is Verdict.FAIL and after.message.startswith(
        "after refund raised ToolFault after its effect: the run ended in refund's error; the provider saw it done"
    )
    before = judge_tool_error(evidence(side="before-effect", counts={"refund": 0}, **failing))
    assert before.verdict is Verdict.PASS and before.message.endswith("and the run ended in the tool's error")


def test_a_resume_that_crashed_of_something_else_fails_as_a_crash():
    judgement = judge_tool_error(evidence(start=ended(1, MESSAGE), resume=ended(1, "KeyError: 'state'"), finished=[]))
    assert judgement.verdict is Verdict.FAIL and "resume crashed (exit code 1)" in judgement.message


def test_a_lost_effect_without_claims_and_claims_of_another_word_are_errors():
    lost = judge_tool_error(evidence(side="before-effect", counts={"refund": 0}, finished=[{"answer": "?"}]))
    assert lost.verdict is Verdict.ERROR
    odd = judge_tool_error(evidence(finished=[{"claims": {"refund": "maybe"}}]))
    assert odd.verdict is Verdict.ERROR and "'done', 'failed' or 'dropped'" in odd.message


def test_a_call_left_unanswered_when_the_run_ended_is_dropped_and_fails():
    ev = evidence(
        side="before-effect", counts={"refund": 0}, finished=[{"answer": None, "claims": {"refund": "dropped"}}]
    )
    judgement = judge_tool_error(ev)
    assert (judgement.verdict, judgement.message) == (
        Verdict.FAIL,
        "after refund raised ToolFault before its effect: the run ended with refund's call unanswered in its history "
        "(dropped: neither retried nor reported failed); the provider saw 0 refund",
    )


def test_claims_are_read_from_the_last_result_only():
    assert claims_of([FAILED, DONE]) == {"refund": "done"}
    assert claims_of([]) is None and claims_of(["text"]) is None


def killed_after_raise(**changes) -> ToolErrorEvidence:
    """raise-after-effect-then-sigkill: the caller said it raises, start died of the SIGKILL, resume reran the tool
    without a key."""
    base = dict(
        point="raise-after-effect-then-sigkill",
        sigkill=True,
        raised=True,
        start=ended(-9),
        resume=ended(0),
        finished=[DONE],
        finished_by="resume",
        counts={"refund": 2},
    )
    return evidence(**{**base, **changes})


def test_a_kill_as_the_tool_raised_is_judged_on_what_resume_did():
    judgement = judge_tool_error(killed_after_raise())
    assert (judgement.verdict, judgement.show) == (Verdict.FAIL, "resume")
    assert judgement.message.startswith(
        "after refund raised ToolFault after its effect and start was SIGKILLed as it raised: effect duplicated"
    )
    assert judge_tool_error(killed_after_raise(counts={"refund": 1})).verdict is Verdict.PASS


def test_a_kill_after_raise_is_an_error_unless_the_raise_was_said_the_kill_killed_start_and_nothing_outlived_it():
    unsaid = judge_tool_error(killed_after_raise(raised=False, start=ended(0)))
    assert unsaid.verdict is Verdict.ERROR and "never said it raises" in unsaid.message
    finished = judge_tool_error(killed_after_raise(start=ended(1)))
    assert finished.verdict is Verdict.ERROR
    assert finished.message == "start ended (exit code 1) before the SIGKILL after refund raised could land"
    outlived = judge_tool_error(killed_after_raise(survivors=[4242]))
    assert outlived.verdict is Verdict.ERROR and "outlived the SIGKILL: [4242]" in outlived.message


def test_a_hung_call_counts_only_once_it_was_answered_late():
    hung = dict(point="hang-after-effect", fault="hang", message="", held={**HELD, "faulted": None, "answered": True})
    never = judge_tool_error(evidence(**{**hung, "held": {**HELD, "faulted": None, "answered": False}}))
    assert never.verdict is Verdict.ERROR and "never answered late" in never.message
    unmeasured = judge_tool_error(evidence(**hung))  # answered, but nothing says how long it waited
    assert unmeasured.verdict is Verdict.ERROR
    judged = judge_tool_error(evidence(**hung, hung_for=1.2, hung_until="the next effect call", counts={"refund": 2}))
    assert judged.verdict is Verdict.FAIL
    assert judged.message.startswith(
        "after refund's call hung after its effect (answered 1.2s late, at the next effect call): effect duplicated"
    )
