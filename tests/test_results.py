"""Results grouped per line: the one grouping the tally, JUnit and the notebooks count by."""

from plugpull.results import Line, Result, Verdict, line_of, lines, tally


def result(point: str, target: str, verdict: Verdict = Verdict.PASS, scenario: str = "kill-mid-tool") -> Result:
    return Result(verdict, scenario, point, target, "measured")


def test_repeats_of_a_line_are_grouped_in_the_order_the_lines_were_first_seen():
    runs = [
        result("after-effect", "a"),
        result("before-effect", "a"),
        result("after-effect", "a", Verdict.FAIL),
        result("after-effect", "b"),
    ]
    grouped = lines(runs)
    assert list(grouped) == [
        Line("kill-mid-tool", "after-effect", "a"),
        Line("kill-mid-tool", "before-effect", "a"),
        Line("kill-mid-tool", "after-effect", "b"),
    ]
    assert grouped[line_of(runs[0])] == [runs[0], runs[2]]


def test_the_same_point_and_target_under_two_scenarios_are_two_lines():
    assert len(lines([result("after-effect", "a"), result("after-effect", "a", scenario="resume-after-upgrade")])) == 2


def test_the_tally_counts_each_lines_verdicts():
    runs = [result("after-effect", "a"), result("after-effect", "a", Verdict.FAIL), result("after-effect", "a")]
    assert tally(runs) == [
        {
            "scenario": "kill-mid-tool",
            "point": "after-effect",
            "target": "a",
            "runs": 3,
            "PASS": 2,
            "FAIL": 1,
            "ERROR": 0,
        }
    ]


def test_lines_that_held_different_calls_are_different_lines_unless_the_target_holds_its_own():
    # kill-mid-tool's default run and a repeated --hold make one line per held call.
    charge = Result(Verdict.FAIL, "kill-mid-tool", "after-effect", "a", "m", evidence={"hold": "charge_card:1"})
    receipt = Result(Verdict.PASS, "kill-mid-tool", "after-effect", "a", "m", evidence={"hold": "send_receipt:1"})
    assert list(lines([charge, receipt, charge])) == [
        Line("kill-mid-tool", "after-effect charge_card:1", "a"),
        Line("kill-mid-tool", "after-effect send_receipt:1", "a"),
    ]
    # A siblings target names its own hold among its options: its line is the point, as recorded.
    own = Result(
        Verdict.PASS, "kill-mid-tool", "after-effect", "b hold=charge_card", "m", options={"hold": "charge_card"}
    )
    own.evidence = {"hold": "charge_card:1"}
    assert line_of(own) == Line("kill-mid-tool", "after-effect", "b hold=charge_card")
