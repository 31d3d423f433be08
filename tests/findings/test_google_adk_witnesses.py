"""The Google ADK witnesses (findings/*/witness/adk_*.py) run for real: framework only, their own SIGKILL, one JSON line.

Each runs on the default environment's ADK (google-adk[db], so both session stores) in a fresh cwd without
PLUGPULL_* in its environment, and must give the verdict and counts its claims say; the racing one is timing, so
only what holds in every run is asserted of it. Lines run with --fork (each phase forked from the witness, not a
new interpreter), the witness itself forked from a server of the module that imported ADK once (witness_server):
the killed-tool, power-cut (findings/power-loss/witness/adk_power_cut.py, FUSE) and cancel-mid-stream witnesses
from one, whose imports hold all their phases'; the racing witness from its own. Its approvers import ADK's run-time
modules (the killed-tool witness's phase imports) only after their barrier, as cold ones do: warm approvers race
differently (docs/DECISIONS.md, "The test suite"); its server adds to a line's imports only the other session
store's modules, which its approvers never import. One line of the family runs cold through the report's witness
runner, as a reader and the records run it, and also forked, to compare: the killed-tool witness's; the records run
every line cold. The cancel-mid-stream witness backs no claim's `witness`, so no record runs it.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from installed import requires
from plugpull.report.harness.witness import run_once
from witness_server import WitnessServer, whole_output

pytestmark = [pytest.mark.witness, requires("google.adk", "sqlalchemy.ext.asyncio")]
FINDINGS = Path(__file__).parent.parent.parent / "findings"
KILLED = FINDINGS / "kill-mid-tool-more-frameworks" / "witness" / "adk_killed_tool.py"
RACING = FINDINGS / "resume-after-approval-more-frameworks" / "witness" / "adk_racing_approvers.py"
CANCEL = FINDINGS / "cancel-mid-stream" / "witness" / "adk_cancel_stream.py"
POWER_CUT = FINDINGS / "power-loss" / "witness" / "adk_power_cut.py"


@pytest.fixture(scope="module")
def server():
    with WitnessServer([KILLED, CANCEL, POWER_CUT]) as server:
        yield server


@pytest.fixture(scope="module")
def racing_server():
    with WitnessServer([RACING]) as server:
        yield server


def witness(script: Path, *args: str, server: WitnessServer | None = None) -> dict:
    """The witness's output, checked to be whole; forked from ``server`` when given, else cold (run_once)."""
    run = (
        server.run(script, *args, timeout=600)
        if server
        else run_once([sys.executable, str(script), *args], timeout=600)
    )
    return whole_output(run, script, "google-adk")


@pytest.mark.parametrize(
    "args, verdict, refunds",
    [
        (["--point", "after-effect"], "FAIL", 2),
        (["--confirmation", "--session", "sqlite", "--point", "after-effect"], "FAIL", 2),
        (["--confirmation", "--session", "database", "--point", "after-effect"], "FAIL", 2),
        (["--confirmation", "--session", "database", "--point", "before-effect"], "PASS", 1),
    ],
)
def test_the_killed_tool_witness_gives_each_lines_verdict_forked(server, args, verdict, refunds):
    output = witness(KILLED, *args, "--fork", server=server)
    assert (output["verdict"], output["counts"]) == (verdict, {"refund": refunds}), output["did"]


def test_the_killed_tool_witness_run_cold_gives_the_lines_verdict_and_the_same_as_forked(server):
    cold = witness(KILLED, "--point", "before-effect")
    forked = witness(KILLED, "--point", "before-effect", "--fork", server=server)
    assert (cold["verdict"], cold["counts"]) == ("PASS", {"refund": 1}), cold["did"]
    assert (forked["verdict"], forked["counts"], forked["did"]) == (cold["verdict"], cold["counts"], cold["did"])


