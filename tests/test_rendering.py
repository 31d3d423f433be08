"""Text lines on hand-built results: call summaries, the held call, the announced version, setup errors
once, and each matched note on its own line under the measured message."""

from plugpull.rendering import (
    call_summary,
    closing_line,
    duplicate_causes,
    format_text,
    held_call,
    shown_point,
    shown_target,
    summary_of,
)
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


def call(seq, phase, name, key=None, recorded=True, held_at=None):
    return {"seq": seq, "phase": phase, "name": name, "key": key, "recorded": recorded, "held_at": held_at}


def test_a_phase_without_calls_made_0_record_effect_calls():
    assert call_summary([call(1, "start", "refund")], "resume", "resume") == "resume made 0 record_effect calls"


def test_repeated_calls_are_counted_per_name():
    calls = [call(1, "resume", "refund"), call(2, "resume", "refund"), call(3, "resume", "email")]
    assert call_summary(calls, "resume", "resume") == "resume called refund twice, email once"


def test_calls_a_key_kept_from_counting_are_said_so():
    calls = [call(1, "approve-2", "refund", key="k", recorded=False)]
    assert call_summary(calls, "approve-2", "the second approve") == (
        "the second approve called refund once (1 with a key already recorded, so not counted again)"
    )


def test_the_held_call_is_named_by_its_number_among_its_names_calls_in_its_phase():
    calls = [
        call(1, "start", "charge_card"),
        call(2, "start", "send_email"),
        call(3, "start", "charge_card", held_at="after-effect"),
    ]
    assert held_call(calls) == "charge_card#2"
    assert held_call(calls[:2]) is None


def result(**changes) -> Result:
    base = dict(
        verdict=Verdict.PASS, scenario="kill-mid-tool", point="after-effect", target="python a.py", message="ok"
    )
    return Result(**{**base, **changes})


def test_the_saves_a_kill_was_aimed_at_follow_the_held_call():
    calls = [call(1, "start", "refund", held_at="after-effect")]
    evidence = {"calls": calls, "save_specs": ["checkpoint-save:2:withheld", "pending-writes:2:landed"]}
    assert shown_point(result(evidence=evidence)) == (
        "after-effect refund#1 [checkpoint-save 2 withheld, pending-writes 2 landed]"
    )
    assert shown_point(result(evidence={"calls": calls, "save_specs": []})) == "after-effect refund#1"


def test_an_agents_announced_framework_and_version_follow_its_command():
    assert shown_target(result(framework="langgraph", version="1.2.11")) == "python a.py [langgraph 1.2.11]"
    assert shown_target(result(target="langgraph 1.2.11 durability=sync", framework="langgraph", version="1.2.11")) == (
        "langgraph 1.2.11 durability=sync"
    )


def test_one_setup_error_at_every_point_is_one_line():
    failed = dict(verdict=Verdict.ERROR, message="a clean run (no kill) ended (exit code 2)", stderr="no such file\n")
    text = format_text([result(point="before-effect", **failed), result(point="after-effect", **failed)])
    assert text.splitlines() == [
        "ERROR  kill-mid-tool  every point  python a.py  a clean run (no kill) ended (exit code 2)",
        "    | no such file",
    ]


def test_a_fail_line_carries_the_call_summary_and_the_tail_of_resumes_stderr():
    stderr = "".join(f"line {i}\n" for i in range(30))
    calls = [call(1, "start", "refund", held_at="after-effect"), call(2, "resume", "refund")]
    text = format_text(
        [result(verdict=Verdict.FAIL, message="effect duplicated", stderr=stderr, evidence={"calls": calls})]
    )
    lines = text.splitlines()
    assert lines[0] == "FAIL   kill-mid-tool  after-effect refund#1  python a.py  effect duplicated"
    assert lines[1] == "    resume called refund once"
    assert lines[2].startswith("    refund counted twice: no key (start, held after-effect) vs no key (resume)")
    assert lines[3] == "    | ... (10 earlier lines in --json)"
    assert lines[-1] == "    | line 29" and len(lines) == 24


