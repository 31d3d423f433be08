"""What the built-in `restate` target needs around the Restate server: find it, start it on loopback, talk to it.

The server is the binary of the npm package ``@restatedev/restate-server`` (a per-platform package such as
``@restatedev/restate-server-linux-x64`` holds it; the package's ``restate-server`` command is a Node
script that spawns it). It is found through ``$PLUGPULL_RESTATE_SERVER`` or ``restate-server`` on PATH
(``npm install -g @restatedev/restate-server``; .ci/run does that where it is missing). Each server here
is a throwaway: its own data directory under $PLUGPULL_WORKDIR, free loopback ports, telemetry off.

Only the standard library: the agent's phases import this before the Restate SDK.
"""

from __future__ import annotations

import json
import os
import platform
import random
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

SERVER_ENV = "PLUGPULL_RESTATE_SERVER"
SERVER_PACKAGE = "@restatedev/restate-server"
INSTALL_HINT = f"npm install -g {SERVER_PACKAGE} (or set {SERVER_ENV} to the restate-server binary)"
# How long a server may take to answer its health check: about 1 s on an idle machine, several under load.
BOOT_WAIT = 60.0

# The server's own configuration (restate-server --dump-config shows every key): one partition is enough
# for one invocation and starts faster; no telemetry or web UI from a throwaway server. The retry policy
# caps the wait between attempts at 1 s (the default grows to 1 min): a killed service comes back within
# seconds and its invocation should be retried then, not a minute later. Restate retries an invocation
# whose service died "until it succeeds" either way (docs.restate.dev, "Error handling").
CONFIG = """\
cluster-name = "plugpull"
default-num-partitions = 1
disable-telemetry = true
rocksdb-total-memory-size = "256 MiB"

[default-retry-policy]
initial-interval = "100ms"
exponentiation-factor = 2.0
max-interval = "1s"

[admin]
bind-address = "127.0.0.1:{admin}"
disable-web-ui = true

[admin.query-engine]
memory-size = "64 MiB"

[ingress]
bind-address = "127.0.0.1:{ingress}"
"""


def server_binary() -> str | None:
    """The restate-server executable, or None. Prefers the platform binary over the package's Node wrapper."""
    found = os.environ.get(SERVER_ENV) or shutil.which("restate-server")
    if not found:
        return None
    real = Path(found).resolve()
    if real.name == "index.js":  # the npm wrapper (lib/index.js): its package's platform binary, if beside it
        arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), platform.machine())
        name = f"restate-server-{platform.system().lower()}-{arch}"
        package = real.parent.parent
        for modules in (package / "node_modules" / "@restatedev", package.parent):
            binary = modules / name / "bin" / "restate-server"
            if binary.is_file():
                return str(binary)
    return str(real)


def free_port() -> int:
    """A loopback port free now, below the kernel's ephemeral range when it can be.

    The ports are used again by ``resume`` after the kill: a port the kernel hands out for outgoing
    connections (bind to 0 picks from that same range) could be taken by any process in between.
    """
    low = _ephemeral_low()
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


