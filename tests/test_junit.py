"""JUnit XML (`plugpull --junit FILE`): the writer on hand-built results, then real runs, each file checked
against tests/junit.xsd (the structure of Jenkins' junit-10.xsd, which GitHub and GitLab read too)."""

import functools
import shlex
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from plugpull import junit
from plugpull.results import Result, Verdict

AGENTS = Path(__file__).parent / "agents"


@functools.cache
def schema():
    """tests/junit.xsd, loaded when a test first validates (xmlschema's import and the parse take about 1 s of CPU,
    paid at collection by every xdist worker when this was at the top)."""
    import xmlschema

    return xmlschema.XMLSchema(str(Path(__file__).with_name("junit.xsd")))


NOTE = {
    "text": "resume refunded again",
    "url": "https://docs.langchain.com/oss/python/langgraph/functional-api#idempotency",
    "condition": "resume recorded a refund",
}


def line(verdict: str, point: str = "after-effect", **extra) -> Result:
    fields = {
        "verdict": Verdict(verdict),
        "scenario": "kill-mid-tool",
        "point": point,
        "target": "langgraph 1.2.11 durability=sync key=none",
        "message": {
            "PASS": "the provider saw exactly 1 refund",
            "FAIL": "effect duplicated: the provider saw 2 refund (expected 1)",
        }.get(verdict, "start ended (exit code 1) before any effect call"),
        "framework": "langgraph",
        "version": "1.2.11",
        "options": {"durability": "sync", "key": "none"},
        "seconds": 1.25,
        "target_name": "langgraph",
    }
    fields.update(extra)
    return Result(**fields)


def written(results, tmp_path, properties=None) -> ET.Element:
    path = tmp_path / "junit.xml"
    junit.write(str(path), junit.document(results, properties))
    schema().validate(str(path))  # raises with the schema's reason when the file is not valid JUnit
    return ET.parse(path).getroot()


def test_each_line_is_a_testcase_named_by_its_point_and_options_in_a_class_of_scenario_and_target(tmp_path):
    root = written([line("PASS", "before-effect"), line("FAIL")], tmp_path)
    cases = root.findall("testsuite/testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("plugpull.kill-mid-tool.langgraph", "before-effect durability=sync key=none"),
        ("plugpull.kill-mid-tool.langgraph", "after-effect durability=sync key=none"),
    ]
    assert cases[0].find("failure") is None and cases[0].find("error") is None
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "1", "0")
    assert cases[1].get("time") == "1.250"


def test_a_fail_is_a_failure_with_the_message_the_notes_and_the_stderr_tail(tmp_path):
    stderr = "\n".join(f"log line {i}" for i in range(30)) + "\nRuntimeError: refund again"
    root = written([line("FAIL", notes=[NOTE], stderr=stderr)], tmp_path)
    failure = root.find("testsuite/testcase/failure")
    assert failure.get("type") == "FAIL"
    assert failure.get("message") == "effect duplicated: the provider saw 2 refund (expected 1)"
    body = failure.text.splitlines()
    assert body[0].startswith("FAIL   kill-mid-tool  after-effect  langgraph 1.2.11")
    assert f"    note: resume refunded again ({NOTE['url']})" in body
    # The text output's tail (20 lines) in the body; the whole captured tail under system-err.
    assert body[-1] == "    | RuntimeError: refund again" and "    | log line 0" not in body
    assert root.find("testsuite/testcase/system-err").text == stderr


def test_an_error_is_an_error_element_not_a_failure(tmp_path):
    root = written([line("ERROR", stderr="Traceback: boom")], tmp_path)
    case = root.find("testsuite/testcase")
    assert case.find("failure") is None
    error = case.find("error")
    assert (error.get("type"), error.get("message")) == ("ERROR", "start ended (exit code 1) before any effect call")
    assert "    | Traceback: boom" in error.text.splitlines()
    assert (root.get("failures"), root.get("errors")) == ("0", "1")


def test_one_testsuite_per_scenario_even_when_its_lines_are_not_adjacent(tmp_path):
    session = line("PASS", "write-lost", scenario="lost-session-write", target="openai-agents 0.22.2")
    root = written([line("PASS", "before-effect"), session, line("FAIL")], tmp_path)
    suites = root.findall("testsuite")
    assert [(s.get("name"), s.get("tests"), s.get("failures")) for s in suites] == [
        ("kill-mid-tool", "2", "1"),
        ("lost-session-write", "1", "0"),
    ]


def test_repeats_of_a_line_are_one_testcase_with_the_verdict_counts(tmp_path):
    runs = [line("PASS"), line("FAIL"), line("PASS"), line("ERROR"), line("FAIL")]
    root = written(runs, tmp_path)
    (case,) = root.findall("testsuite/testcase")
    failure = case.find("failure")
    assert failure.get("message") == (
        "2 PASS, 2 FAIL, 1 ERROR of 5 runs; first FAIL: effect duplicated: the provider saw 2 refund (expected 1)"
    )
    # The first FAIL's block and the first ERROR's, so neither kind of evidence is dropped.
    assert failure.text.count("\n\n") == 1 and "ERROR  kill-mid-tool" in failure.text
    assert case.get("time") == "6.250" and case.find("error") is None