def failed(scenario: str, point: str, calls: list[dict], evidence: dict | None = None) -> Result:
    return Result(Verdict.FAIL, scenario, point, "six 1.0", "measured", evidence={"calls": calls, **(evidence or {})})


def test_the_summary_under_a_fail_is_about_the_phase_its_scenario_names_for_the_point():
    calls = [call(1, "approve-1", "refund"), call(2, "approve-2", "refund"), call(3, "recover", "refund")]
    assert (
        summary_of(failed("resume-after-approval", "double-resume", calls)) == "the second approve called refund once"
    )
    assert summary_of(failed("resume-after-approval", "killed-after-effect", calls)) == "recover called refund once"
    assert summary_of(failed("every-boundary", "after model-call 2", calls)) == "resume made 0 record_effect calls"
    # lost-session-write makes no effect calls; resume-after-upgrade's lines never had a summary.
    assert summary_of(failed("lost-session-write", "ack-lost", calls)) is None
    assert summary_of(failed("resume-after-upgrade", "after-effect", calls)) is None


def test_a_line_of_a_scenario_this_release_does_not_know_renders_with_the_contracts_defaults():
    result = failed("gone-scenario", "after-effect", [call(1, "start", "refund", held_at=1.0)])
    assert (shown_point(result), summary_of(result)) == ("after-effect refund#1", None)


def test_every_boundary_shows_the_boundarys_place_and_a_random_kill_where_it_landed():
    placed = failed("every-boundary", "after model-call 2", [], {"boundary": {"index": 7, "of": 12}})
    landed = failed("every-boundary", "random 3", [], {"landed": "between model-call 1 and effect refund 1"})
    assert shown_point(placed) == "boundary 7/12 after model-call 2"
    assert shown_point(landed) == "random 3: between model-call 1 and effect refund 1"


def counted(seq, phase, key=None, main_thread=None, held_at=None, name="refund"):
    made = {**call(seq, phase, name, key=key, held_at=held_at), "main_thread": main_thread}
    return made if main_thread is not None else {k: v for k, v in made.items() if k != "main_thread"}


def test_a_duplicate_made_with_a_new_key_on_resume_names_both_keys_and_phases():
    calls = [
        counted(1, "start", "call_56fd1a2b3c4d5e6f", held_at="after-effect"),
        counted(2, "resume", "call_4e2c9d0e1f2a3b4c"),
    ]
    assert duplicate_causes(calls) == [
        "refund counted twice: call_56fd1a2… (start, held after-effect) vs call_4e2c9d0… (resume): "
        "resume used a new key: call_56fd1a2… (start) vs call_4e2c9d0… (resume)"
    ]


def test_a_duplicate_without_a_key_says_every_call_is_a_new_effect():
    calls = [counted(1, "start", held_at="after-effect"), counted(2, "resume")]
    assert duplicate_causes(calls) == [
        "refund counted twice: no key (start, held after-effect) vs no key (resume): "
        "without a key every call is a new effect"
    ]


def test_a_duplicate_from_a_background_thread_says_which_call_came_from_it():
    calls = [counted(1, "start", "k1", main_thread=True), counted(2, "start", "k2", main_thread=False)]
    assert duplicate_causes(calls) == [
        "refund counted twice: k1 (start) vs k2 (start, background thread): start called again with a new key; "
        "the second call came from a background thread (start)"
    ]


def test_calls_all_from_background_threads_do_not_name_the_thread():
    calls = [counted(1, "start", main_thread=False, held_at="after-effect"), counted(2, "resume", main_thread=False)]
    assert duplicate_causes(calls) == [
        "refund counted twice: no key (start, held after-effect) vs no key (resume): "
        "without a key every call is a new effect"
    ]