def _ephemeral_low() -> int:
    """The first port of Linux's ephemeral range (32768 by default and where /proc does not say)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def new_ports() -> dict[str, int]:
    """Free loopback ports for one server (ingress, admin, node-to-node) and the service it calls."""
    return {name: free_port() for name in ("ingress", "admin", "node", "service")}


def save_json(path: Path, value: Any) -> None:
    """Write ``value`` to ``path`` atomically and durably (a kill never leaves half a file)."""
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        json.dump(value, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def start_server(binary: str, base: Path, ports: dict[str, int], log: Path) -> subprocess.Popen:
    """Start restate-server on ``ports`` with its data in ``base`` (kept: a restart recovers from it).

    It stays in the caller's process group: whoever kills the caller's group kills the server too.
    """
    base.mkdir(parents=True, exist_ok=True)
    config = base / "config.toml"
    config.write_text(CONFIG.format(**ports))
    argv = [
        binary,
        "--config-file",
        str(config),
        "--base-dir",
        str(base),
        "--node-name",
        "plugpull",
        "--listen-mode",
        "tcp",
        "--bind-address",
        f"127.0.0.1:{ports['node']}",
        "--no-logo",
    ]
    with open(log, "ab") as out:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)


#: What restate-server logs when a port it was given is taken (its error RT0004: "failed binding to address").
ADDRESS_IN_USE = "Address in use"


def start_on_free_ports(binary: str, base: Path, log: Path, attempts: int = 3) -> tuple[subprocess.Popen, dict]:
    """A new server on new ports, answering its health checks; ``(server, ports)``.

    free_port's ports are free when drawn, not when the server binds them: another process (another run's server,
    on a busy machine or a test suite's parallel workers) can take one in between, and the server exits with
    RT0004 "Address in use". Then its data folder, which holds nothing yet, is removed and new ports are drawn,
    up to ``attempts`` times; any other failure is raised at once (RuntimeError).
    """
    for attempt in range(1, attempts + 1):
        ports = new_ports()
        server = start_server(binary, base, ports, log)
        try:
            wait_healthy(server, ports, log=log)
            return server, ports
        except RuntimeError:
            stop_server(server)
            if attempt == attempts or server.returncode is None or not any(ADDRESS_IN_USE in t for t in tail(log, 5)):
                raise
            shutil.rmtree(base, ignore_errors=True)
    raise AssertionError("unreachable")


def wait_healthy(
    server: subprocess.Popen, ports: dict[str, int], timeout: float = BOOT_WAIT, log: Path | None = None
) -> None:
    """Until both the admin API and the ingress answer; RuntimeError if the server exits or the time is up."""
    deadline = time.monotonic() + timeout
    urls = (f"http://127.0.0.1:{ports['admin']}/health", f"http://127.0.0.1:{ports['ingress']}/restate/health")
    pending = list(urls)
    while pending:
        if server.poll() is not None:
            last = tail(log, 1) if log is not None else []
            said = f": {last[0].strip()}" if last else ""
            raise RuntimeError(f"restate-server exited with code {server.returncode} while starting{said}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"restate-server did not answer {pending[0]} within {timeout:g}s")
        try:
            with urllib.request.urlopen(pending[0], timeout=2):
                pending.pop(0)
        except (urllib.error.URLError, OSError):
            time.sleep(0.1)


def stop_server(server: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM (the server shuts down cleanly), then SIGKILL after ``grace`` seconds."""
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(grace)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def request(method: str, url: str, body: Any = None, headers: dict[str, str] | None = None, timeout: float = 30) -> Any:
    """One JSON request; RuntimeError with the server's answer on an HTTP error."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        url, data=data, method=method, headers={"content-type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as reply:
            return json.loads(reply.read() or b"null")
    except urllib.error.HTTPError as exc:
        raise RuntimeError(f"{method} {url}: HTTP {exc.code}: {exc.read().decode(errors='replace')[:300]}") from None


def register(ports: dict[str, int]) -> str:
    """Register the service at its port with the server's admin API (POST /deployments); the deployment id."""
    answer = request("POST", f"http://127.0.0.1:{ports['admin']}/deployments", {"uri": service_uri(ports)})
    return answer["id"]


def service_uri(ports: dict[str, int]) -> str:
    return f"http://127.0.0.1:{ports['service']}"


def send(ports: dict[str, int], path: str, body: Any, idempotency_key: str) -> str:
    """Invoke ``path`` (``service/handler``) without waiting (``/send``); the invocation id."""
    answer = request(
        "POST",
        f"http://127.0.0.1:{ports['ingress']}/{path}/send",
        body,
        headers={"idempotency-key": idempotency_key},
    )
    return answer["invocationId"]


def attach(ports: dict[str, int], invocation_id: str, timeout: float) -> Any:
    """Wait for the invocation's result (GET /restate/invocation/{id}/attach)."""
    url = f"http://127.0.0.1:{ports['ingress']}/restate/invocation/{invocation_id}/attach"
    return request("GET", url, timeout=timeout)


def load_json(path: Path) -> Any:
    return json.loads(path.read_text())


def tail(path: Path, n: int) -> list[str]:
    """The last ``n`` non-empty lines of a log, or none if it is missing."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in lines if line.strip()][-n:]


def server_version(binary: str) -> str:
    """``restate-server --version``'s number ("1.7.12"), or "?" when it does not say."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    words = out.split()
    return words[-1] if words else "?"
