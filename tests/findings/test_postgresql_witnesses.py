"""witness/on_postgres.py: the SQLite findings' framework-only witnesses, run against a throwaway PostgreSQL server.

Real frameworks, real SIGKILL, a real cluster started and removed by the wrapper (standard library only).
Skips, saying why, where no cluster can start or the framework is missing. The wrapper passes --fork on to the
witness it runs (its phases forked after one framework import): tests/findings/test_dbos_witnesses.py runs the DBOS
witness cold too, test_fastaiagent_witnesses.py runs a line of FastAIAgent cold, and the records run these witnesses
cold on PostgreSQL.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from plugpull import postgres

WRAPPER = Path(__file__).resolve().parents[2] / "findings" / "postgresql-stores" / "witness" / "on_postgres.py"


@pytest.fixture(autouse=True)
def server_binaries():
    try:
        postgres.find_bindir()
    except postgres.PostgresUnavailable as error:
        print(f"no PostgreSQL cluster can start here: {error}")
        pytest.skip(f"no PostgreSQL cluster can start here: {error}")


def witness(tmp_path: Path, *args: str) -> tuple[int, dict]:
    done = subprocess.run(
        [sys.executable, str(WRAPPER), *args], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    return done.returncode, json.loads(done.stdout.strip().splitlines()[-1])


def leftovers() -> set[str]:
    return {p.name for p in Path("/tmp").glob("witness-pg-*")}


def test_dbos_on_postgresql_reruns_the_killed_step_and_the_wrapper_passes_its_verdict_on(tmp_path):
    pytest.importorskip("dbos")
    before = leftovers()
    code, out = witness(
        tmp_path, "../../kill-mid-tool-more-frameworks/witness/dbos_kill_step.py", "--point", "after-effect", "--fork"
    )
    assert (code, out["verdict"], out["counts"]) == (1, "FAIL", {"refund": 2}), out
    assert leftovers() <= before  # the cluster's folder is gone


def test_racing_fastaiagent_approvers_on_postgresql_refund_once(tmp_path):
    pytest.importorskip("psycopg_pool")
    # Forked, the five approvers cost one FastAIAgent import instead of six; they still race on one PostgreSQL store.
    code, out = witness(
        tmp_path, "../../resume-after-approval/witness/fastaiagent_racing_approvers.py", "--racers", "5", "--fork"
    )
    assert out["counts"] == {"refund": 1}, out
    assert "on one PostgreSQL store: 1 ran the tool" in out["did"]
    assert (code, out["verdict"]) in ((0, "PASS"), (1, "FAIL"))
    assert out["verdict"] == "PASS" or all("DeadlockDetected" in e for e in out["detail"]["errors"]), out
