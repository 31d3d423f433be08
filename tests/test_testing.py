"""plugpull.testing on hand-built results: a result's repr is its line, the list's is the text output."""

from plugpull.results import Result, Verdict
from plugpull.testing import KillPoint, Results, RunResult, argv_for


def line(verdict: str, point: str) -> RunResult:
    return RunResult.of(
        Result(Verdict(verdict), "kill-mid-tool", point, "agent x", f"{verdict.lower()} at {point}", stderr="boom")
    )


def test_a_results_repr_is_its_line():
    assert repr(line("FAIL", "after-effect")) == "FAIL   kill-mid-tool  after-effect  agent x  fail at after-effect"


def test_the_lists_repr_is_the_text_output_with_details_under_non_pass_lines():
    results = Results([line("PASS", "before-effect"), line("FAIL", "after-effect")])
    assert repr(results).splitlines() == [
        "PASS   kill-mid-tool  before-effect  agent x  pass at before-effect",
        "FAIL   kill-mid-tool  after-effect   agent x  fail at after-effect",
        "    | boom",
    ]
    assert not results.passed and results.failed() == [results[1]]
    assert Results([line("PASS", "before-effect")]).passed and not Results().passed


def test_options_become_the_clis_flags():
    assert argv_for("python a.py", points=["before-effect"], hold="charge:2", repeat=3, fork_server=True) == [
        "--agent", "python a.py", "--point", "before-effect", "--hold", "charge:2",
        "--timeout", "120.0", "--repeat", "3", "--jobs", "1", "--fork-server",
    ]  # fmt: skip


def counted(verdict: str, point: str, counts: dict, calls: list | None = None) -> RunResult:
    evidence = {"counts": counts, "calls": calls or []}
    message = "the provider saw exactly 1 refund" if verdict == "PASS" else "effect duplicated"
    return RunResult.of(Result(Verdict(verdict), "kill-mid-tool", point, "agent x", message, evidence=evidence))


def raised(check) -> str:
    try:
        check()
    except AssertionError as exc:
        return str(exc)
    raise AssertionError("the check passed")


def test_assert_all_pass_names_every_line_that_did_not_pass_with_its_evidence():
    calls = [
        {"seq": 1, "phase": "start", "name": "refund", "key": None, "recorded": True, "held_at": "after-effect"},
        {"seq": 2, "phase": "resume", "name": "refund", "key": None, "recorded": True},
    ]
    results = Results(
        [counted("PASS", "before-effect", {"refund": 1}), counted("FAIL", "after-effect", {"refund": 2}, calls)]
    )
    assert raised(results.assert_all_pass).splitlines() == [
        "1 of 2 plugpull lines did not PASS:",
        "FAIL   kill-mid-tool  after-effect refund#1  agent x  effect duplicated",
        "    resume called refund once",
        "    refund counted twice: no key (start, held after-effect) vs no key (resume): "
        "without a key every call is a new effect",
    ]
    Results([results[0]]).assert_all_pass()


def test_assert_exactly_once_names_the_line_and_the_count_that_broke_it():
    results = Results([counted("PASS", "before-effect", {"refund": 1}), counted("FAIL", "after-effect", {"refund": 2})])
    message = raised(lambda: results.assert_exactly_once("refund")).splitlines()
    assert message[:3] == [
        "refund not done exactly once on 1 of 2 plugpull lines:",
        "the provider saw 2 refund:",
        "FAIL   kill-mid-tool  after-effect  agent x  effect duplicated",
    ]
    Results([results[0]]).assert_exactly_once("refund")


def test_assert_exactly_once_on_a_name_no_line_counted_lists_the_names_that_were():
    results = Results([counted("PASS", "before-effect", {"refund": 1})])
    assert raised(lambda: results.assert_exactly_once("refnud")).splitlines()[0] == (
        "refnud was counted on no plugpull line; counted: refund"
    )


def test_both_assertions_refuse_a_run_of_no_line():
    assert raised(Results().assert_all_pass) == "plugpull ran no line"
    assert raised(lambda: Results().assert_exactly_once("refund")) == "plugpull ran no line"


def test_a_kill_point_is_its_id_as_a_test_id():
    point = KillPoint("after-effect charge#1", {"points": "after-effect", "hold": "charge:1"})
    assert str(point) == "after-effect charge#1"
    assert argv_for("python a.py", **point.options)[:6] == [
        "--agent", "python a.py", "--point", "after-effect", "--hold", "charge:1",
    ]  # fmt: skip
