"""Recall's executors: a Dask LocalCluster runs each environment's job on a worker, from the job's own snapshot of
the repository, and the client writes the record a local run writes; a job that fails on its worker stops the run
with one line; flags that do not go together, or a scheduler that cannot be reached, are one line, exit 2.

The environments' runs themselves (uv venvs, patched releases, plugpull lines) are what `plugpull report recall`
runs for real; here the job is stood in for by a function of the snapshot the worker unpacked, so what is checked
is where each job ran, what it was given and how the record is put together."""

from __future__ import annotations

import io
import os
import socket
import tarfile
from pathlib import Path

import pytest

from installed import requires
from plugpull.report.harness import cli, recall

pytestmark = requires("distributed", "dask", reason="the dask group (uv sync --group dask)")

PATCH = """why: the saver forgets to commit
class: checkpoint not durable
--- a/pkg/saver.py
+++ b/pkg/saver.py
@@ -1,2 +1,2 @@
 def save(conn):
-    conn.commit()
+    pass
"""


@pytest.fixture
def environ_kept():
    """distributed sets PYTHONHASHSEED, OMP/MKL/OPENBLAS_NUM_THREADS, MALLOC_TRIM_THRESHOLD_ and
    __DASK_PARENT_PID in os.environ and never unsets them (tests/report/test_executor.py)."""
    before = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(before)


