"""A throwaway PostgreSQL cluster: initdb in a temporary folder, a free loopback port, stopped and removed at the end.

    python -m plugpull.postgres COMMAND [ARG...]    # run COMMAND with PLUGPULL_POSTGRES_URL set, then stop it

The targets that can keep their framework's state in PostgreSQL (DBOS's system database, Google ADK's
``DatabaseSessionService``, FastAIAgent's ``PostgresCheckpointer``; their ``store=postgresql`` variants) read
the server from ``PLUGPULL_POSTGRES_URL`` and make one database per run in it (:func:`run_database`), so runs
never see each other's rows. :func:`cluster` starts one for the length of a ``with`` block: the findings
notebook of those targets does that itself, ``python -m plugpull.postgres`` does it around any command
(``plugpull``, ``pytest``), and a URL of another server works the same way (the user it names must be allowed
to create databases).

The server is Debian's (``apt-get install postgresql``: binaries under /usr/lib/postgresql/<major>/bin, which
Debian does not put on PATH), or ``initdb`` and ``pg_ctl`` from PATH, or the folder in ``PLUGPULL_POSTGRES_BINDIR``.
``initdb`` refuses to run as root ("initdb: error: cannot be run as root"); as root the server's own commands run
as the ``postgres`` user that Debian's package creates (``runuser -u postgres``) and the temporary folder is given
to it. Connections use trust authentication on 127.0.0.1 and a Unix socket in the temporary folder: nothing but
this machine can reach the cluster, and no password exists to leak. Nothing is left behind: the server is stopped
and the folder removed when the block ends, also on an exception or Ctrl-C; the server runs in a session of
its own so that a Ctrl-C at the terminal reaches plugpull, which then stops it in order.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from plugpull.client import PlugpullError

#: The cluster's URL (``postgresql://USER@HOST:PORT/postgres``), read by the targets' ``store=postgresql`` variants.
URL_ENV = "PLUGPULL_POSTGRES_URL"
#: A folder holding initdb, pg_ctl and createdb, when they are not where Debian or PATH puts them.
BINDIR_ENV = "PLUGPULL_POSTGRES_BINDIR"
#: The cluster's superuser (initdb -U): trust authentication, loopback and the socket only.
USER = "plugpull"
#: The account the server runs as when plugpull runs as root (Debian's postgresql package creates it).
SYSTEM_USER = "postgres"
#: Exit code of ``python -m plugpull.postgres`` when no cluster could be started (the command did not run).
UNAVAILABLE_EXIT = 3
# A Unix socket path is at most 107 bytes on Linux (sun_path); postgres adds "/.s.PGSQL.<port>".
_SOCKET_PATH_MAX = 90
_START_TIMEOUT = 60


class PostgresUnavailable(PlugpullError):
    """No cluster could be started here: the message says why in one line."""


@dataclass(frozen=True)
class Cluster:
    """A running cluster: where it listens and who may connect."""

    host: str
    port: int
    user: str
    bindir: Path
    version: str  # "PostgreSQL 15.14": what `postgres --version` says

    def url(self, database: str = "postgres", driver: str | None = None) -> str:
        """The SQLAlchemy/libpq URL of ``database`` (``postgresql+DRIVER://`` when a driver is named)."""
        scheme = f"postgresql+{driver}" if driver else "postgresql"
        return f"{scheme}://{self.user}@{self.host}:{self.port}/{database}"


def find_bindir() -> Path:
    """The folder of initdb and pg_ctl: $PLUGPULL_POSTGRES_BINDIR, Debian's newest major, or PATH."""
    given = os.environ.get(BINDIR_ENV)
    if given:
        if not (Path(given) / "initdb").exists():
            raise PostgresUnavailable(f"{BINDIR_ENV}={given} holds no initdb")
        return Path(given)
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: _major(Path(p).parent.parent.name))
    if debian:
        return Path(debian[-1]).parent
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).parent
    raise PostgresUnavailable(
        "PostgreSQL's server binaries (initdb, pg_ctl) were not found: install them "
        f"(Debian: apt-get install postgresql) or set {BINDIR_ENV}"
    )


def _major(name: str) -> int:
    return int(name) if name.isdigit() else -1


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(argv: list[str]) -> list[str]:
    """As root, the server's commands run as the postgres account (initdb and postgres refuse root)."""
    if os.geteuid() != 0:
        return argv
    if shutil.which("runuser") is None:
        raise PostgresUnavailable("running as root and runuser is missing: initdb and postgres refuse to run as root")
    try:
        import pwd

        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        raise PostgresUnavailable(
            f"running as root and there is no {SYSTEM_USER!r} user to run the server as "
            "(Debian's postgresql package creates it): initdb and postgres refuse to run as root"
        ) from None
    return ["runuser", "-u", SYSTEM_USER, "--", *argv]


def _reachable_by_others(folder: Path) -> bool:
    """Whether another account can reach ``folder``: it and every folder above it searchable by others."""
    return all(os.stat(p).st_mode & 0o001 for p in (folder, *folder.parents))


def _base_dir() -> str | None:
    """Where the cluster's folder goes: the temp dir, or as root one the postgres account can reach.

    As root the server runs as another account, which cannot enter a private temp dir (plugpull report's kernel
    runs with TMPDIR a fresh 0700 folder); /tmp (sticky, world-writable) is used then.
    """
    if os.geteuid() != 0:
        return None
    here = Path(tempfile.gettempdir()).resolve()
    if _reachable_by_others(here):
        return str(here)
    if Path("/tmp").is_dir() and _reachable_by_others(Path("/tmp")):
        return "/tmp"
    raise PostgresUnavailable(
        f"running as root and neither {here} nor /tmp can be entered by the {SYSTEM_USER!r} account"
    )


