"""The DBOS and Pydantic AI witnesses (findings/*/witness/): the framework only, their own SIGKILL.

Most lines run with --fork (each child forked from the witness, DBOS launched only in the children), the witness
itself forked from the module's server that imported DBOS and Pydantic AI once (witness_server); one line of each
framework runs cold, a new interpreter for the witness and each child, as a reader and the records run it
(dbos_kill_step.py's and pydantic_ai_kill_tool.py's; the records run every line cold). Pydantic AI's power-cut witness (findings/power-loss/witness/) runs here, forked only, as its server imports what its phases
do; the records run it cold. So does Pydantic AI's cancel-mid-stream witness, which needs no DBOS but no other
module's server imports Pydantic AI; it backs no claim's `witness`, so no record runs it.
"""

import importlib.metadata
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from dbos_recovery import pending_watch
from installed import requires
from witness_server import WitnessServer

pytestmark = [pytest.mark.witness, requires("dbos")]

FINDINGS = Path(__file__).parents[2] / "findings"


def witness(tmp_path: Path, script: Path, *args: str) -> tuple[int, dict, subprocess.CompletedProcess]:
    run = subprocess.run(
        [sys.executable, str(script), *args], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else "null"
    return run.returncode, json.loads(last), run


def forked(server: WitnessServer, script: Path, *args: str) -> tuple[int, dict, subprocess.CompletedProcess]:
    """witness() with --fork, the witness forked from ``server``: the same (exit code, output, run)."""
    run = server.completed(script, *args, "--fork")
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else "null"
    return run.returncode, json.loads(last), run


DBOS_KILL_STEP = FINDINGS / "kill-mid-tool-more-frameworks" / "witness" / "dbos_kill_step.py"
KILL_TOOL = "kill-mid-tool-more-frameworks/witness/pydantic_ai_kill_tool.py"
KILLED_APPROVAL = "resume-after-approval-more-frameworks/witness/pydantic_ai_killed_approval.py"
POWER_CUT = "power-loss/witness/pydantic_ai_power_cut.py"
CANCEL = "cancel-mid-stream/witness/pydantic_ai_cancel_stream.py"


@pytest.fixture(scope="module")
def server():
    """DBOS and, where installed, Pydantic AI's DBOS agent imported once for the module's forked lines."""
    scripts = [DBOS_KILL_STEP]
    if importlib.util.find_spec("pydantic_ai") is not None:
        scripts += [FINDINGS / KILL_TOOL, FINDINGS / KILLED_APPROVAL, FINDINGS / POWER_CUT, FINDINGS / CANCEL]
    with WitnessServer(scripts) as server:
        yield server


# The same-version recoveries of this module: seconds from launch() returning to SUCCESS (the witness's detail).
RECOVERIES: list[float] = []


@pytest.fixture(scope="module")
def watch_pending() -> float:
    """How long a recovery under another application version is watched for staying PENDING (dbos_recovery)."""
    if not RECOVERIES:  # the changed-version lines selected alone: measure the same-version recovery first
        with tempfile.TemporaryDirectory() as folder:
            _, out, run = witness(Path(folder), DBOS_KILL_STEP, "--point", "before-effect")
        assert out["detail"]["status"] == "SUCCESS", run.stderr
        RECOVERIES.append(out["detail"]["seconds"])
    wait = pending_watch(RECOVERIES)
    print(f"watching another version's workflow for {wait:g} s: 5 x the slowest same-version recovery {RECOVERIES}")
    return wait


@pytest.mark.parametrize(
    "point, fork, code, verdict, refunds",
    [
        ("before-effect", False, 0, "PASS", 1),
        ("after-effect", True, 1, "FAIL", 2),
        ("before-effect", True, 0, "PASS", 1),
    ],
    ids=["before-effect-cold", "after-effect-forked", "before-effect-forked"],
)
def test_dbos_reruns_the_step_in_flight_when_it_recovers_the_workflow(
    tmp_path, server, point, fork, code, verdict, refunds
):
    # before-effect runs cold (as a reader runs it) and forked: both must give what the line claims.
    args = ["--point", point]
    got, out, run = forked(server, DBOS_KILL_STEP, *args) if fork else witness(tmp_path, DBOS_KILL_STEP, *args)
    assert (out["witness"], out["version"]) == ("dbos_kill_step", importlib.metadata.version("dbos"))
    assert (got, out["verdict"], out["counts"], out["detail"]["status"]) == (
        code,
        verdict,
        {"refund": refunds},
        "SUCCESS",
    ), run.stderr
    RECOVERIES.append(out["detail"]["seconds"])


@pytest.mark.parametrize("point, refunds", [("before-effect", 0), ("after-effect", 1)])
def test_dbos_leaves_another_application_versions_workflow_pending(server, watch_pending, point, refunds):
    got, out, run = forked(
        server, DBOS_KILL_STEP, "--point", point, "--app-version", "changed", "--wait", str(watch_pending)
    )
    assert (out["witness"], out["version"]) == ("dbos_kill_step", importlib.metadata.version("dbos"))
    assert (got, out["verdict"], out["counts"], out["detail"]["status"]) == (
        1,
        "FAIL",
        {"refund": refunds},
        "PENDING",
    ), run.stderr
    assert out["detail"]["seconds"] >= watch_pending and "left it PENDING" in out["did"], out


@pytest.mark.parametrize(
    "script, point, fork, code, verdict, refunds",
    [
        (KILL_TOOL, "before-effect", False, 0, "PASS", 1),
        (KILL_TOOL, "after-effect", True, 1, "FAIL", 2),
        (KILLED_APPROVAL, "before-effect", True, 0, "PASS", 1),
        (KILLED_APPROVAL, "after-effect", True, 1, "FAIL", 2),
    ],
    ids=[
        "kill-tool-before-effect-cold",
        "kill-tool-after-effect-forked",
        "approval-before-effect-forked",
        "approval-after-effect-forked",
    ],
)
@requires("pydantic_ai.durable_exec.dbos")
def test_pydantic_ais_dbos_agent_runs_a_function_tool_again_when_killed_after_its_effect(
    tmp_path, server, script, point, fork, code, verdict, refunds
):
    # One line of Pydantic AI's runs cold, as a reader runs it; the others forked (the records run every line cold).
    args = [FINDINGS / script, "--point", point]
    got, out, run = forked(server, *args) if fork else witness(tmp_path, *args)
    assert (out["framework"], out["version"]) == ("pydantic-ai-slim", importlib.metadata.version("pydantic-ai-slim"))
    assert (got, out["verdict"], out["counts"]) == (code, verdict, {"refund": refunds}), run.stderr


@pytest.mark.parametrize(
    "cut, code, verdict, refunds", [("unsynced", 1, "FAIL", 2), ("lazyfs", 0, "PASS", 1)], ids=["unsynced", "lazyfs"]
)
@requires("pydantic_ai.durable_exec.dbos", "mfusepy")
def test_pydantic_ais_dbos_agent_refunds_again_when_a_power_cut_loses_the_journals_unlink(
    fuse, server, cut, code, verdict, refunds
):
    # Forked only (the finding's claims, power-loss/finding.toml); the records run each line cold.
    got, out, run = forked(server, FINDINGS / POWER_CUT, "--cut", cut)
    assert (out["framework"], out["version"]) == ("pydantic-ai-slim", importlib.metadata.version("pydantic-ai-slim"))
    assert (got, out["verdict"], out["counts"]) == (code, verdict, {"refund": refunds}), run.stderr
    # The cut lost the rollback journal's unlink that committed the model request step; LazyFS loses nothing.
    lost = out["detail"]["lost"]
    back = "dbos.sqlite-journal is back: its unlink or rename was never made durable"
    assert back in lost if cut == "unsynced" else lost == [], out["did"]


@requires("pydantic_ai")
def test_pydantic_ai_keeps_the_streamed_words_in_the_history_the_app_saves_on_a_cancel(server):
    # cancel-mid-stream's pydantic-ai-slim model-stream cancel=token save=on-cancel claim: "the saved history keeps
    # the streamed words; the next turn is accepted", one refund (the witness's verdict is the next turn's).
    got, out, run = forked(server, FINDINGS / CANCEL, "--point", "streaming", "--how", "token")
    assert (out["witness"], out["framework"], out["version"]) == (
        "pydantic_ai_cancel_stream",
        "pydantic-ai-slim",  # the distribution the version is read from, as the other Pydantic AI witnesses name it
        importlib.metadata.version("pydantic-ai-slim"),
    )
    assert (got, out["verdict"], out["counts"], out["next_turn"]) == (0, "PASS", {"refund": 1}, "accepted"), run.stderr
    assert out["seen"]["saved_by"] == "RunCancelled.all_messages()", out["seen"]
    assert out["seen"]["chunks"] == 3 and not out["lost"]["text_seen_not_saved"], out["did"]


@requires("pydantic_ai")
def test_pydantic_ai_closes_the_tool_call_a_cancel_stopped_as_interrupted_on_the_next_turn(server):
    # cancel-mid-stream's pydantic-ai-slim tool-after-effect cancel=token save=on-cancel claim: the saved history
    # "keeps its call without a result, which Pydantic AI closes with a synthesized "interrupted" return when the next
    # turn sends the history to the model". The witness's next model asks for nothing again, so its one refund is not
    # the claim's two, which the target's model makes.
    got, out, run = forked(server, FINDINGS / CANCEL, "--point", "tool-after", "--how", "token")
    (call,) = out["seen"]["tool_calls"]
    assert out["saved"] == [["user", "refund order A-1001"], ["call", call]], out["did"]
    assert out["sent"][:3] == [*out["saved"], ["result", call]], out["sent"]
    assert out["sent_outcomes"] == ["response:complete", "return:interrupted"], out
    assert (got, out["verdict"], out["counts"]) == (0, "PASS", {"refund": 1}), run.stderr
