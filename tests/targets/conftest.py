import os

import pytest

from plugpull import postgres


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
