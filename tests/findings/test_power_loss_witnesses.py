"""The power-loss witnesses (findings/power-loss/witness/): the framework only, their own SIGKILL and power cut.

The Agent Framework and DBOS lines run with --fork (each phase forked from the witness), the witness itself forked
from the module's server that imported both frameworks once (witness_server): each framework's cold line is in its own
witness module (test_agent_framework_witnesses, test_dbos_witnesses), and the records run every line cold. ADK's
power-cut witness runs in test_google_adk_witnesses.py, forked from the server there that imports ADK.
"""

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

from installed import found
from witness_server import WitnessServer

pytestmark = pytest.mark.witness

WITNESS = Path(__file__).parents[2] / "findings" / "power-loss" / "witness"


@pytest.fixture(scope="module")
def server():
    with WitnessServer([WITNESS / "agent_framework_power_cut.py", WITNESS / "dbos_power_cut.py"]) as server:
        yield server


def witness(
    tmp_path: Path, script: str, *args: str, server: WitnessServer | None = None
) -> tuple[int, dict, subprocess.CompletedProcess]:
    """(exit code, last stdout line, run): with ``server``, the witness forked from it with --fork; else cold."""
    if server is not None:
        run = server.completed(WITNESS / script, *args, "--fork")
    else:
        argv = [sys.executable, str(WITNESS / script), *args]
        run = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else "null"
    return run.returncode, json.loads(last), run


@pytest.mark.parametrize(
    "cut, code, verdict, charges_a",
    [("none", 0, "PASS", 1), ("lazyfs", 1, "FAIL", 2), ("namespace", 1, "FAIL", 2)],
    ids=["none", "lazyfs", "namespace"],
)
def test_agent_frameworks_checkpoints_survive_a_sigkill_and_not_a_power_cut(
    request, tmp_path, cut, code, verdict, charges_a
):
    pytest.importorskip("agent_framework")
    server = request.getfixturevalue("server")  # after the skip: the server imports the scripts' frameworks
    got, out, run = witness(tmp_path, "agent_framework_power_cut.py", "--cut", cut, server=server)
    assert (out["witness"], out["version"]) == (
        "agent_framework_power_cut",
        importlib.metadata.version("agent-framework-core"),
    )
    assert (got, out["verdict"], out["counts"]) == (code, verdict, {"charge_card:A": charges_a, "charge_card:B": 1}), (
        run.stderr
    )
    # What the cut lost is what the store never fsynced: nothing under a plain SIGKILL.
    assert bool(out["detail"]["lost"]) == (cut != "none") and out["detail"]["fsynced"] == []


@pytest.mark.parametrize(
    "cut, code, verdict, refunds",
    [("none", 0, "PASS", 1), ("namespace", 1, "FAIL", 2), ("lazyfs", 0, "PASS", 1)],
    ids=["none", "namespace", "lazyfs"],
)
def test_dbos_loses_its_last_commit_when_the_journals_unlink_is_lost(
    request, fuse, tmp_path, cut, code, verdict, refunds
):
    if not (found("dbos") and found("mfusepy")):
        pytest.skip("needs dbos and mfusepy (uv sync --group more-frameworks)")
    server = request.getfixturevalue("server")
    got, out, run = witness(tmp_path, "dbos_power_cut.py", "--cut", cut, server=server)
    assert (got, out["verdict"], out["counts"]) == (code, verdict, {"refund": refunds}), run.stderr
    back = ["dbos.sqlite-journal is back: its unlink or rename was never made durable"]
    assert out["detail"]["lost"] == (back if cut == "namespace" else [])


def test_without_fuse_the_sqlite_witnesses_say_error_not_pass(tmp_path):
    pytest.importorskip("mfusepy")
    # A mount point that does not exist: cutfs cannot mount, the witness reports ERROR (exit 2) and why.
    run = subprocess.run(
        [sys.executable, str(WITNESS / "cutfs.py"), str(tmp_path), str(tmp_path), str(tmp_path / "missing")],
        input="stop\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0 and "ready" not in run.stdout
