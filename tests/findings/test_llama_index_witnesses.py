"""The LlamaIndex Workflows witness (findings/kill-mid-tool-more-frameworks/witness/): the framework only, its own
SIGKILL inside a step, the Context saved after the step before restored with Context.from_dict."""

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from installed import requires

pytestmark = [requires("workflows"), pytest.mark.witness]

SCRIPT = (
    Path(__file__).parents[2] / "findings" / "kill-mid-tool-more-frameworks" / "witness" / "llama_index_kill_step.py"
)


@pytest.mark.parametrize(
    "point, key, code, verdict, refunds",
    [
        ("before-effect", "none", 0, "PASS", 1),
        ("after-effect", "none", 1, "FAIL", 2),
        ("after-effect", "checkpointed", 0, "PASS", 1),
    ],
)
def test_the_restored_context_runs_the_killed_step_again_from_its_saved_input(
    tmp_path, point, key, code, verdict, refunds
):
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--point", point, "--key", key],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert (out["witness"], out["version"]) == (
        "llama_index_kill_step",
        importlib.metadata.version("llama-index-workflows"),
    )
    assert (run.returncode, out["verdict"], out["counts"]) == (code, verdict, {"refund": refunds}), (out, run.stderr)
