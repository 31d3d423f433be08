"""cancel-mid-stream's verdicts on hand-built evidence: the cancel proven at its point, then the next turn judged."""

import signal
from dataclasses import replace

from plugpull.checks.cancel_mid_stream import judge_cancel_mid_stream, lost_from
from plugpull.evidence import CancelEvidence, CancelRun, Outcome
from plugpull.results import Verdict

USER = {"role": "user", "content": "Please refund order A-1001."}
CALL = {"role": "assistant", "content": "Refunding now.", "tool_calls": [{"id": "c1", "name": "refund"}]}
RESULT = {"role": "tool", "content": "refunded", "tool_call_id": "c1"}
NEXT = {"role": "user", "content": "Is it done?"}
SEEN = {"text": ["Refunding"], "tool_calls": ["c1"], "tool_results": []}


def ended(code=0, **kw):
    return Outcome(argv=["agent"], returncode=code, **kw)


def clean(**changes):
    run = CancelRun(start=ended(), resume=ended(), counts={"refund": 1}, results=[{"answer": "done"}])
    return replace(run, **changes)


def evidence(**changes):
    """A cancel that landed in the held refund (after its effect), then a next turn that passed."""
    ev = CancelEvidence(
        point="tool-after-effect",
        timeout=30,
        clean=clean(),
        aim={"kind": "effect", "name": "refund", "n": 1, "side": "after"},
        held={"name": "refund", "group": 77, "held_at": "after-effect"},
        watchers=1,
        cancel={"group": 77, "style": "task-cancel", "seen": SEEN, "held_released": False, "held_open": True},
        start=ended(),
        resume=ended(),
        counts={"refund": 1},
        conversation=[USER, CALL, RESULT],
        requests=[{"messages": [USER, CALL, RESULT, NEXT]}],
        golden=[{"answer": "done"}],
        resumed=[{"answer": "done"}],
    )
    return replace(ev, **changes)


def test_a_next_turn_that_is_accepted_keeps_what_was_seen_and_finishes_passes():
    judgement = judge_cancel_mid_stream(evidence())
    assert judgement.verdict is Verdict.PASS
    assert judgement.message.startswith("the provider saw exactly 1 refund; next turn accepted; the thread kept")


def test_a_dangling_tool_call_in_the_next_request_fails_as_next_turn_rejected():
    ev = evidence(conversation=[USER, CALL], requests=[{"messages": [USER, CALL, NEXT]}])
    judgement = judge_cancel_mid_stream(ev)
    assert judgement.verdict is Verdict.FAIL
    assert judgement.message.startswith(
        "next turn rejected: message 2's tool call refund (c1) had no tool result before message 3 (user)"
    )


def test_a_next_turn_that_crashed_on_the_rejection_is_named_by_the_rejection_not_as_stuck():
    ev = evidence(resume=ended(1, stderr="RequestRejected: 400"), requests=[{"messages": [USER, CALL, NEXT]}])
    judgement = judge_cancel_mid_stream(ev)
    assert judgement.verdict is Verdict.FAIL and "stuck" not in judgement.message


def test_streamed_text_missing_from_the_saved_thread_fails_with_the_counts():
    saved = [USER, {**CALL, "content": ""}, RESULT]
    judgement = judge_cancel_mid_stream(evidence(conversation=saved))
    assert (judgement.verdict, judgement.message) == (
        Verdict.FAIL,
        "the thread lost what the user saw before the cancel: streamed text of 1 of 1 message(s) (9 characters)",
    )


def test_lost_from_counts_texts_calls_and_results_apart():
    seen = {"text": ["Refunding", "Done"], "tool_calls": ["c1", "c2"], "tool_results": ["c1"]}
    assert lost_from(seen, [USER, CALL]) == [
        "streamed text of 1 of 2 message(s) (4 characters)",
        "1 of 2 tool call(s)",
        "1 of 1 tool result(s)",
    ]
    assert (
        lost_from(
            seen,
            [
                USER,
                CALL,
                RESULT,
                {"role": "assistant", "content": "Done.", "tool_calls": [{"id": "c2", "name": "refund"}]},
                {"role": "tool", "content": "x", "tool_call_id": "c2"},
            ],
        )
        == []
    )


