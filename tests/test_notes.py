"""Notes attach to a FAIL line only when their condition holds, and read partial evidence as "not observed"."""

from plugpull import notes
from plugpull.notes import Note, matched
from plugpull.results import Result, Verdict

ALWAYS = Note(text="always true", condition="always", holds=lambda r: True, url="https://example.org/a")
NEVER = Note(text="never true", condition="never", holds=lambda r: False)


def result(verdict: str, evidence: dict | None = None, stderr: str = "") -> Result:
    return Result(
        Verdict(verdict), "kill-mid-tool", "after-effect", "t", "measured", evidence=evidence or {}, stderr=stderr
    )


def test_a_fail_gets_each_note_whose_condition_holds_as_text_url_and_condition():
    assert matched((ALWAYS, NEVER), result("FAIL")) == [
        {"text": "always true", "url": "https://example.org/a", "condition": "always"}
    ]


def test_a_pass_or_an_error_gets_no_note_even_when_the_condition_holds():
    assert matched((ALWAYS,), result("PASS")) == []
    assert matched((ALWAYS,), result("ERROR")) == []


def test_a_note_is_described_with_its_link_or_alone():
    assert notes.describe(ALWAYS.to_dict()) == "always true (https://example.org/a)"
    assert notes.describe(NEVER.to_dict()) == "never true"


def test_the_message_is_left_as_measured_and_notes_go_to_their_own_field_in_json():
    line = result("FAIL")
    line.notes = matched((ALWAYS,), line)
    data = line.to_dict()
    assert data["message"] == "measured"
    assert data["notes"] == [{"text": "always true", "url": "https://example.org/a", "condition": "always"}]
    assert Result.from_dict(data) == line


def test_a_schema_1_result_without_notes_reads_back_with_none():
    data = result("FAIL").to_dict()
    del data["notes"]
    assert Result.from_dict(data).notes == []


def test_readers_count_only_what_the_evidence_shows():
    ev = {
        "counts": {"refund": 2},
        "calls": [
            {"phase": "start", "name": "refund", "recorded": True},
            {"phase": "resume", "name": "refund", "recorded": False},
            {"phase": "resume", "name": "refund", "recorded": True},
            {"phase": "resume", "name": "other", "recorded": True},
        ],
    }
    line = result("FAIL", ev)
    assert notes.count(line, "refund") == 2 and notes.count(line, "missing") == 0
    assert notes.recorded_calls(line, "refund", "resume") == 1
    assert notes.recorded_calls(line, "refund", "start") == 1


def test_readers_take_missing_or_null_evidence_as_not_observed():
    # An ERROR line's evidence may lack counts, calls, approvals or recover altogether.
    for ev in ({}, {"counts": None, "calls": None, "approvals": None, "recover": None}):
        line = result("FAIL", ev)
        assert notes.counts(line) == {} and notes.count(line, "refund") == 0
        assert notes.recorded_calls(line, "refund", "resume") == 0
        assert notes.approvers_that_ran_the_tool(line) == 0
        assert notes.recover_ran_the_tool(line) is False
        assert notes.recover_exit(line) is None


def test_a_recover_that_hung_or_never_started_has_no_exit_code():
    def with_recover(**outcome):
        return result("FAIL", {"recover": {"outcome": {"returncode": None, **outcome}, "effect_calls": 0}})

    assert notes.recover_exit(with_recover(returncode=4)) == 4
    assert notes.recover_exit(with_recover(returncode=-9, timed_out=True)) is None
    assert notes.recover_exit(with_recover(spawn_error="no such file")) is None


def test_a_resume_that_hung_or_never_ran_has_no_exit_code_and_a_missing_result_list_is_no_result():
    assert notes.resume_exit(result("FAIL", {"resume": {"returncode": 0}})) == 0
    assert notes.resume_exit(result("FAIL", {"resume": {"returncode": -9, "timed_out": True}})) is None
    assert notes.resume_exit(result("FAIL", {"resume": {"returncode": None, "spawn_error": "no such file"}})) is None
    assert notes.resume_exit(result("FAIL", {"resume": None})) is None
    assert notes.resume_reported_result(result("FAIL", {"resumed": [{"answer": "done"}]})) is True
    assert notes.resume_reported_result(result("FAIL", {"resumed": []})) is False
    assert notes.resume_reported_result(result("FAIL", {})) is False


def test_the_agent_framework_signature_note_is_for_a_refusal_across_1_20_only():
    from plugpull.results import Result, Verdict
    from plugpull.targets.families.agent_framework import AGENT_FRAMEWORK_SIGNATURE_CHANGED as note

    def refused(start, end):
        return Result(
            Verdict.FAIL,
            "resume-after-upgrade",
            "after-effect",
            "t",
            "refused the saved run: ...",
            evidence={"from_version": start, "to_version": end},
            stderr="ValueError: Checkpoint 'c' was created by a different version of workflow 'w'",
        )

    assert note.holds(refused("1.19.0", "1.20.0")) and note.holds(refused("1.18.0", "1.23.0"))
    assert not note.holds(refused("1.20.0", "1.23.0")) and not note.holds(refused("1.18.0", "1.19.0"))
    crashed = refused("1.19.0", "1.20.0")
    crashed.message = "resume crashed (exit code 1)"
    assert not note.holds(crashed)
