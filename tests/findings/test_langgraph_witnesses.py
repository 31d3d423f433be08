"""The LangGraph witnesses (findings/*/witness/*.py) run for real: framework only, their own SIGKILL, one JSON line.

Each runs through the report's witness runner (a fresh cwd, no PLUGPULL_* in its environment) on the
default environment's LangGraph, and must give the verdict and counts its claims say.
"""

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


@pytest.mark.parametrize(
    "args, verdict, refunds",
    [
        (["--durability", "sync", "--key", "none", "--point", "after-effect"], "FAIL", 2),
        (["--durability", "async", "--key", "none", "--point", "after-effect"], "FAIL", 2),
        (["--durability", "sync", "--key", "none", "--point", "before-effect"], "PASS", 1),
        (["--durability", "sync", "--key", "tool-call-id", "--point", "after-effect"], "PASS", 1),
        (["--durability", "async", "--key", "tool-call-id", "--model-step", "unsaved"], "FAIL", 2),
        (["--durability", "async", "--key", "tool-call-id", "--model-step", "writes-saved"], "PASS", 1),
        (["--durability", "async", "--key", "tool-call-id", "--model-step", "saved"], "PASS", 1),
    ],
)
def test_the_kill_mid_tool_witness_gives_each_lines_verdict(args, verdict, refunds):
    output = witness(KILL, *args)
    assert (output["verdict"], output["counts"]) == (verdict, {"refund": refunds}), output["did"]


def test_the_kill_mid_tool_witness_starts_under_another_interpreter_for_an_upgrade():
    output = witness(KILL, "--durability", "sync", "--key", "none", "--start-python", sys.executable)
    assert output["verdict"] == "FAIL" and output["counts"] == {"refund": 2}


@pytest.mark.parametrize(
    "args, verdict, refunds",
    [
        (["--key", "none", "--point", "after-effect"], "FAIL", 2),
        (["--key", "checkpointed", "--draft", "unsaved"], "FAIL", 2),
        (["--key", "checkpointed", "--draft", "saved"], "PASS", 1),
    ],
)
def test_the_functional_api_witness_gives_each_lines_verdict(args, verdict, refunds):
    output = witness(FUNCTIONAL, *args)
    assert (output["verdict"], output["counts"]) == (verdict, {"refund": refunds}), output["did"]


def test_the_approval_witness_counts_a_refund_per_racing_approver_that_ran_the_tool():
    output = witness(APPROVAL, "--point", "racing-resumers")
    assert output["verdict"] == "FAIL" and 2 <= output["counts"]["refund"] <= 5, output["did"]


def test_the_approval_witness_recovers_a_kill_after_the_refund_by_refunding_again():
    output = witness(APPROVAL, "--point", "killed-after-effect", "--durability", "async")
    assert (output["verdict"], output["counts"]) == ("FAIL", {"refund": 2}), output["did"]