def repo(tmp_path: Path) -> Path:
    """A repository with two langgraph mutants (one with a helper beside it) and one dbos mutant."""
    root = tmp_path / "repo"
    for framework, name in (("langgraph", "no-commit"), ("langgraph", "lost-writes"), ("dbos", "skipped")):
        folder = root / recall.MUTANTS / framework
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.patch").write_text(PATCH.replace("forgets to commit", f"plants {name}"))
        (folder / f"{name}.check.py").write_text("import sys\nsys.exit(0)\n")
    (root / recall.MUTANTS / "langgraph" / "_helper.py").write_text("HELP = 1\n")
    (root / "src" / "plugpull").mkdir(parents=True)
    (root / "src" / "plugpull" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text("[project]\nname = 'plugpull'\n")
    (root / "uv.lock").write_text("version = 1\n")
    return root


def stand_in(root: Path, job: recall.Job, pins: bytes, jobs: int) -> dict:
    """A job's outcome made from what it was given: the release's lines, and for a mutant the patch it read from
    ``root`` (the snapshot on a worker) and a line that FAILs only with it."""
    lines = [{"line": f"plugpull.kill-mid-tool.{job.framework} after-effect", "verdict": "PASS", "message": ""}]
    out = {"lines": lines, "seconds": 0.0, "ran_in": str(root), "pins": pins.decode(), "jobs": jobs}
    if job.mutant is not None:
        patch = (root / recall.MUTANTS / job.mutant.id).with_suffix(".patch").read_text()
        out["check"] = {"verified": True, "why": patch.splitlines()[0]}
        if job.mutant.name != "lost-writes":
            out["lines"] = [{**lines[0], "verdict": "FAIL"}]
    return out


def without_times(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in ("started", "finished", "executor")}


def test_a_local_cluster_runs_each_job_on_a_worker_from_its_snapshot_and_writes_the_local_record(
    tmp_path, monkeypatch, environ_kept
):
    import dask
    import distributed

    root = repo(tmp_path)
    monkeypatch.setattr(recall, "run_job", stand_in)
    monkeypatch.setattr(recall, "constraints", lambda _root: b"langgraph==1.2.11\n")
    mutants = recall.load_mutants(root)
    here = recall.run(root, mutants, 2, recall.Local())
    scratch = tmp_path / "dask"
    with (
        dask.config.set({"temporary-directory": str(scratch)}),
        distributed.LocalCluster(n_workers=2, processes=False, threads_per_worker=1, dashboard_address=":0") as cluster,
    ):
        runner = recall.Dask(cluster.scheduler_address)
        ran_on = []
        real_outcomes = runner.outcomes

        def outcomes(*args):
            for job, payload in real_outcomes(*args):
                ran_on.append(payload["worker"])
                yield job, payload

        runner.outcomes = outcomes
        try:
            there = recall.run(root, mutants, 2, runner)
        finally:
            runner.close()
        # Every job (2 unpatched runs per framework, 3 mutants) ran on a worker of the cluster, not here.
        assert len(ran_on) == 7 and set(ran_on) <= set(cluster.scheduler_info["workers"])
        # Each job removed its scratch folder (the snapshot it ran in).
        assert list(scratch.rglob("plugpull-recall-worker-*")) == []
    assert (here["executor"], there["executor"]) == ("local", "dask")
    assert without_times(there) == without_times(here)
    assert [m["id"] for m in there["mutants"]] == ["dbos/skipped", "langgraph/lost-writes", "langgraph/no-commit"]
    assert [bool(m["caught_by"]) for m in there["mutants"]] == [True, False, True]
    # The mutant's check saw its own patch, from the snapshot, not the client's repository.
    assert there["mutants"][2]["check"]["why"] == "why: the saver plants no-commit"


def test_a_worker_runs_the_job_in_the_snapshot_it_was_sent_and_removes_it(tmp_path, monkeypatch):
    root = repo(tmp_path)
    monkeypatch.setattr(recall, "run_job", stand_in)
    [mutant] = recall.load_mutants(root, ["langgraph/no-commit"])
    spec = recall.job_spec(recall.Job("langgraph", mutant), root, b"pins\n", 3)
    with tarfile.open(fileobj=io.BytesIO(spec["snapshot"])) as tar:
        names = set(tar.getnames())
    assert names == {
        "pyproject.toml",
        "uv.lock",
        "src/plugpull/__init__.py",
        "findings/recall/mutants/langgraph/_helper.py",
        "findings/recall/mutants/langgraph/lost-writes.check.py",
        "findings/recall/mutants/langgraph/lost-writes.patch",
        "findings/recall/mutants/langgraph/no-commit.check.py",
        "findings/recall/mutants/langgraph/no-commit.patch",
    }  # nothing of another framework's mutants
    out = recall.work(spec)
    ran_in = Path(out["ran_in"])
    assert ran_in != root and not ran_in.exists()
    assert (out["pins"], out["jobs"]) == ("pins\n", 3)
    assert out["worker"]  # outside a worker: this host and pid


def test_a_job_that_fails_on_its_worker_stops_the_run_with_its_reason(tmp_path, monkeypatch, environ_kept):
    import distributed

    root = repo(tmp_path)

    def fails(root: Path, job: recall.Job, pins: bytes, jobs: int) -> dict:
        if job.mutant is not None:
            raise recall.RecallError(f"mutant {job.mutant.id} does not apply: Hunk #1 FAILED at 1.")
        return stand_in(root, job, pins, jobs)

    monkeypatch.setattr(recall, "run_job", fails)
    monkeypatch.setattr(recall, "constraints", lambda _root: b"")
    with distributed.LocalCluster(
        n_workers=1, processes=False, threads_per_worker=1, dashboard_address=":0"
    ) as cluster:
        runner = recall.Dask(cluster.scheduler_address)
        try:
            with pytest.raises(recall.RecallError) as caught:
                recall.run(root, recall.load_mutants(root, ["dbos/skipped"]), 1, runner)
        finally:
            runner.close()
    assert (
        str(caught.value) == "dbos/skipped on a dask worker: mutant dbos/skipped does not apply: Hunk #1 FAILED at 1."
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--scheduler", "tcp://127.0.0.1:8786"], "--scheduler goes with --executor dask"),
        (["--executor", "dask"], "--executor dask needs --scheduler ADDRESS"),
        (["--executor", "dask", "--scheduler", "tcp://127.0.0.1:{port}"], "cannot reach the Dask scheduler"),
        (["--executor", "dask", "--scheduler", "tcp://127.0.0.1:8786", "--verify-only"], "--verify-only runs"),
    ],
)
def test_recall_executor_flags_that_cannot_run_are_one_line_exit_2(tmp_path, capsys, flags, said, environ_kept):
    root = repo(tmp_path)
    argv = ["recall", "--root", str(root), *(f.format(port=free_port()) for f in flags)]
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and said in err and "Traceback" not in err
    assert not (root / recall.RECORDS).exists()
