import pytest

from plugpull.forkserver import ForkServers
from plugpull.scenarios import Runtime


@pytest.fixture(scope="module")
def forked():
    """A runtime that forks built-in targets from a pre-imported server: one framework import per module.

    Its clean runs are shared by the module's tests too (a test passes the same Settings, so the same key)."""
    with Runtime(forks=ForkServers()) as runtime:
        yield runtime
