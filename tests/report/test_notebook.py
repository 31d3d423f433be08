"""The notebooks' table: one row per line, notes in a column of their own, apart from the measured counts."""

from plugpull.report.notebook import table
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
