"""Fixtures for the report pipeline: the current Python as a kernel."""

from __future__ import annotations

import pytest

from plugpull.report.harness import environment


@pytest.fixture(scope="session")
def current_kernel(tmp_path_factory):
    """This test run's Python registered as a Jupyter kernel in a private prefix (no new venv)."""
    return environment.current(tmp_path_factory.mktemp("kernels"))


@pytest.fixture(scope="session")
def whole_run(tmp_path_factory, current_kernel):
    """The tiny finding's two pin sets run here one after another, as `plugpull report` does by default:
    the reference the Dask executor and `merge` of split runs are compared with."""
    from tiny import tiny_repo

    from plugpull.report.harness import cli, executors, pipeline
    from plugpull.report.harness.finding import load_all

    root = tiny_repo(tmp_path_factory.mktemp("whole") / "repo")
    finding = load_all(root)["demo"]
    jobs = [pipeline.Job(finding, pin, {}) for pin in finding.pins]
    assert cli.run_all(jobs, root, executors.Local(make_env=lambda job: current_kernel)) == 0
    return root
