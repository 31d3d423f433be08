"""The LlamaIndex Workflows witness (findings/kill-mid-tool-more-frameworks/witness/): the framework only, its own
SIGKILL inside a step, the Context saved after the step before restored with Context.from_dict. The first line
runs cold, each phase a new interpreter, as a reader and the records run it, and forked gives the same verdict
and counts; the others run with ``--fork`` (the framework imported once, each phase forked from the witness)."""

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


def witness(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    cwd.mkdir(exist_ok=True)
    run = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    return run, json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "point, key, code, verdict, refunds, fork",
    [
        ("before-effect", "none", 0, "PASS", 1, False),
        ("after-effect", "none", 1, "FAIL", 2, True),
        ("after-effect", "checkpointed", 0, "PASS", 1, True),
    ],
    ids=["before-effect-cold", "after-effect-forked", "checkpointed-forked"],
)
def test_the_restored_context_runs_the_killed_step_again_from_its_saved_input(
    tmp_path, point, key, code, verdict, refunds, fork
):
    args = ["--point", point, "--key", key]
    run, out = witness(tmp_path / "run", *args, *(["--fork"] if fork else []))
    assert (out["witness"], out["version"]) == (
        "llama_index_kill_step",
        importlib.metadata.version("llama-index-workflows"),
    )
    assert (run.returncode, out["verdict"], out["counts"]) == (code, verdict, {"refund": refunds}), (out, run.stderr)
    if not fork:
        forked_run, forked = witness(tmp_path / "forked", *args, "--fork")
        assert (forked_run.returncode, forked["verdict"], forked["counts"]) == (code, verdict, out["counts"])
