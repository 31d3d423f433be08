"""Run records on disk: schema 3 with the load and the witnesses; schema 1 and 2 records stay valid history."""

from pathlib import Path

from builders import put_record, record

from plugpull.report.kernel.record import problems
from plugpull.results import SCHEMA

NOTE = {"text": "consistent with #8292", "url": "https://example.org/8292", "condition": "A 2 times, B 0 times"}


def check(tmp_path: Path, doc: dict) -> list[str]:
    path = put_record(tmp_path, doc)
    return problems(path, path.parents[1])


def schema_2(**kw) -> dict:
    doc = record(**kw)
    doc["schema"] = 2
    for result in doc["results"]:
        result["notes"] = [NOTE] if result["verdict"] == "FAIL" else []
    return doc


WITNESS_RUN = {
    "exit_code": 1,
    "seconds": 2.5,
    "timed_out": False,
    "output": {"witness": "kill", "verdict": "FAIL", "counts": {"refund": 2}, "did": "killed, resumed"},
    "stderr_tail": "",
}


def schema_3(**kw) -> dict:
    doc = schema_2(**kw)
    doc["schema"] = 3
    doc["load"] = {"cores": 2, "start": [1.1, 0.9, 0.7], "end": [2.0, 1.2, 0.8]}
    doc["witnesses"] = [
        {
            "claim": "after-effect mode=a",
            "script": "witness/kill.py",
            "args": ["--x"],
            "runs": [WITNESS_RUN],
            "error": None,
        }
    ]
    return doc


def test_records_are_written_with_schema_3():
    assert SCHEMA == 3


def test_a_schema_3_record_with_its_load_and_witnesses_is_valid(tmp_path):
    assert check(tmp_path, schema_3(verdicts=("PASS", "FAIL"))) == []


def test_a_schema_3_record_needs_the_load_and_a_witnesses_list_of_runs(tmp_path):
    doc = schema_3()
    doc["load"] = {"cores": 0, "start": [1.0], "end": None}
    doc["witnesses"] = [{"claim": "x", "script": "w.py", "args": "--x", "runs": [{"exit_code": "1", "output": []}]}, 3]
    assert [line.split(": ", 1)[1] for line in check(tmp_path, doc)] == [
        "load.cores must be a positive number or null",
        "load.start must be the 1, 5 and 15 minute load averages or null",
        "witnesses[0] args must be a list of strings",
        "witnesses[0].runs[0] exit_code must be a number or null",
        "witnesses[0].runs[0] has no seconds",
        "witnesses[0].runs[0] output must be an object or null",
        "witnesses[1] is not an object",
    ]
    del doc["load"], doc["witnesses"]
    assert [line.split(": ", 1)[1] for line in check(tmp_path, doc)] == [
        "has no load object (cores, start, end)",
        "has no witnesses list",
    ]


def test_a_schema_2_record_with_notes_and_without_load_or_witnesses_stays_valid(tmp_path):
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
    doc = schema_3()
    doc["schema"] = 4
    assert [line.split(": ", 1)[1] for line in check(tmp_path, doc)] == ["schema 4, expected one of 1, 2, 3"]