def test_a_duplicated_refund_fails_and_says_the_result_too():
    judgement = judge_cancel_mid_stream(evidence(counts={"refund": 2}, resumed=[{"answer": "again"}]))
    assert judgement.verdict is Verdict.FAIL
    assert judgement.message.startswith("effect duplicated: the provider saw 2 refund (expected 1); result differs")


def test_a_next_turn_that_hangs_is_a_stuck_thread():
    judgement = judge_cancel_mid_stream(evidence(resume=ended(None, timed_out=True), resumed=[]))
    assert (
        judgement.verdict is Verdict.FAIL and "thread stuck: the next turn hung (killed after 30s)" in judgement.message
    )


def test_a_next_turn_that_crashed_without_a_rejection_is_a_stuck_thread_with_its_last_line():
    ev = evidence(resume=ended(1, stderr="ValueError: run already in progress\n"), resumed=[])
    judgement = judge_cancel_mid_stream(ev)
    assert judgement.message.startswith("thread stuck: the next turn crashed (exit code 1): ValueError: run already")


def test_a_cancelled_start_that_never_stops_fails():
    judgement = judge_cancel_mid_stream(evidence(start=ended(None, timed_out=True)))
    assert (judgement.verdict, judgement.show) == (Verdict.FAIL, "start")
    assert judgement.message.startswith("the cancelled run did not stop")


def test_a_run_that_never_reached_the_point_is_an_error():
    judgement = judge_cancel_mid_stream(evidence(held=None, cancel=None))
    assert judgement.verdict is Verdict.ERROR
    assert judgement.message.startswith("the run never reached tool-after-effect (effect refund 1, after it)")


def test_an_agent_without_a_cancel_watcher_is_an_error():
    judgement = judge_cancel_mid_stream(evidence(watchers=0))
    assert judgement.verdict is Verdict.ERROR and "wait_for_cancel" in judgement.message


def test_a_cancel_never_reported_is_an_error_not_a_pass():
    judgement = judge_cancel_mid_stream(evidence(cancel=None))
    assert judgement.verdict is Verdict.ERROR
    assert judgement.message.startswith(
        "the cancel was ordered at tool-after-effect (effect refund 1, after it) but never"
    )


def test_a_cancel_reported_after_the_run_was_let_go_is_an_error():
    report = {**evidence().cancel, "held_released": True}
    assert judge_cancel_mid_stream(evidence(cancel=report)).verdict is Verdict.ERROR


def test_a_cancel_that_took_effect_only_once_the_step_was_let_go_is_judged_and_said_so():
    report = {**evidence().cancel, "held_released": True}
    judgement = judge_cancel_mid_stream(evidence(cancel=report, deferred=True))
    assert judgement.verdict is Verdict.PASS
    assert "; the cancel took effect only once the held step finished; " in judgement.message
    killed = evidence(cancel=report, deferred=True, sigkill=True, point="tool-after-effect-then-sigkill")
    assert judge_cancel_mid_stream(killed).verdict is Verdict.ERROR


def test_a_cancel_reported_from_another_process_group_is_an_error():
    report = {**evidence().cancel, "group": 5}
    assert judge_cancel_mid_stream(evidence(cancel=report)).verdict is Verdict.ERROR


def test_a_sigkill_point_whose_start_was_not_killed_is_an_error():
    ev = evidence(point="tool-after-effect-then-sigkill", sigkill=True)
    assert judge_cancel_mid_stream(ev).verdict is Verdict.ERROR
    killed = replace(ev, start=ended(-signal.SIGKILL))
    assert judge_cancel_mid_stream(killed).verdict is Verdict.PASS


def test_a_clean_run_with_two_refunds_fails_without_any_fault_and_a_refused_request_is_an_error():
    twice = judge_cancel_mid_stream(evidence(clean=clean(counts={"refund": 2})))
    assert (twice.verdict, twice.without_fault) == (Verdict.FAIL, True)
    assert twice.message == (
        "without any fault: effect duplicated: a clean run (no cancel) already recorded 2 refund over its two turns "
        "(expected 1)"
    )
    refused = judge_cancel_mid_stream(evidence(clean=clean(rejected=["message 2's tool call ..."])))
    assert refused.verdict is Verdict.ERROR and "clean run's own model request would be refused" in refused.message


