"""The CrewAI witnesses (findings/crewai-flow-restore/witness/): CrewAI only, their own SIGKILL.

CrewAI is not in plugpull's default environment (docs/DECISIONS.md, "Targets per framework"): these run in an
environment that has it (a crewai-flow-restore pin set's venv) and skip elsewhere. Each CrewAI process takes tens
of seconds on a loaded machine.
"""

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from installed import requires

pytestmark = [pytest.mark.witness, requires("crewai")]

WITNESSES = Path(__file__).parents[2] / "findings" / "crewai-flow-restore" / "witness"


def witness(tmp_path: Path, script: str, *args: str) -> tuple[int, dict, subprocess.CompletedProcess]:
    run = subprocess.run(
        [sys.executable, str(WITNESSES / script), *args], cwd=tmp_path, capture_output=True, text=True, timeout=1800
    )
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else "null"
    return run.returncode, json.loads(last), run


@pytest.mark.parametrize("key", ["none", "checkpointed"])
def test_a_restored_persist_flow_refunds_again_even_with_the_key_its_finished_start_saved(tmp_path, key):
    code, out, run = witness(tmp_path, "crewai_restore_refund.py", "--point", "after-effect", "--key", key)
    assert (out["framework"], out["version"]) == ("crewai", importlib.metadata.version("crewai"))
    assert (code, out["verdict"], out["counts"]) == (1, "FAIL", {"refund": 2}), run.stderr


def test_an_approved_refund_killed_after_its_effect_is_asked_for_and_run_again(tmp_path):
    code, out, run = witness(tmp_path, "crewai_killed_approval.py", "--point", "after-effect")
    assert (code, out["verdict"], out["counts"]) == (1, "FAIL", {"refund": 2}), run.stderr
    assert out["detail"]["recover"][-1] == "the restored flow asked for the approval again; passing it again"
