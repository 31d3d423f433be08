"""The LangGraph witnesses (findings/*/witness/*.py) run for real: framework only, their own SIGKILL, one JSON line.

Each runs on the default environment's LangGraph in a fresh cwd without PLUGPULL_* in its environment, and must
give the verdict and counts its claims say. Lines run with ``--fork`` (each phase a process forked from the
witness), the witness itself forked from the module's server that imported LangGraph once (witness_server). One line
of the family runs cold through the report's witness runner, each phase a new interpreter, as a reader and the
records run it, and forked on the same line gives the same verdict and counts: kill_mid_tool.py's, the headline
finding's, whose start also runs cold under another interpreter below. The other scripts' lines are forked only; the
records run every line cold (docs/DECISIONS.md, "The test suite").
"""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from installed import requires
from plugpull.report.harness.witness import run_once
from witness_server import WitnessServer, whole_output

pytestmark = [pytest.mark.witness, requires("langgraph")]
FINDINGS = Path(__file__).parent.parent.parent / "findings"
KILL = FINDINGS / "langgraph-kill-mid-tool" / "witness" / "kill_mid_tool.py"
FUNCTIONAL = FINDINGS / "kill-mid-tool-more-frameworks" / "witness" / "langgraph_functional.py"
APPROVAL = FINDINGS / "resume-after-approval" / "witness" / "langgraph_approval.py"
CANCEL = FINDINGS / "cancel-mid-stream" / "witness" / "langgraph_cancel.py"


@pytest.fixture(scope="module")
def server():
    with WitnessServer([KILL, FUNCTIONAL, APPROVAL, CANCEL]) as server:
        yield server


def witness(script: Path, *args: str, server: WitnessServer | None = None) -> dict:
    """The witness's output, checked to be whole; forked from ``server`` when given, else cold (run_once)."""
    run = server.run(script, *args) if server else run_once([sys.executable, str(script), *args], timeout=300)
    return whole_output(run, script, "langgraph")


def line(output: dict) -> tuple:
    return output["verdict"], output["counts"]


def test_the_kill_mid_tool_witness_run_cold_refunds_twice_and_forked_says_the_same(server):
    args = ["--durability", "sync", "--key", "none", "--point", "after-effect"]
    cold = witness(KILL, *args)
    assert line(cold) == ("FAIL", {"refund": 2}), cold["did"]
    assert line(witness(KILL, *args, "--fork", server=server)) == line(cold)


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
def test_the_kill_mid_tool_witness_forked_gives_each_lines_verdict(server, args, verdict, refunds):
    output = witness(KILL, *args, "--fork", server=server)
    assert line(output) == (verdict, {"refund": refunds}), output["did"]


def test_the_kill_mid_tool_witness_forked_still_starts_cold_under_another_interpreter(server, tmp_path):
    # Another path to this venv's Python stands for another release's: the start must run under it, cold,
    # and only the resume is forked.
    calls = tmp_path / "calls"
    other = tmp_path / "python"
    other.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {sys.executable} "$@"\n')
    other.chmod(0o755)
    output = witness(
        KILL, "--durability", "sync", "--key", "none", "--start-python", str(other), "--fork", server=server
    )
    assert line(output) == ("FAIL", {"refund": 2}) and output["start_version"] == output["version"]
    started = calls.read_text().splitlines()
    assert len(started) == 2 and started[0].startswith("-c ") and started[1].endswith("--phase start"), started
    assert os.path.basename(started[1].split()[0]) == KILL.name


@pytest.mark.parametrize(
    "args, verdict, refunds",
    [
        (["--key", "none", "--point", "after-effect"], "FAIL", 2),
        (["--key", "checkpointed", "--draft", "unsaved"], "FAIL", 2),
        (["--key", "checkpointed", "--draft", "saved"], "PASS", 1),
    ],
    ids=["after-effect", "unsaved", "saved"],
)
def test_the_functional_api_witness_forked_gives_each_lines_verdict(server, args, verdict, refunds):
    output = witness(FUNCTIONAL, *args, "--fork", server=server)
    assert line(output) == (verdict, {"refund": refunds}), output["did"]


def test_the_approval_witness_forked_counts_a_refund_per_racing_approver_that_ran_the_tool(server):
    output = witness(APPROVAL, "--point", "racing-resumers", "--fork", server=server)
    # A race, one sample: the approvers are released together once all have imported LangGraph, but one that loads
    # the checkpoint after another finished its resume finds no pending interrupt and runs nothing (as double-resume
    # does). Beside other work that happened once in a full suite run here (1 refund). Either outcome is held to its
    # shape; the claim's records say how often which (findings/resume-after-approval).
    assert output["did"].startswith("5 approvers resumed the interrupt at once"), output["did"]
    refunds = output["counts"]["refund"]
    assert output["did"].endswith(f": {refunds} refund(s), durability=sync"), output["did"]
    if output["verdict"] == "PASS":  # the approvers did not overlap: one resumed, the others found nothing to resume
        assert output["counts"] == {"refund": 1}, output["did"]
    else:  # they overlapped: each approver that loaded the pending interrupt ran the node
        assert output["verdict"] == "FAIL" and 2 <= refunds <= 5, output


def test_the_approval_witness_forked_recovers_a_kill_after_the_refund_by_refunding_again(server):
    output = witness(APPROVAL, "--point", "killed-after-effect", "--durability", "async", "--fork", server=server)
    assert line(output) == ("FAIL", {"refund": 2}), output["did"]


@pytest.mark.parametrize(
    "args, verdict",
    [
        (["--point", "model-stream"], "FAIL"),
        (["--point", "model-stream", "--style", "keyboard-interrupt", "--durability", "sync"], "PASS"),
        (["--point", "after-final-answer"], "FAIL"),
    ],
    ids=["model-stream", "model-stream-ctrl-c-sync", "after-final-answer"],
)
def test_the_cancel_witness_forked_from_the_server_gives_each_lines_verdict(server, args, verdict):
    # The cancel witness is one process with no phases (no --fork of its own): forked from the server it runs all of
    # its code but LangGraph's import, a fraction of a CPU-second where a cold run costs ~1.5. The records run it cold.
    output = witness(CANCEL, *args, server=server)
    assert line(output) == (verdict, {"refund": 1}), output["did"]


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
