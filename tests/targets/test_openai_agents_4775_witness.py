"""The framework-only witness of openai-agents#4775 (findings/openai-agents-4775/witness/), run as a
maintainer runs it: its own processes, a SQLiteSession file, one JSON line out. The ack-lost line runs cold
(the witness and its retry each a new interpreter, as the records ran it), the write-lost line with ``--fork``
(the retry forked from the witness before the failed run), the witness itself forked from the module's server
that imported the Agents SDK once (witness_server), as is ``--help`` (the script imports the SDK before it reads
its arguments). The ack-lost line is not run forked as well: it would add a line, not a claim."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from installed import requires
from witness_server import WitnessServer

pytestmark = [pytest.mark.witness, requires("agents")]

WITNESS = Path(__file__).parents[2] / "findings" / "openai-agents-4775" / "witness" / "lost_session_ack.py"


@pytest.fixture(scope="module")
def server():
    with WitnessServer([WITNESS]) as server:
        yield server


def witness(*args: str) -> tuple[int, dict]:
    run = subprocess.run([sys.executable, str(WITNESS), *args], capture_output=True, text=True, timeout=600)
    return run.returncode, json.loads(run.stdout.strip().splitlines()[-1])


def test_a_lost_ack_leaves_the_staged_input_twice_in_the_session_after_the_retry_run_cold():
    code, line = witness("--point", "ack-lost")
    assert (code, line["verdict"], line["counts"]) == (1, "FAIL", {"staged-input": 2}), line
    assert line["witness"] == "lost_session_ack" and line["framework"] == "openai-agents"


def test_a_lost_write_is_retried_into_one_occurrence_forked(server):
    run = server.run(WITNESS, "--point", "write-lost", "--fork", timeout=600)
    code, line = run["exit_code"], run["output"]
    assert line is not None, run
    assert (code, line["verdict"], line["counts"]) == (0, "PASS", {"staged-input": 1}), line


def test_the_witness_explains_itself_with_help(server):
    run = server.run(WITNESS, "--help", timeout=120)
    assert run["exit_code"] == 0 and "--point" in run["stdout"] and "--fork" in run["stdout"], run
