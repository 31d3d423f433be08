"""The framework-only witness of openai-agents#4775 (findings/openai-agents-4775/witness/), run as a
maintainer runs it: its own processes, a SQLiteSession file, one JSON line out. The ack-lost line runs cold
(the witness and its retry each a new interpreter, as the records ran it), the write-lost line with ``--fork``
(the retry forked from the witness before the failed run), the witness itself forked from the module's server
that imported the Agents SDK once (witness_server), as is ``--help`` (the script imports the SDK before it reads
its arguments). The ack-lost line is not run forked as well: it would add a line, not a claim. The SDK's
cancel-mid-stream witness (findings/cancel-mid-stream/witness/) runs here too, forked only, from the same server; it
backs no claim's `witness`, so no record runs it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from installed import requires
from witness_server import WitnessServer, whole_output

pytestmark = [pytest.mark.witness, requires("agents")]

WITNESS = Path(__file__).parents[2] / "findings" / "openai-agents-4775" / "witness" / "lost_session_ack.py"
CANCEL = Path(__file__).parents[2] / "findings" / "cancel-mid-stream" / "witness" / "openai_agents_cancel_stream.py"


@pytest.fixture(scope="module")
def server():
    with WitnessServer([WITNESS, CANCEL]) as server:
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


def cancelled(server: WitnessServer, *args: str) -> dict:
    """The cancel witness's output, forked from ``server`` with --fork, checked to be whole."""
    return whole_output(server.run(CANCEL, *args, "--fork", timeout=600), CANCEL, "openai-agents")


def test_an_immediate_cancel_mid_stream_loses_the_streamed_words_and_the_next_turn_is_accepted(server):
    # cancel-mid-stream's openai-agents model-stream cancel=cancel claim: "the streamed part of the answer is in no
    # Session item; the next turn is accepted", one refund (the witness's verdict is the next turn's).
    line = cancelled(server, "--point", "streaming", "--how", "cancel")
    assert (line["verdict"], line["counts"], line["next_turn"]) == ("PASS", {"refund": 1}, "accepted"), line
    assert line["seen"]["chunks"] == 3 and line["lost"]["text_seen_not_saved"], line["did"]


def test_an_immediate_cancel_in_the_tool_leaves_only_the_users_message_in_the_session(server):
    # cancel-mid-stream's openai-agents tool-after-effect cancel=cancel claim: "the Session keeps only the user's
    # message", not the model's tool call. The witness's next model asks for nothing again, so its one refund is not
    # the claim's two, which the target's model makes.
    line = cancelled(server, "--point", "tool-after", "--how", "cancel")
    (call,) = line["seen"]["tool_calls"]
    assert line["saved"] == [["user", "refund order A-1001"]], line["did"]
    assert line["lost"]["tool_calls_seen_not_saved"] == [call], line
    assert (line["verdict"], line["counts"]) == ("PASS", {"refund": 1}), line["did"]
