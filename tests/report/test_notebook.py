"""The notebooks' table: one row per line, notes in a column of their own, apart from the measured counts."""

from plugpull.report.kernel.notebook import table
from plugpull.results import Result, Verdict

NOTE = {"text": "consistent with #8292", "url": "https://example.org/8292", "condition": "A 2 times, B 0 times"}


def run(verdict: Verdict, point: str, notes: list[dict] | None = None) -> Result:
    return Result(verdict, "kill-mid-tool", point, "t", "measured", notes=notes or [])


def test_the_table_shows_matched_notes_apart_from_the_counts():
    rows = table([run(Verdict.FAIL, "after-effect", [NOTE]), run(Verdict.PASS, "before-effect")])
    assert list(rows["point"]) == ["after-effect", "before-effect"]
    assert list(rows["notes"]) == ["consistent with #8292 (https://example.org/8292)", ""]


def test_with_repeats_a_note_says_how_many_runs_it_attached_to():
    rows = table([run(Verdict.FAIL, "after-effect", [NOTE]), run(Verdict.PASS, "after-effect")])
    assert list(rows["runs"]) == [2]
    assert list(rows["notes"]) == ["consistent with #8292 (https://example.org/8292) ×1"]


def boundary_line(verdict: Verdict, side: str, index: int, label: str, message: str = "measured") -> Result:
    evidence = {"boundary": {"index": index, "of": 2, "label": label}, "counts": {"refund": 1}}
    return Result(verdict, "every-boundary", f"{side} {label}", "t", message, evidence=evidence)


def test_the_boundary_table_gives_each_line_its_place_and_the_map_draws_one_row_per_side():
    from plugpull.report.kernel.notebook import boundary_map, boundary_table

    results = [
        boundary_line(Verdict.PASS, "before", 1, "model-call 1"),
        boundary_line(Verdict.FAIL, "after", 2, "effect refund 1", "effect duplicated: the provider saw 2 refund"),
    ]
    rows = boundary_table(results)
    assert list(rows["place"]) == ["1/2", "2/2"]
    assert list(rows["verdict"]) == ["PASS", "FAIL"]
    fig = boundary_map(results)
    [ax] = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["before", "after"]
    assert "dup" in [t.get_text() for t in ax.texts]


def test_a_failed_boundary_is_named_by_what_broke():
    from plugpull.report.kernel.notebook import failure_kind

    def kind(message):
        return failure_kind(boundary_line(Verdict.FAIL, "after", 1, "x 1", message))

    assert kind("resume crashed (exit code 1); effect lost: the provider saw 0 refund") == "stuck"
    assert kind("effect duplicated: the provider saw 2 refund (expected 1)") == "dup"
    assert kind("effect lost: the provider saw 0 refund (expected 1)") == "lost"
    assert kind('result differs from the clean run: $.answer: clean "a", resumed null') == "result"
