"""The framework-only witness of openai-agents#4775 (findings/openai-agents-4775/witness/), run as a
maintainer runs it: its own processes, a SQLiteSession file, one JSON line out. The ack-lost line runs cold
(the retry a new interpreter, as the records ran it), the write-lost line with ``--fork`` (the retry forked
from the witness before the failed run). Forking saves one of the two Agents SDK imports a line pays, so the
ack-lost line is not run forked as well: that would cost what forking the other line saves."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from installed import requires

pytestmark = [pytest.mark.witness, requires("agents")]

WITNESS = Path(__file__).parents[2] / "findings" / "openai-agents-4775" / "witness" / "lost_session_ack.py"


def witness(*args: str) -> tuple[int, dict]:
    run = subprocess.run([sys.executable, str(WITNESS), *args], capture_output=True, text=True, timeout=600)
    return run.returncode, json.loads(run.stdout.strip().splitlines()[-1])


def test_a_lost_ack_leaves_the_staged_input_twice_in_the_session_after_the_retry_run_cold():
    code, line = witness("--point", "ack-lost")
    assert (code, line["verdict"], line["counts"]) == (1, "FAIL", {"staged-input": 2}), line
    assert line["witness"] == "lost_session_ack" and line["framework"] == "openai-agents"


def test_a_lost_write_is_retried_into_one_occurrence_forked():
    code, line = witness("--point", "write-lost", "--fork")
    assert (code, line["verdict"], line["counts"]) == (0, "PASS", {"staged-input": 1}), line


def test_the_witness_explains_itself_with_help():
    run = subprocess.run([sys.executable, str(WITNESS), "--help"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "--point" in run.stdout and "--fork" in run.stdout
