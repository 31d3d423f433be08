"""The notebooks' table: notes in a column of their own, apart from the measured message."""

from plugpull.report.notebook import table
from plugpull.results import Result, Verdict

NOTE = {"text": "consistent with #8292", "url": "https://example.org/8292", "condition": "A 2 times, B 0 times"}


def test_the_table_shows_matched_notes_apart_from_the_message():
    rows = table(
        [
            Result(Verdict.FAIL, "kill-mid-tool", "after-effect", "t", "effect duplicated", notes=[NOTE]),
            Result(Verdict.PASS, "kill-mid-tool", "before-effect", "t", "exactly 1"),
        ]
    )
    assert list(rows["message"]) == ["effect duplicated", "exactly 1"]
    assert list(rows["notes"]) == ["consistent with #8292 (https://example.org/8292)", ""]
