"""The LlamaIndex Workflows witness (findings/kill-mid-tool-more-frameworks/witness/): the framework only, its own
SIGKILL inside a step, the Context saved after the step before restored with Context.from_dict. The first line
runs cold, each phase a new interpreter, as a reader and the records run it, and forked gives the same verdict
and counts; the others run with ``--fork`` (each phase forked from the witness), the witness itself forked from the
module's server that imported the framework once (witness_server)."""

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from installed import requires
from witness_server import WitnessServer

pytestmark = [requires("workflows"), pytest.mark.witness]

SCRIPT = (
    Path(__file__).parents[2] / "findings" / "kill-mid-tool-more-frameworks" / "witness" / "llama_index_kill_step.py"
)


@pytest.fixture(scope="module")
def server():
    with WitnessServer([SCRIPT]) as server:
        yield server


def witness(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    cwd.mkdir(exist_ok=True)
    run = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    return run, json.loads(run.stdout.strip().splitlines()[-1])


def forked(server: WitnessServer, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    """witness() with --fork, the witness forked from ``server``."""
    run = server.completed(SCRIPT, *args, "--fork")
    return run, json.loads(run.stdout.strip().splitlines()[-1] if run.stdout.strip() else "null")


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
    tmp_path, server, point, key, code, verdict, refunds, fork
):
    args = ["--point", point, "--key", key]
    run, out = forked(server, *args) if fork else witness(tmp_path / "run", *args)
    assert (out["witness"], out["version"]) == (
        "llama_index_kill_step",
        importlib.metadata.version("llama-index-workflows"),
    )
    assert (run.returncode, out["verdict"], out["counts"]) == (code, verdict, {"refund": refunds}), (out, run.stderr)
    if not fork:
        forked_run, again = forked(server, *args)
        assert (forked_run.returncode, again["verdict"], again["counts"]) == (code, verdict, out["counts"])