def test_repeats_with_errors_and_no_fail_are_an_error(tmp_path):
    root = written([line("PASS"), line("ERROR")], tmp_path)
    assert root.find("testsuite/testcase/error").get("message").startswith("1 PASS, 1 ERROR of 2 runs; first ERROR: ")


def test_control_characters_in_stderr_are_escaped_so_the_file_stays_xml(tmp_path):
    root = written([line("FAIL", stderr="\x1b[31mred\x1b[0m and a NUL \x00 byte")], tmp_path)
    assert root.find("testsuite/testcase/system-err").text == "\\x1b[31mred\\x1b[0m and a NUL \\x00 byte"


def held(seq: int, name: str, nth_of_phase: int = 1) -> list[dict]:
    earlier = [{"seq": i, "phase": "start", "name": name, "key": None} for i in range(1, nth_of_phase)]
    return [*earlier, {"seq": seq, "phase": "start", "name": name, "key": None, "held_at": "after-effect"}]


def test_lines_holding_other_calls_or_siblings_are_testcases_with_other_names(tmp_path):
    charge = line("FAIL", evidence={"calls": held(1, "charge_card"), "hold": "charge_card:1"})
    receipt = line("PASS", evidence={"calls": held(1, "send_receipt"), "hold": "send_receipt:1"})
    running = line(
        "PASS",
        evidence={"calls": held(1, "charge_card"), "hold": "charge_card:1", "sibling_spec": "send_email:running"},
    )
    root = written([charge, receipt, running, line("PASS")], tmp_path)
    names = [c.get("name") for c in root.findall("testsuite/testcase")]
    assert names == [
        "after-effect charge_card#1 durability=sync key=none",
        "after-effect send_receipt#1 durability=sync key=none",
        "after-effect charge_card#1 durability=sync key=none sibling=send_email:running",
        "after-effect durability=sync key=none",
    ]


def test_an_agents_class_is_its_script_and_its_arguments_join_the_name(tmp_path):
    def agent_line(command: str, **extra) -> Result:
        fields = {"target": command, "framework": None, "version": None, "options": {}, "target_name": "agent"}
        return line("PASS", **{**fields, **extra})

    results = [
        agent_line("python /home/me/shop.v2/order_flow.py no-key"),
        agent_line("python /home/me/shop.v2/order_flow.py stable-key"),
        agent_line("uv run python -m shop.agent --fast", framework="langgraph", version="1.2.11"),
        agent_line("python /home/me/shop.v3/order_flow.py no-key"),
    ]
    root = written(results, tmp_path)
    assert [(c.get("classname"), c.get("name")) for c in root.findall("testsuite/testcase")] == [
        ("plugpull.kill-mid-tool.order_flow", "after-effect no-key"),
        ("plugpull.kill-mid-tool.order_flow", "after-effect stable-key"),
        ("plugpull.kill-mid-tool.shop_agent", "after-effect --fast"),
        ("plugpull.kill-mid-tool.order_flow", "after-effect no-key #2"),
    ]


def test_a_record_from_before_target_names_is_classed_by_its_framework(tmp_path):
    root = written([line("PASS", target_name="")], tmp_path)
    assert root.find("testsuite/testcase").get("classname") == "plugpull.kill-mid-tool.langgraph"


def test_repeats_of_a_random_kill_are_one_testcase_named_by_its_number(tmp_path):
    runs = [
        line("PASS", "random 1", scenario="every-boundary", evidence={"landed": where})
        for where in ("before any boundary", "between after model-call 1 and call of effect refund 1")
    ]
    (case,) = written(runs, tmp_path).findall("testsuite/testcase")
    assert (case.get("classname"), case.get("name")) == (
        "plugpull.every-boundary.langgraph",
        "random 1 durability=sync key=none",
    )


def test_a_boundary_line_is_named_by_its_boundary_not_its_place_in_the_list(tmp_path):
    placed = line(
        "FAIL", "after effect refund 1", scenario="every-boundary", evidence={"boundary": {"index": 7, "of": 12}}
    )
    (case,) = written([placed], tmp_path).findall("testsuite/testcase")
    assert case.get("name") == "after effect refund 1 durability=sync key=none"


def test_secret_looking_environment_values_are_redacted(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "sk-very-secret-value")
    root = written(
        [line("FAIL", stderr="using key sk-very-secret-value")], tmp_path, {"command": "x sk-very-secret-value"}
    )
    text = ET.tostring(root, encoding="unicode")
    assert "sk-very-secret-value" not in text and "[redacted]" in text