ANSWER = {"role": "assistant", "content": "Refunded."}
DANGLING = {"messages": [USER, CALL, ANSWER, NEXT], "rejected": "message 2's tool call refund (c1) ..."}


def test_a_clean_run_whose_next_turn_is_refused_fails_without_any_fault_whatever_its_exit():
    """The framework saved a history without the tool's result, with nothing cancelled: the first line FAILs and
    names the provider rule, re-judged from the recorded request (not the agent's own "rejected")."""
    for code in (1, 0):
        run = clean(resume=ended(code), rejected=[DANGLING["rejected"]], next_turn_requests=[DANGLING])
        judgement = judge_cancel_mid_stream(evidence(clean=run))
        assert (judgement.verdict, judgement.without_fault, judgement.show) == (Verdict.FAIL, True, "clean")
        assert judgement.message.startswith(
            "without any fault: next turn rejected: message 2's tool call refund (c1) had no tool result before "
            "message 3 (assistant)"
        )
        assert judgement.message.endswith(f"(the clean run's next turn, nothing cancelled; exit code {code})")


def test_a_refused_next_turn_proves_nothing_after_a_first_turn_that_did_not_run_clean():
    refused = {"next_turn_requests": [DANGLING], "rejected": [DANGLING["rejected"]]}
    first_turn_refused = clean(**{**refused, "rejected": ["message 1 ...", DANGLING["rejected"]]})
    start_crashed = clean(start=ended(1), **refused)
    next_turn_hung = clean(resume=ended(-9, timed_out=True), **refused)
    for run in (first_turn_refused, start_crashed, next_turn_hung):
        judgement = judge_cancel_mid_stream(evidence(clean=run))
        assert (judgement.verdict, judgement.without_fault) == (Verdict.ERROR, False), run


def test_a_clean_run_whose_next_turn_failed_is_an_error():
    judgement = judge_cancel_mid_stream(evidence(clean=clean(resume=ended(1))))
    assert (judgement.verdict, judgement.show) == (Verdict.ERROR, "clean")
    # Its requests were all accepted: a crash with nothing refused stays "could not run as designed".
    accepted = clean(resume=ended(1), next_turn_requests=[{"messages": [USER, CALL, RESULT, NEXT], "rejected": None}])
    assert judge_cancel_mid_stream(evidence(clean=accepted)).verdict is Verdict.ERROR


def test_an_aim_the_clean_run_does_not_have_is_an_error_saying_why():
    ev = evidence(aim=None, aim_problem="the clean run marked no model-call boundary: wrap ...")
    assert judge_cancel_mid_stream(ev).message.startswith("the clean run marked no model-call boundary")


def test_a_next_turn_that_does_not_report_the_saved_conversation_is_an_error():
    judgement = judge_cancel_mid_stream(evidence(conversation=None))
    assert judgement.verdict is Verdict.ERROR and "record_conversation" in judgement.message


def test_a_consumer_that_had_not_shown_every_streamed_chunk_when_the_cancel_came_is_an_error():
    judgement = judge_cancel_mid_stream(evidence(chunks_emitted=9, chunks_shown=7))
    assert judgement.verdict is Verdict.ERROR and judgement.message.startswith("the consumer had shown 7 of the 9")
    assert judge_cancel_mid_stream(evidence(chunks_emitted=9, chunks_shown=9)).verdict is Verdict.PASS


def test_a_sigkill_point_whose_cancel_was_not_reported_while_held_is_an_error_saying_why():
    ev = evidence(point="tool-after-effect-then-sigkill", sigkill=True, cancel=None, start=ended(-signal.SIGKILL))
    judgement = judge_cancel_mid_stream(ev)
    assert judgement.verdict is Verdict.ERROR and "not reported while the run was held there" in judgement.message