@pytest.mark.parametrize("session", ["sqlite", "database"])
def test_the_racing_witness_forked_counts_a_refund_per_approver_that_ran_the_tool(racing_server, session):
    # Two approvers, the fewest that race: what is asserted holds in every run of any size; the records run the
    # default five (finding.toml), cold.
    output = witness(RACING, "--session", session, "--approvers", "2", "--fork", server=racing_server)
    refunds, detail = output["counts"]["refund"], output["detail"]
    ran = [a for a in detail["approvers"] if a["ran_tool"]]
    assert refunds == len(ran) >= 1, output
    assert output["verdict"] == ("PASS" if refunds == 1 and ran[0]["exit"] == 0 else "FAIL"), output
    # An approver runs the tool only after its answer to the confirmation was stored: two refunds mean the
    # session holds two answers to one confirmation, both appended past the stale-session check.
    assert detail["answers_stored"] >= refunds, output
    assert all(a["exit"] in (0, 3) for a in detail["approvers"] if not a["ran_tool"]), output


def test_the_racing_witness_repeated_runs_each_time_in_a_new_process_and_prints_the_fail_count_and_rate():
    # --repeat N is what a bundle's ISSUE.md gives a maintainer for a timing line: N runs, one line each, then a
    # JSON line with the count of each verdict. Its runs are the witness without --repeat (here --fork, 2 approvers:
    # the cheapest race), so each one's verdict holds what the test above holds of one run.
    run = run_once([sys.executable, str(RACING), "--approvers", "2", "--fork", "--repeat", "2"], timeout=600)
    output = whole_output(run, RACING, "google-adk")
    assert output["repeat"]["runs"] == 2 and output["repeat"]["ERROR"] == 0, output
    failed = output["repeat"]["FAIL"]
    assert output["repeat"]["PASS"] + failed == 2, output
    assert output["verdict"] == ("FAIL" if failed else "PASS"), output
    assert output["did"] == f"FAIL in {failed} of 2 finished runs ({50 * failed} %); 0 did not run as designed"


def test_the_racing_witness_needs_two_approvers():
    done = subprocess.run([sys.executable, str(RACING), "--approvers", "1"], capture_output=True, text=True)
    assert done.returncode == 2 and "--approvers must be at least 2" in done.stderr


def test_the_cancel_witness_loses_the_streamed_words_and_the_next_turn_is_accepted(server):
    # cancel-mid-stream's google-adk model-stream claims: "the streamed part of the answer is in no session event;
    # the next turn is accepted", one refund (the witness's verdict is the next turn's: PASS when accepted).
    output = witness(CANCEL, "--point", "streaming", "--how", "abort", "--fork", server=server)
    assert (output["verdict"], output["counts"], output["next_turn"]) == ("PASS", {"refund": 1}, "accepted"), output
    assert output["seen"]["chunks"] == 3 and output["lost"]["text_seen_not_saved"], output["did"]


def test_the_cancel_witness_aborted_in_the_tool_keeps_the_call_with_adks_synthetic_error_response(server):
    # cancel-mid-stream's google-adk tool-after-effect claims: the session holds the function call "without its real
    # response (with abort, ADK's synthetic INVOCATION_ABORTED error)". The witness's next model asks for nothing
    # again, so its one refund is not the claims' two, which the target's model makes.
    output = witness(CANCEL, "--point", "tool-after", "--how", "abort", "--fork", server=server)
    (call,) = output["seen"]["tool_calls"]
    assert output["saved"] == [["user", "refund order A-1001"], ["call", call], ["result", call]], output["did"]
    # Three events, the user's, the call's and the response's: the error is the response's.
    assert (output["events"], output["saved_errors"]) == (3, ["INVOCATION_ABORTED"]), output
    assert (output["verdict"], output["counts"]) == ("PASS", {"refund": 1}), output["did"]


@requires("mfusepy")
def test_adks_session_store_rolls_the_function_call_back_when_the_journals_unlink_is_lost(fuse, server):
    # power-loss's google-adk namespace claim: the cut brings the journal back, SQLite rolls back the transaction that
    # stored the function call, and resume asks the model again: a new call id, a new key, a second refund.
    output = witness(POWER_CUT, "--cut", "namespace", "--fork", server=server)
    assert (output["verdict"], output["counts"]) == ("FAIL", {"refund": 2}), output["did"]
    assert output["detail"]["lost"] == ["sessions.sqlite-journal is back: its unlink or rename was never made durable"]
    # The function call event was the transaction rolled back: resume saw only the user's message.
    assert "resume found 1 event(s)" in output["did"]
