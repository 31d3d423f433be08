"""Text lines: the measured message on the result line, each matched note on its own line under it."""

from plugpull.rendering import format_text
from plugpull.results import Result, Verdict

NOTE = {"text": "resume refunded again", "url": "https://example.org/idempotency", "condition": "refund 2 times"}


def line(verdict: Verdict, notes: list[dict], stderr: str = "") -> Result:
    return Result(verdict, "kill-mid-tool", "after-effect", "six 1.0", "measured", notes=notes, stderr=stderr)


def test_a_note_is_printed_under_the_line_apart_from_the_measured_message():
    text = format_text([line(Verdict.FAIL, [NOTE, {**NOTE, "text": "second", "url": None}], stderr="boom\n")])
    first, *rest = text.splitlines()
    assert first.endswith("six 1.0  measured")
    assert rest == [
        "    note: resume refunded again (https://example.org/idempotency)",
        "    note: second",
        "    | boom",
    ]


def test_a_line_without_notes_prints_no_note_line():
    assert "note:" not in format_text([line(Verdict.FAIL, [])])
