"""Run records on disk: schema 2 with notes apart from the message; schema 1 records stay valid history."""

from pathlib import Path

from builders import put_record, record

from plugpull.report.record import problems
from plugpull.results import SCHEMA

NOTE = {"text": "consistent with #8292", "url": "https://example.org/8292", "condition": "A 2 times, B 0 times"}


def check(tmp_path: Path, doc: dict) -> list[str]:
    path = put_record(tmp_path, doc)
    return problems(path, path.parents[1])


def schema_2(**kw) -> dict:
    doc = record(**kw)
    doc["schema"] = SCHEMA
    for result in doc["results"]:
        result["notes"] = [NOTE] if result["verdict"] == "FAIL" else []
    return doc


def test_records_are_written_with_schema_2():
    assert SCHEMA == 2


def test_a_schema_2_record_with_notes_is_valid(tmp_path):
    assert check(tmp_path, schema_2(verdicts=("PASS", "FAIL"))) == []


def test_a_schema_1_record_without_notes_stays_valid(tmp_path):
    doc = record(verdicts=("FAIL",))
    assert doc["schema"] == 1 and "notes" not in doc["results"][0]
    assert check(tmp_path, doc) == []


def test_a_schema_2_record_needs_a_notes_list_of_text_url_and_condition(tmp_path):
    doc = schema_2(verdicts=("FAIL", "FAIL", "FAIL"))
    del doc["results"][0]["notes"]
    doc["results"][1]["notes"] = [{"text": "t", "url": 3}]
    doc["results"][2]["notes"] = ["just words"]
    found = check(tmp_path, doc)
    assert [line.split(": ", 1)[1] for line in found] == [
        "results[0] has no notes list",
        "results[1] notes[0] has no condition",
        "results[1] notes[0] url must be null or a string",
        "results[2] notes[0] is not an object",
    ]


def test_an_unknown_schema_is_a_problem(tmp_path):
    doc = schema_2()
    doc["schema"] = 3
    assert [line.split(": ", 1)[1] for line in check(tmp_path, doc)] == ["schema 3, expected one of 1, 2"]
