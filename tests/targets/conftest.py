import pytest

from plugpull.forkserver import ForkServers
from plugpull.scenarios import Settings


@pytest.fixture(scope="module")
def forked():
    """Settings that fork built-in targets from a pre-imported server: one framework import per module."""
    forks = ForkServers()
    yield Settings(timeout=90, forks=forks)
    forks.close()
