"""The LangGraph witnesses (findings/*/witness/*.py) run for real: framework only, their own SIGKILL, one JSON line.

Each runs through the report's witness runner (a fresh cwd, no PLUGPULL_* in its environment) on the
default environment's LangGraph, and must give the verdict and counts its claims say. Most lines run with
``--fork`` (LangGraph imported once, each phase a process forked from the witness); one line per script runs
cold, each phase a new interpreter, as a reader and the records run it, and forked on the same line gives
the same verdict and counts.
"""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from installed import requires
from plugpull.report.harness.witness import run_once

pytestmark = [pytest.mark.witness, requires("langgraph")]
FINDINGS = Path(__file__).parent.parent.parent / "findings"
KILL = FINDINGS / "langgraph-kill-mid-tool" / "witness" / "kill_mid_tool.py"
FUNCTIONAL = FINDINGS / "kill-mid-tool-more-frameworks" / "witness" / "langgraph_functional.py"
APPROVAL = FINDINGS / "resume-after-approval" / "witness" / "langgraph_approval.py"


def witness(script: Path, *args: str) -> dict:
    run = run_once([sys.executable, str(script), *args], timeout=300)
    output = run["output"]
    assert output is not None, run
    assert run["exit_code"] == {"PASS": 0, "FAIL": 1, "ERROR": 2}[output["verdict"]], run
    assert output["witness"] == script.stem and output["framework"] == "langgraph" and output["version"]
    return output


def line(output: dict) -> tuple:
    return output["verdict"], output["counts"]


def test_the_kill_mid_tool_witness_run_cold_refunds_twice_and_forked_says_the_same():
    args = ["--durability", "sync", "--key", "none", "--point", "after-effect"]
    cold = witness(KILL, *args)
    assert line(cold) == ("FAIL", {"refund": 2}), cold["did"]
    assert line(witness(KILL, *args, "--fork")) == line(cold)


@pytest.mark.parametrize(
    "args, verdict, refunds",
    [
        (["--durability", "async", "--key", "none", "--point", "after-effect"], "FAIL", 2),
        (["--durability", "sync", "--key", "none", "--point", "before-effect"], "PASS", 1),
        (["--durability", "sync", "--key", "tool-call-id", "--point", "after-effect"], "PASS", 1),
        (["--durability", "async", "--key", "tool-call-id", "--model-step", "unsaved"], "FAIL", 2),
        (["--durability", "async", "--key", "tool-call-id", "--model-step", "writes-saved"], "PASS", 1),
        (["--durability", "async", "--key", "tool-call-id", "--model-step", "saved"], "PASS", 1),
    ],
)
def test_the_kill_mid_tool_witness_forked_gives_each_lines_verdict(args, verdict, refunds):
    output = witness(KILL, *args, "--fork")
    assert line(output) == (verdict, {"refund": refunds}), output["did"]


def test_the_kill_mid_tool_witness_forked_still_starts_cold_under_another_interpreter(tmp_path):
    # Another path to this venv's Python stands for another release's: the start must run under it, cold,
    # and only the resume is forked.
    calls = tmp_path / "calls"
    other = tmp_path / "python"
    other.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {sys.executable} "$@"\n')
    other.chmod(0o755)
    output = witness(KILL, "--durability", "sync", "--key", "none", "--start-python", str(other), "--fork")
    assert line(output) == ("FAIL", {"refund": 2}) and output["start_version"] == output["version"]
    started = calls.read_text().splitlines()
    assert len(started) == 2 and started[0].startswith("-c ") and started[1].endswith("--phase start"), started
    assert os.path.basename(started[1].split()[0]) == KILL.name


@pytest.mark.parametrize(
    "args, verdict, refunds, fork",
    [
        (["--key", "none", "--point", "after-effect"], "FAIL", 2, False),
        (["--key", "checkpointed", "--draft", "unsaved"], "FAIL", 2, True),
        (["--key", "checkpointed", "--draft", "saved"], "PASS", 1, True),
    ],
    ids=["cold", "forked-unsaved", "forked-saved"],
)
def test_the_functional_api_witness_gives_each_lines_verdict(args, verdict, refunds, fork):
    output = witness(FUNCTIONAL, *args, *(["--fork"] if fork else []))
    assert line(output) == (verdict, {"refund": refunds}), output["did"]
    if not fork:
        assert line(witness(FUNCTIONAL, *args, "--fork")) == line(output)


def test_the_approval_witness_forked_counts_a_refund_per_racing_approver_that_ran_the_tool():
    output = witness(APPROVAL, "--point", "racing-resumers", "--fork")
    assert output["verdict"] == "FAIL" and 2 <= output["counts"]["refund"] <= 5, output["did"]


def test_the_approval_witness_run_cold_recovers_a_kill_after_the_refund_by_refunding_again_as_forked_does():
    args = ["--point", "killed-after-effect", "--durability", "async"]
    cold = witness(APPROVAL, *args)
    assert line(cold) == ("FAIL", {"refund": 2}), cold["did"]
    assert line(witness(APPROVAL, *args, "--fork")) == line(cold)


def test_fork_off_linux_is_a_one_line_usage_error(monkeypatch, capsys):
    # The script imports LangGraph only in its phases, so its main() runs here, in this process.
    spec = importlib.util.spec_from_file_location("kill_mid_tool", KILL)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(SystemExit) as stop:
        script.main(["--fork"])
    assert stop.value.code == 2 and capsys.readouterr().err.splitlines()[-1].endswith(
        "--fork: needs Linux (os.fork, os.pidfd_open)"
    )
