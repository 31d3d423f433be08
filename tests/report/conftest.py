"""Fixtures for the report pipeline: the current Python as a kernel."""

from __future__ import annotations

import pytest

from plugpull.report.harness import environment


@pytest.fixture(autouse=True)
def no_python_downloads(monkeypatch):
    """uv never fetches a managed Python here. `uv pip compile --python-version 3.10` (bundles, sweeps) wants a 3.10
    interpreter only to build a source distribution, and falls back to this one, saying so; without this, each
    compile first tried to download 3.10 (python-build-standalone), which took 7 s of retries where the download
    host is unreachable, and where it is reachable put a 30 MB download in the first compile. The locks compiled
    are the same (every test's lock is checked against what uv gives)."""
    monkeypatch.setenv("UV_PYTHON_DOWNLOADS", "never")


@pytest.fixture(scope="session")
def current_kernel(tmp_path_factory):
    """This test run's Python registered as a Jupyter kernel in a private prefix (no new venv)."""
    return environment.current(tmp_path_factory.mktemp("kernels"))


@pytest.fixture(scope="session")
def forked_kernel(tmp_path_factory):
    """This test run's Python as a kernel forked, for each notebook, from a template that imported what a
    findings notebook's kernel imports (tests/report/kernel_forks.py): for the notebook smokes and the tests of
    what a run writes (witnesses, sweeps, merges), not of how a kernel starts cold (test_pipeline.py's, with
    current_kernel, and the Dask test's workers)."""
    import shutil
    import sys
    import tempfile
    from pathlib import Path

    from kernel_forks import NAME, Template

    sockets = Path(tempfile.mkdtemp(prefix="pp-"))  # short: AF_UNIX paths stop at 107 bytes
    template = Template(tmp_path_factory.mktemp("forked"), sockets)
    try:
        yield environment.KernelEnv(kernel=NAME, python=Path(sys.executable), jupyter_path=template.jupyter_path)
    finally:
        template.close()
        shutil.rmtree(sockets, ignore_errors=True)


@pytest.fixture(scope="session")
def whole_run(tmp_path_factory, forked_kernel):
    """The tiny finding's two pin sets run here one after another, as `plugpull report` does by default:
    the reference the Dask executor (whose workers start cold kernels) and `merge` of split runs are compared with."""
    from tiny import tiny_repo

    from plugpull.report.harness import cli, executors, pages, pipeline
    from plugpull.report.harness.finding import load_all

    root = tiny_repo(tmp_path_factory.mktemp("whole") / "repo")
    finding = load_all(root)["demo"]
    jobs = [pipeline.Job(finding, pin, {}) for pin in finding.pins]
    assert cli.run_all(jobs, root, executors.Local(make_env=lambda job: forked_kernel)) == 0
    pages.write(root)  # a run writes records and the finding's own pages; docs/results.md is `regenerate`'s
    return root
