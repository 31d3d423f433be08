"""The golden-result check on hand-built evidence: a PASS needs the resumed run to finish as the clean one did."""

import signal
from dataclasses import replace

from plugpull.checks import NOT_CHECKED, judge_kill_mid_tool, result_diff, without_fields
from plugpull.evidence import CleanRun, KillEvidence, KillProof, Outcome
from plugpull.results import Verdict


def proven(**changes) -> KillEvidence:
    """A proven kill at after-effect whose resume exited 0 with one effect; ``changes`` set the results."""
    ev = KillEvidence(
        point="after-effect",
        start=Outcome(argv=["a", "start"], returncode=-signal.SIGKILL),
        clean=CleanRun(start=Outcome(argv=["a", "start"], returncode=0), counts={"charge": 1}, calls=1),
        proof=KillProof(group=100, caller_pid=100, caller_group=100, held_open_at_kill=True, closed_after_kill=0.01),
        resume=Outcome(argv=["a", "resume"], returncode=0),
        counts={"charge": 1},
        calls=[{"seq": 1, "phase": "start", "name": "charge", "key": None, "pid": 100}],
        start_timeout=5,
        resume_timeout=5,
    )
    return replace(ev, **changes)


GOLDEN = [{"answer": "Refund for order A-1001 is done.", "order": {"id": "A-1001", "state": "refunded"}}]


def test_a_resumed_run_with_the_golden_result_passes():
    j = judge_kill_mid_tool(proven(golden=GOLDEN, resumed=list(GOLDEN)))
    assert (j.verdict, j.message) == (
        Verdict.PASS,
        "the provider saw exactly 1 charge; the result equals the clean run's",
    )


def test_a_resume_that_exits_0_without_a_result_did_not_finish():
    j = judge_kill_mid_tool(proven(golden=GOLDEN, resumed=[]))
    assert (j.verdict, j.message, j.show) == (
        Verdict.FAIL,
        "run did not finish: resume exited 0 without a result",
        "resume",
    )


def test_a_different_result_fails_with_where_it_differs():
    other = [{"answer": GOLDEN[0]["answer"], "order": {"id": "A-1001", "state": "open"}}]
    j = judge_kill_mid_tool(proven(golden=GOLDEN, resumed=other))
    assert (j.verdict, j.message) == (
        Verdict.FAIL,
        'result differs from the clean run: $.order.state: clean "refunded", resumed "open"',
    )


def test_a_duplicate_and_a_missing_result_are_both_named():
    j = judge_kill_mid_tool(proven(golden=GOLDEN, resumed=[], counts={"charge": 2}))
    assert j.verdict is Verdict.FAIL
    assert j.message == (
        "effect duplicated: the provider saw 2 charge (expected 1); run did not finish: resume exited 0 without a result"
    )


def test_two_results_from_one_resume_are_flagged():
    j = judge_kill_mid_tool(proven(golden=GOLDEN, resumed=GOLDEN * 2))
    assert (j.verdict, j.message) == (
        Verdict.FAIL,
        "resume reported 2 results (expected 1: record_result once per finished run)",
    )


def test_a_clean_run_with_two_results_is_an_error():
    j = judge_kill_mid_tool(proven(golden=GOLDEN * 2, resumed=GOLDEN))
    assert j.verdict is Verdict.ERROR
    assert j.message.startswith("a clean run (no kill) reported 2 results")


def test_without_a_golden_result_the_effect_rule_stands_and_says_completion_was_not_checked():
    j = judge_kill_mid_tool(proven())
    assert (j.verdict, j.message) == (Verdict.PASS, f"the provider saw exactly 1 charge; {NOT_CHECKED}")
    assert "record_result" in NOT_CHECKED
    failed = judge_kill_mid_tool(proven(counts={"charge": 2}))
    assert failed.message == "effect duplicated: the provider saw 2 charge (expected 1)"


def test_a_crashed_resume_stays_a_crash_whatever_it_reported():
    ev = proven(golden=GOLDEN, resumed=[])
    j = judge_kill_mid_tool(replace(ev, resume=replace(ev.resume, returncode=1)))
    assert j.verdict is Verdict.FAIL and j.message.startswith("resume crashed (exit code 1)")


def test_ignored_fields_are_left_out_at_any_depth_and_in_every_list_item():
    value = {"id": "r1", "receipt": {"id": "x", "cents": 5}, "lines": [{"id": 1, "sku": "a"}, {"id": 2, "sku": "b"}]}
    assert without_fields(value, ["id", "receipt.id", "lines.id"]) == {
        "receipt": {"cents": 5},
        "lines": [{"sku": "a"}, {"sku": "b"}],
    }
    j = judge_kill_mid_tool(
        proven(golden=[{"at": "10:00", "ok": True}], resumed=[{"at": "10:05", "ok": True}], result_ignore=["at"])
    )
    assert j.verdict is Verdict.PASS


def test_json_equality_tells_true_from_1_and_lists_by_length():
    assert result_diff(True, 1) == "$: clean true, resumed 1"
    assert result_diff(1, 1.0) is None
    assert result_diff([1, 2], [1]) == "$: clean has 2 items, resumed 1"
    assert result_diff({"a": 1}, {}) == "$.a: clean 1, resumed has no 'a'"
    assert result_diff("x" * 100, "y").startswith('$: clean "xxxx') and "..." in result_diff("x" * 100, "y")


def test_a_diff_names_every_place_up_to_three():
    golden = {"orders": [{"customer": "A", "cents": 1999}, {"customer": "B", "cents": 4999}]}
    resumed = {"orders": [{"customer": "A", "cents": 1999}, {"customer": "A", "cents": 1999}]}
    assert result_diff(golden, resumed) == (
        '$.orders[1].cents: clean 4999, resumed 1999; $.orders[1].customer: clean "B", resumed "A"'
    )
    assert result_diff(list(range(5)), [9] * 5) == (
        "$[0]: clean 0, resumed 9; $[1]: clean 1, resumed 9; $[2]: clean 2, resumed 9 (and 2 more)"
    )