def _give_to_server_user(path: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, user=SYSTEM_USER)


def _run(argv: list[str], what: str, timeout: float = _START_TIMEOUT) -> str:
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, start_new_session=True
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PostgresUnavailable(f"{what} failed: {error}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise PostgresUnavailable(f"{what} failed (exit {done.returncode}): {said[-1] if said else 'no output'}")
    return done.stdout


@contextlib.contextmanager
def cluster() -> Iterator[Cluster]:
    """Start a throwaway cluster for the block; stop it and remove its folder afterwards, whatever happens.

    Raises :class:`PostgresUnavailable` (one line: why) when it cannot start; nothing is left behind then either.
    """
    bindir = find_bindir()
    root = Path(tempfile.mkdtemp(prefix="plugpull-pg-", dir=_base_dir()))
    data, log = root / "data", root / "server.log"
    started = False
    try:
        _give_to_server_user(root)
        version = _run([str(bindir / "postgres"), "--version"], "postgres --version").strip()
        # --no-sync: the folder is thrown away at the end, so initdb need not wait for its files to reach the
        # disk. The server itself keeps its defaults (fsync on): the runs kill clients, never the server.
        _run(
            _as_server_user(
                [str(bindir / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "--no-sync", "-E", "UTF8"]
            ),
            "initdb",
        )
        socket_dir = str(root) if len(str(root)) <= _SOCKET_PATH_MAX else ""
        for attempt in range(3):
            port = _free_port()
            options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='{socket_dir}'"
            try:
                _run(
                    _as_server_user(
                        [
                            str(bindir / "pg_ctl"),
                            "-D",
                            str(data),
                            "-l",
                            str(log),
                            "-o",
                            options,
                            "-w",
                            "-t",
                            "60",
                            "start",
                        ]
                    ),
                    "pg_ctl start",
                )
            except PostgresUnavailable as error:
                # Another process may have taken the port between _free_port and the bind: try another one.
                if attempt == 2 or "could not bind" not in _tail(log):
                    raise PostgresUnavailable(f"{error}; server log: {_tail(log)}") from None
                continue
            started = True
            break
        yield Cluster(host="127.0.0.1", port=port, user=USER, bindir=bindir, version=version)
    finally:
        if started:
            _stop(bindir, data)
        shutil.rmtree(root, ignore_errors=True)


def _tail(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no server log)"
    return lines[-1] if lines else "(empty server log)"


def _stop(bindir: Path, data: Path) -> None:
    """Stop the server: a fast shutdown, an immediate one if that fails, then SIGKILL of what is left."""
    for mode in ("fast", "immediate"):
        try:
            _run(
                _as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", mode, "-w", "-t", "30", "stop"]), "stop"
            )
            return
        except PostgresUnavailable:
            continue
    with contextlib.suppress(OSError, ValueError, IndexError):
        pid = int((data / "postmaster.pid").read_text().splitlines()[0])
        os.killpg(pid, 9)  # the postmaster leads its own session (started with start_new_session)


def run_database(workdir: str | os.PathLike[str], *, create: bool, driver: str | None = None) -> str:
    """The URL of this run's own database on the cluster in $PLUGPULL_POSTGRES_URL, named after ``workdir``.

    ``create=True`` (a run's first phase) creates it; the later phases of the run (resume, approvers) find it by
    the same name. Raises :class:`PostgresUnavailable` when the variable is not set or the database cannot be made.
    """
    base = os.environ.get(URL_ENV)
    if not base:
        raise PostgresUnavailable(
            f"{URL_ENV} is not set: start a throwaway cluster around the command "
            "(python -m plugpull.postgres plugpull ...) or point it at a server"
        )
    name = "plugpull_" + hashlib.sha1(str(Path(workdir).resolve()).encode()).hexdigest()[:16]
    prefix, _, _ = base.rpartition("/")
    if create:
        createdb = _client("createdb")
        # createdb takes the server from a URL given as the maintenance database (libpq connection string).
        _run([createdb, f"--maintenance-db={base}", name], f"createdb {name}")
    url = f"{prefix}/{name}"
    if driver:
        scheme, sep, rest = url.partition("://")
        url = f"{scheme}+{driver}{sep}{rest}"
    return url


def _client(name: str) -> str:
    with contextlib.suppress(PostgresUnavailable):
        candidate = find_bindir() / name
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise PostgresUnavailable(
            f"{name} (PostgreSQL's client) was not found: install postgresql-client or set {BINDIR_ENV}"
        )
    return found


def main(argv: list[str] | None = None) -> int:
    """``python -m plugpull.postgres COMMAND [ARG...]``: the command's exit code; 3 when no cluster starts."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr if not argv else sys.stdout)
        return 0 if argv else 2
    try:
        with cluster() as running:
            print(f"plugpull.postgres: {running.version} at {running.url()}", file=sys.stderr, flush=True)
            env = {**os.environ, URL_ENV: running.url()}
            try:
                return subprocess.run(argv, env=env).returncode
            except FileNotFoundError:
                print(f"plugpull.postgres: {argv[0]}: command not found", file=sys.stderr)
                return 127
            except KeyboardInterrupt:
                return 130
    except PostgresUnavailable as error:
        print(f"plugpull.postgres: {error}", file=sys.stderr)
        return UNAVAILABLE_EXIT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
