"""plugpull.postgres on a real server: a throwaway cluster starts, serves, and leaves nothing behind.

Every test that needs a server skips, printing why, where none can start (no PostgreSQL installed):
.ci/run installs Debian's postgresql when it is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from plugpull import postgres


@pytest.fixture(scope="module")
def running():
    try:
        with postgres.cluster() as cluster:
            yield cluster
    except postgres.PostgresUnavailable as error:
        print(f"no PostgreSQL cluster could start here: {error}")
        pytest.skip(f"no PostgreSQL cluster could start here: {error}")


def psql(cluster: postgres.Cluster, url: str, sql: str) -> str:
    done = subprocess.run(
        [str(cluster.bindir / "psql"), url, "-Atc", sql], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_a_cluster_listens_on_loopback_and_answers_queries(running):
    assert running.host == "127.0.0.1"
    assert psql(running, running.url(), "select 1") == "1"
    assert running.version.startswith("postgres (PostgreSQL) ")
    assert running.url("db", driver="asyncpg") == f"postgresql+asyncpg://plugpull@127.0.0.1:{running.port}/db"


def test_each_run_gets_its_own_database_named_after_its_workdir(running, tmp_path, monkeypatch):
    monkeypatch.setenv(postgres.URL_ENV, running.url())
    first = postgres.run_database(tmp_path / "a", create=True)
    second = postgres.run_database(tmp_path / "b", create=True)
    assert first != second
    assert postgres.run_database(tmp_path / "a", create=False) == first  # a later phase finds it by name
    psql(running, first, "create table t (x int); insert into t values (1)")
    assert psql(running, second, "select count(*) from pg_tables where tablename = 't'") == "0"
    assert postgres.run_database(tmp_path / "a", create=False, driver="asyncpg").startswith("postgresql+asyncpg://")


def test_a_run_database_without_a_server_named_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv(postgres.URL_ENV, raising=False)
    with pytest.raises(postgres.PostgresUnavailable, match="PLUGPULL_POSTGRES_URL is not set") as refused:
        postgres.run_database(tmp_path, create=True)
    assert "\n" not in str(refused.value)


def test_the_server_is_stopped_and_its_folder_removed_even_when_the_block_raises():
    try:
        with postgres.cluster() as cluster:
            data = Path(
                subprocess.run(
                    [str(cluster.bindir / "psql"), cluster.url(), "-Atc", "show data_directory"],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.strip()
            )
            pid = int((data / "postmaster.pid").read_text().splitlines()[0])
            assert alive(pid)
            raise RuntimeError("the run failed")
    except postgres.PostgresUnavailable as error:
        pytest.skip(f"no PostgreSQL cluster could start here: {error}")
    except RuntimeError:
        pass
    assert not alive(pid)
    assert not data.parent.exists()


def test_no_server_binaries_is_one_line_and_exit_3_and_the_command_does_not_run(tmp_path):
    marker = tmp_path / "ran"
    env = {**os.environ, postgres.BINDIR_ENV: str(tmp_path / "nowhere"), "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "plugpull.postgres", "touch", str(marker)], env=env, capture_output=True, text=True
    )
    assert done.returncode == postgres.UNAVAILABLE_EXIT == 3
    assert done.stderr.strip().count("\n") == 0
    assert "holds no initdb" in done.stderr
    assert not marker.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary folder left behind


def test_the_command_runs_with_the_url_and_its_exit_code_is_passed_on(running):
    # A cluster of its own: the module's `running` only proves one can start here.
    probe = "import os, sys; url = os.environ['PLUGPULL_POSTGRES_URL']; sys.exit(7 if url.startswith('postgresql://') else 1)"
    done = subprocess.run([sys.executable, "-m", "plugpull.postgres", sys.executable, "-c", probe], capture_output=True)
    assert done.returncode == 7, done.stderr


def test_no_command_is_bad_input():
    done = subprocess.run([sys.executable, "-m", "plugpull.postgres"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "python -m plugpull.postgres COMMAND" in done.stderr


def test_ctrl_c_stops_the_command_and_the_server_exits_130_and_leaves_nothing(running, tmp_path):
    import signal
    import time

    # A short temp dir of this test's own (a Unix socket path must fit; the server's account must enter it):
    # /tmp itself is shared with the other xdist workers, whose clusters come and go meanwhile.
    base = Path(tempfile.mkdtemp(prefix="pg-ctrl-c-", dir="/tmp"))
    base.chmod(0o711)
    env = {**os.environ, "TMPDIR": str(base)}
    started = subprocess.Popen(
        [sys.executable, "-m", "plugpull.postgres", sys.executable, "-c", "import time; time.sleep(120)"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert "plugpull.postgres: postgres (PostgreSQL)" in started.stderr.readline()  # the cluster is up
    time.sleep(1)
    started.send_signal(signal.SIGINT)
    assert started.wait(timeout=60) == 130
    left = sorted(p.name for p in base.iterdir())  # kept for a look when the test fails
    if not left:
        base.rmdir()
    assert left == []
