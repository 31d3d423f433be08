"""The DBOS and Pydantic AI witnesses (findings/*/witness/): the framework only, their own SIGKILL."""

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from installed import requires

pytestmark = [pytest.mark.witness, requires("dbos")]

FINDINGS = Path(__file__).parents[2] / "findings"


def witness(tmp_path: Path, script: Path, *args: str) -> tuple[int, dict, subprocess.CompletedProcess]:
    run = subprocess.run(
        [sys.executable, str(script), *args], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else "null"
    return run.returncode, json.loads(last), run


@pytest.mark.parametrize(
    "args, code, verdict, refunds, status",
    [
        (["--point", "before-effect"], 0, "PASS", 1, "SUCCESS"),
        (["--point", "after-effect"], 1, "FAIL", 2, "SUCCESS"),
        (["--point", "before-effect", "--app-version", "changed"], 1, "FAIL", 0, "PENDING"),
        (["--point", "after-effect", "--app-version", "changed"], 1, "FAIL", 1, "PENDING"),
    ],
)
def test_dbos_reruns_the_step_in_flight_and_leaves_another_versions_workflow_pending(
    tmp_path, args, code, verdict, refunds, status
):
    got, out, run = witness(
        tmp_path, FINDINGS / "kill-mid-tool-more-frameworks" / "witness" / "dbos_kill_step.py", *args
    )
    assert (out["witness"], out["version"]) == ("dbos_kill_step", importlib.metadata.version("dbos"))
    assert (got, out["verdict"], out["counts"], out["detail"]["status"]) == (
        code,
        verdict,
        {"refund": refunds},
        status,
    ), run.stderr


@pytest.mark.parametrize(
    "point, code, verdict, refunds", [("before-effect", 0, "PASS", 1), ("after-effect", 1, "FAIL", 2)]
)
@pytest.mark.parametrize(
    "script",
    [
        "kill-mid-tool-more-frameworks/witness/pydantic_ai_kill_tool.py",
        "resume-after-approval-more-frameworks/witness/pydantic_ai_killed_approval.py",
    ],
)
@requires("pydantic_ai.durable_exec.dbos")
def test_pydantic_ais_dbos_agent_runs_a_function_tool_again_when_killed_after_its_effect(
    tmp_path, script, point, code, verdict, refunds
):
    got, out, run = witness(tmp_path, FINDINGS / script, "--point", point)
    assert (out["framework"], out["version"]) == ("pydantic-ai-slim", importlib.metadata.version("pydantic-ai-slim"))
    assert (got, out["verdict"], out["counts"]) == (code, verdict, {"refund": refunds}), run.stderr