def test_an_effect_counted_once_and_a_repeat_of_a_known_key_give_no_cause():
    calls = [counted(1, "start", "k1", held_at="after-effect"), {**counted(2, "resume", "k1"), "recorded": False}]
    assert duplicate_causes(calls) == []


def test_many_counted_calls_are_listed_up_to_four():
    calls = [counted(i, f"approve-{i}") for i in range(1, 7)]
    (said,) = duplicate_causes(calls)
    assert said.startswith("refund counted 6 times: no key (approve-1) vs no key (approve-2) vs ")
    assert "vs 2 more: without a key" in said


def test_a_duplicate_fail_line_says_why_under_the_call_summary():
    calls = [counted(1, "start", "a" * 32, held_at="after-effect"), counted(2, "resume", "b" * 32)]
    text = format_text([result(verdict=Verdict.FAIL, message="effect duplicated", evidence={"calls": calls})])
    assert text.splitlines()[1:] == [
        "    resume called refund once",
        "    refund counted twice: aaaaaaaaaaaa… (start, held after-effect) vs bbbbbbbbbbbb… (resume): "
        "resume used a new key: aaaaaaaaaaaa… (start) vs bbbbbbbbbbbb… (resume)",
    ]


def verdicts(*names: str) -> list[Result]:
    return [Result(Verdict(v), "kill-mid-tool", f"point {i}", "six 1.0", "m") for i, v in enumerate(names)]


def test_the_closing_line_counts_verdicts_and_says_the_exit_code_without_strict_is_0():
    two_fails = verdicts("FAIL", "PASS", "FAIL", "PASS")
    assert closing_line(two_fails) == (
        "2 FAIL, 2 PASS of 4 lines; exit code 0: a FAIL fails the command only with --strict (exit 1)"
    )
    assert closing_line(two_fails, strict=True) == "2 FAIL, 2 PASS of 4 lines; exit code 1 (--strict)"


def test_the_closing_line_of_a_run_with_an_error_says_exit_code_2_and_of_a_passing_run_only_counts():
    assert closing_line(verdicts("ERROR", "FAIL")).startswith("1 ERROR, 1 FAIL of 2 lines; exit code 2: ")
    assert closing_line(verdicts("PASS")) == "1 PASS of 1 line"
    assert closing_line([]) == "no line ran"


def test_the_closing_line_of_repeated_lines_counts_runs_of_lines():
    repeated = verdicts("PASS") * 3
    assert closing_line(repeated) == "3 PASS of 3 runs of 1 line"


def coverage_result(point: str, held: str, options=None, proof=True) -> Result:
    name, _, nth = held.rpartition("#")
    calls = [{"seq": 1, "phase": "start", "name": name, "held_at": point, "key": None}]
    evidence = {"effect_calls": ["reserve_stock#1", "charge_card#1", "send_receipt#1"], "calls": calls}
    evidence.update({"held_name": name, "proof": {"group": 1} if proof else None})
    return Result(
        Verdict.PASS, "kill-mid-tool", point, "python agent.py", "m", options=options or {}, evidence=evidence
    )


def test_the_coverage_line_counts_the_effect_calls_killed_at_and_names_the_others():
    from plugpull.rendering import format_coverage

    every = [coverage_result(p, c) for c in ("reserve_stock#1", "charge_card#1", "send_receipt#1") for p in ("b", "a")]
    assert format_coverage(every) == "kill-mid-tool, python agent.py: killed at 3 of 3 effect calls, 6 lines"
    first = every[:2]
    assert format_coverage(first) == (
        "kill-mid-tool, python agent.py: killed at 1 of 3 effect calls, 2 lines; not killed at charge_card#1, send_receipt#1"
    )
    # A kill that was not proven did not kill at its call; a target aimed by design gets no line.
    unproven = [coverage_result("b", "reserve_stock#1", proof=False)]
    assert "killed at 0 of 3 effect calls, 1 line;" in format_coverage(unproven)
    assert format_coverage([coverage_result("b", "charge_card#1", options={"hold": "charge_card"})]) == ""
