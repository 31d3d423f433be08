"""The Dask executor: a LocalCluster of two worker processes runs the tiny finding's jobs and the client
writes the same records and results page as the local executor; an unreachable scheduler is one line, exit 2."""

import io
import os
import socket
import tarfile
import tempfile
from pathlib import Path

import pytest
from builders import make_repo
from tiny import page, records, tiny_repo

from installed import requires
from plugpull.report.harness import cli, executors, pages, pipeline
from plugpull.report.harness.finding import load_all

ROOT = Path(__file__).resolve().parents[2]
pytestmark = requires("distributed", "dask", reason="the dask group (uv sync --group dask)")


@pytest.fixture
def environ_kept():
    """distributed sets PYTHONHASHSEED, OMP/MKL/OPENBLAS_NUM_THREADS, MALLOC_TRIM_THRESHOLD_ and
    __DASK_PARENT_PID in os.environ for its workers and never unsets them: every later test of this process
    (and every target it starts) would inherit them."""
    before = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(before)


def test_a_local_cluster_of_two_worker_processes_writes_the_same_records_and_page_as_the_local_executor(
    whole_run, tmp_path, monkeypatch, environ_kept
):
    import dask
    import distributed

    # The worker processes inherit TMPDIR: their scratch folders go here. Short, because the scenario's
    # socket path lives under it and AF_UNIX paths stop at 107 bytes (pytest's tmp_path is longer).
    scratch = Path(tempfile.mkdtemp(prefix="pp-"))
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    root = tiny_repo(tmp_path / "repo")
    finding = load_all(root)["demo"]
    jobs = [pipeline.Job(finding, pin, {}) for pin in finding.pins]
    # The scheduler's and workers' own dask-scratch-space goes elsewhere than the TMPDIR checked below.
    with (
        dask.config.set({"temporary-directory": str(tmp_path / "dask")}),
        distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0") as cluster,
    ):
        workers = set(cluster.scheduler_info["workers"])
        runner = executors.Dask(cluster.scheduler_address, environment="current")
        ran_on = []
        real_outcomes = runner.outcomes

        def outcomes(*args):
            for outcome in real_outcomes(*args):
                ran_on.append(outcome.worker)
                yield outcome

        runner.outcomes = outcomes
        try:
            assert cli.run_all(jobs, root, runner) == 0
        finally:
            runner.close()
        pages.write(root)  # as after the whole run: docs/results.md is `report regenerate`'s
        # The workers are still alive: each job removed its own scratch folder (snapshot, kernel spec).
        assert list((tmp_path / "dask").rglob("plugpull-worker-*")) == []
    assert len(ran_on) == 2 and set(ran_on) <= workers  # each job ran in a worker process, not here
    assert records(root) == records(whole_run)
    assert records(root)["p1"]["results"][0]["verdict"] == "FAIL"  # the real 1.18.0 line: A charged twice
    assert page(root) == page(whole_run)
    names = sorted(p.name for p in (root / "findings" / "demo").glob("20*/*"))
    assert [n.rsplit(".", 1)[1] for n in names] == ["html", "ipynb", "json"] * 2
    left = list(scratch.iterdir())
    if not left:
        scratch.rmdir()
    assert left == []  # nor did a pipeline scratch folder (kernel cwd, TMPDIR) or a kernel spec stay behind


def test_a_worker_refuses_a_lock_that_does_not_match_the_hash_the_client_sent(tmp_path):
    root = tiny_repo(tmp_path / "repo")
    finding = load_all(root)["demo"]
    spec = executors.job_spec(pipeline.Job(finding, finding.pins[0], {}), root, None, "current")
    spec["lock_sha256"] = "0" * 64
    with pytest.raises(RuntimeError, match="arrived with sha256"):
        executors.work(spec)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:{port}", "tcp://no-such-host.invalid:8786", "udp:/x"])
def test_an_unreachable_scheduler_is_one_line_exit_2_and_leaves_nothing(
    tmp_path, address, capsys, monkeypatch, environ_kept
):
    # In this process (cli.main, as `plugpull report` calls it; test_report_cli holds the console entry point):
    # a subprocess per case imported distributed again, 1.5 s of CPU each.
    root = make_repo(tmp_path / "repo")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("PLUGPULL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    code = cli.main(["run", "--executor", "dask", "--scheduler", address.format(port=free_port()), "--root", str(root)])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("plugpull report: ") and "scheduler" in lines[0]
    assert list(scratch.iterdir()) == []
    assert sorted(p.name for p in (root / "findings" / "demo").iterdir()) == ["finding.toml", "pins"]


def test_the_snapshot_holds_what_a_run_reads_from_the_repository_and_nothing_of_other_findings():
    finding = load_all(ROOT)["agent-framework-8292"]
    job = pipeline.Job(finding, finding.pin("agent-framework-1.20.0"), {})
    with tarfile.open(fileobj=io.BytesIO(executors.snapshot(job, ROOT))) as tar:
        names = set(tar.getnames())
    assert {
        "pyproject.toml",
        "notebooks/agent-framework-8292.ipynb",
        "src/plugpull/report/harness/pipeline.py",
    } <= names
    assert "findings/agent-framework-8292/pins/agent-framework-1.20.0.txt" in names
    assert not any("agent-framework-1.18.0.txt" in n or n.startswith(("docs/", "findings/openai")) for n in names)
    records = [n for n in names if n.startswith("findings/agent-framework-8292/2026-")]
    assert records and all(n.endswith(".json") for n in records)  # earlier runs, listed by the report; no HTML
