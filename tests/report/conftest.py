"""Fixtures for the report pipeline: the current Python as a kernel."""

from __future__ import annotations

import pytest

from plugpull.report import environment


@pytest.fixture(scope="session")
def current_kernel(tmp_path_factory):
    """This test run's Python registered as a Jupyter kernel in a private prefix (no new venv)."""
    return environment.current(tmp_path_factory.mktemp("kernels"))
