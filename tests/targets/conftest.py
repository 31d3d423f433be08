import os

import pytest

from plugpull import postgres
from plugpull.forkserver import ForkServers
from plugpull.scenarios import Runtime


@pytest.fixture(scope="module")
def forked():
    """A runtime that forks built-in targets from a pre-imported server: one framework import per module.

    Its clean runs are shared by the module's tests too (a test passes the same Settings, so the same key)."""
    with Runtime(forks=ForkServers()) as runtime:
        yield runtime


@pytest.fixture(scope="module")
def server():
    """A throwaway cluster for the module, its URL in the environment the targets inherit."""
    try:
        with postgres.cluster() as cluster:
            os.environ[postgres.URL_ENV] = cluster.url()
            try:
                yield cluster
            finally:
                os.environ.pop(postgres.URL_ENV, None)
    except postgres.PostgresUnavailable as error:
        print(f"no PostgreSQL cluster could start here: {error}")
        pytest.skip(f"no PostgreSQL cluster could start here: {error}")
