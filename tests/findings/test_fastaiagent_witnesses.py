"""The FastAIAgent witnesses (findings/resume-after-approval/witness/): FastAIAgent only, their own SIGKILL.

One line of the family runs cold, each child process a new interpreter, as a reader and the records run it: the
killed approval's before-effect line (it is not run forked as well: it would add a line, not a claim). The others
run with ``--fork`` (each child forked from the witness), the witness itself forked from the module's server that
imported FastAIAgent once (witness_server), held to the same assertions; the records run every line cold. Racing
approvers is one timing line (a loser crashes or is refused): it runs forked with two approvers and with three,
each held to what holds every run.
"""

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from installed import requires
from witness_server import WitnessServer

pytestmark = [pytest.mark.witness, requires("fastaiagent")]

WITNESSES = Path(__file__).parents[2] / "findings" / "resume-after-approval" / "witness"
VERSION = importlib.metadata.version("fastaiagent")


@pytest.fixture(scope="module")
def server():
    scripts = ["fastaiagent_killed_approval.py", "fastaiagent_racing_approvers.py"]
    with WitnessServer([WITNESSES / script for script in scripts]) as server:
        yield server


def witness(
    cwd: Path, script: str, *args: str, server: WitnessServer | None = None
) -> tuple[int, dict, subprocess.CompletedProcess]:
    """(exit code, last stdout line, run): with ``server``, the witness forked from it with --fork; else cold."""
    if server is not None:
        run = server.completed(WITNESSES / script, *args, "--fork")
    else:
        argv = [sys.executable, str(WITNESSES / script), *args]
        run = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else "null"
    return run.returncode, json.loads(last), run


@pytest.mark.parametrize(
    "point, refunds, fork",
    [("before-effect", 0, False), ("after-effect", 1, True), ("before-save", 1, True)],
    ids=["before-effect-cold", "after-effect-forked", "before-save-forked"],
)
def test_an_approver_killed_inside_the_approved_tool_leaves_a_run_no_public_resume_finishes(
    tmp_path, server, point, refunds, fork
):
    code, out, run = witness(
        tmp_path, "fastaiagent_killed_approval.py", "--point", point, server=server if fork else None
    )
    assert (out["witness"], out["framework"], out["version"]) == ("fastaiagent_killed_approval", "fastaiagent", VERSION)
    assert (code, out["verdict"], out["counts"]) == (1, "FAIL", {"refund": refunds}), run.stderr
    said = out["detail"]["recover"]
    assert said[0] == "newest row turn:0/tool:refund status=interrupted"
    assert said[1].startswith("resume(id): ChainCheckpointError:") and "pass resume_value" in said[1]
    assert said[2].startswith("resume(id, Resume(approved=True)): AlreadyResumed:")


@pytest.mark.parametrize("racers", [2, 3])
def test_racing_approvers_refund_once_and_each_loser_is_refused_or_crashes(tmp_path, server, racers):
    code, out, run = witness(tmp_path, "fastaiagent_racing_approvers.py", "--racers", str(racers), server=server)
    assert (out["witness"], out["version"]) == ("fastaiagent_racing_approvers", VERSION)
    assert out["counts"] == {"refund": 1}, run.stderr
    assert f"{racers} approvers released together on one SQLite store: 1 ran the tool" in out["did"]
    # A loser that finds SQLite's write lock held crashes instead of getting AlreadyResumed: a FAIL.
    assert (code, out["verdict"]) == ((1, "FAIL") if out["detail"]["errors"] else (0, "PASS"))
    assert all("database is locked" in e for e in out["detail"]["errors"])