def test_properties_name_what_ran(tmp_path):
    results = [line("PASS")]
    props = junit.run_properties(results, ["--target", "langgraph"], repeat=3)
    root = written(results, tmp_path, props)
    got = {p.get("name"): p.get("value") for p in root.findall("testsuite/properties/property")}
    assert got["framework langgraph"] == "1.2.11"
    assert got["command"] == "plugpull --target langgraph" and got["repeat"] == "3"
    assert got["python"].count(".") == 2 and got["plugpull"]


def test_the_schema_rejects_what_ci_viewers_would_not_read(tmp_path):
    # Guards the schema test itself: a testcase without a name, and a failure outside a testcase.
    for bad in (
        '<testsuites><testsuite name="s" tests="1" failures="0" errors="0"><testcase/></testsuite></testsuites>',
        '<testsuites><testsuite name="s" tests="1" failures="1" errors="0"><failure/></testsuite></testsuites>',
    ):
        assert not schema().is_valid(bad)


def test_an_existing_file_is_replaced_whole(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text("old contents that are not XML")
    junit.write(str(path), junit.document([line("PASS")]))
    schema().validate(str(path))
    assert [p.name for p in tmp_path.iterdir()] == ["junit.xml"]


# Real runs of the command.


@pytest.fixture
def plugpull(plugpull_forking):
    """``plugpull ARGS`` in this process, its agents' phases forked (conftest's plugpull_forking)."""
    return plugpull_forking


def fake_agent(body: str) -> str:
    return shlex.join([sys.executable, "-m", "fake_framework", body])


def test_a_real_run_writes_a_valid_file_with_one_testcase_per_line(tmp_path, plugpull):
    out = tmp_path / "out"
    out.mkdir()
    path = out / "plugpull.xml"
    run = plugpull("--agent", fake_agent("no-key"), "--junit", str(path))
    assert run.returncode == 0, run.stderr
    schema().validate(str(path))
    root = ET.parse(path).getroot()
    cases = root.findall("testsuite/testcase")
    assert [(c.get("classname"), c.get("name"), c.find("failure") is not None) for c in cases] == [
        ("plugpull.kill-mid-tool.fake_framework", "before-effect charge#1 no-key", False),
        ("plugpull.kill-mid-tool.fake_framework", "after-effect charge#1 no-key", True),
    ]
    failure = cases[1].find("failure")
    assert failure.get("message") == "effect duplicated: the provider saw 2 charge (expected 1)"
    assert "    resume called charge once" in failure.text.splitlines()
    # The text output on stdout is unchanged by --junit.
    assert run.stdout.splitlines()[1].startswith("FAIL   kill-mid-tool  after-effect charge#1  ")


def test_a_real_fail_carries_resumes_stderr_in_system_err(tmp_path, plugpull):
    path = tmp_path / "plugpull.xml"
    command = shlex.join([sys.executable, "-m", "protocol_mistakes", "forgets-on-resume"])
    run = plugpull("--agent", command, "--point", "before-effect", "--junit", str(path))
    assert run.returncode == 0, run.stderr
    schema().validate(str(path))
    (case,) = ET.parse(path).getroot().findall("testsuite/testcase")
    assert (case.get("classname"), case.get("name")) == (
        "plugpull.kill-mid-tool.protocol_mistakes",
        "before-effect charge#1 forgets-on-resume",
    )
    assert case.find("system-err").text.strip() == "resume: run already finished"


def test_a_real_error_line_is_an_error_element_and_exit_2(tmp_path, plugpull):
    path = tmp_path / "plugpull.xml"
    command = shlex.join([sys.executable, "-m", "misbehaving", "crashes"])
    run = plugpull("--agent", command, "--point", "before-effect", "--junit", str(path))
    assert run.returncode == 2
    schema().validate(str(path))
    error = ET.parse(path).getroot().find("testsuite/testcase/error")
    assert "RuntimeError: the agent crashed" in error.text


@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("/proc/plugpull.xml", "its directory is not writable"),
        ("/nonexistent-dir/plugpull.xml", "its directory '/nonexistent-dir' does not exist"),
        ("{tmp}", "is a directory"),
    ],
)
def test_an_unwritable_junit_path_is_one_line_exit_2_before_anything_runs(tmp_path, where, why, plugpull_main):
    where = where.format(tmp=tmp_path)
    run = plugpull_main("--agent", fake_agent("no-key"), "--junit", where)
    assert run.returncode == 2 and run.stdout == ""
    (message,) = run.stderr.strip().splitlines()
    assert message.startswith(f"plugpull: --junit {where!r} {why}")
    assert list(tmp_path.iterdir()) == []


def test_the_timestamp_is_when_the_run_started(tmp_path):
    from datetime import datetime, timezone

    started = datetime(2026, 11, 30, 1, 2, 3, tzinfo=timezone.utc)
    path = tmp_path / "junit.xml"
    junit.write(str(path), junit.document([line("PASS")], started=started))
    assert ET.parse(path).getroot().find("testsuite").get("timestamp") == "2026-11-30T01:02:03"
