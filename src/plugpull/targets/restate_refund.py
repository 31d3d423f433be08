"""A refund handler on Restate, a durable-execution server: the built-in `restate` target.

    python -m plugpull.targets.restate_refund [--server sidecar|in-run] [--key none|journaled] serve|start|resume

A Restate service (the Python SDK, ``restate-sdk``, served by hypercorn as its docs show) with one
durable handler, ``refunds/refund``, that takes two ``ctx.run`` actions, each journaled by the server
once it returns:

1. ``draft``: which order, how much, and a fresh request id (new on every call, as an LLM's answer
   would be). No outside action.
2. ``refund``: the tool: calls the payment provider, ``record_effect("refund", key=...)``.

Restate retries an invocation whose service died and replays its journal: an action whose result
the server had journaled is not run again, the one in flight runs again. Restate's docs: ctx.run has
"Restate store its result in the execution log" (https://docs.restate.dev/develop/python/durable-steps),
and "Restate might re-execute the closure multiple times until it records a result" (the Kotlin SDK's
runBlock, https://docs.restate.dev/ktdocs/sdk-api-kotlin/dev.restate.sdk.kotlin/-context/run-block).
With ``--key journaled`` the request id journaled by ``draft`` is the refund's idempotency key.

Two crashes (``--server``):

- ``sidecar``: the server runs apart from the app, started by ``serve`` (plugpull starts that phase
  before ``start`` and stops it after ``resume``: Target.sidecar) and never killed. ``start`` serves
  the service from its own process, registers it, invokes the handler and waits; plugpull's kill
  takes the service process only, mid-tool; the server, still up, retries the invocation; ``resume``
  serves the service again on the same port and attaches to the invocation.
- ``in-run``: ``start`` runs the server itself, in its process group: the kill takes the server and
  the service together (the machine they share went down). ``resume`` restarts the server on the
  same data directory and ports, serves the service again, and attaches.

Everything lives in $PLUGPULL_WORKDIR: the server's data directory (``restate-data``), its log, the
ports (``server.json``) and the invocation id (``invocation.json``). The server binary is the npm
package ``@restatedev/restate-server`` (plugpull.targets.restate_support finds it).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import signal
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

import restate
from hypercorn.asyncio import serve
from hypercorn.config import Config

import plugpull.targets.restate_support as rs
from plugpull.client import WORKDIR_ENV, announce, record_effect, record_result  # plugpull

ORDER = "A-1001"
IDEMPOTENCY_KEY = "refund-A-1001"
HANDLER = "refunds/refund"
# How long start and resume wait for the invocation's result: a retry comes within a second or two.
RESULT_WAIT = 90.0
_key_variant = "none"
# plugpull's bookkeeping, not the app's: ``start`` learns the invocation id only when the server answers the send,
# and ``resume`` needs it to attach. The handler runs on this process's service thread and can reach the kill
# inside its tool before the answer is saved (seen under load: resume then had no invocation.json), so the handler
# waits until the id is on disk. ``resume`` sets it at once: the id is already saved.
_invocation_saved = threading.Event()


def log(message: str) -> None:
    print(f"restate_refund: {message}", file=sys.stderr, flush=True)


refunds = restate.Service("refunds")


@refunds.handler()
async def refund(ctx: restate.Context, order_id: str) -> str:
    await asyncio.to_thread(_invocation_saved.wait)  # plugpull (see _invocation_saved)

    def draft() -> dict:
        drafted = {"order_id": order_id, "cents": 1999, "request_id": f"rf_{uuid.uuid4().hex[:16]}"}
        log(f"draft ran: {drafted['request_id']}")
        return drafted

    drafted = await ctx.run_typed("draft", draft)

    def pay() -> str:
        key = drafted["request_id"] if _key_variant == "journaled" else None
        log(f"refund action runs with key {key}")
        record_effect("refund", key=key)  # plugpull: where the payment API call goes
        return f"refunded {drafted['cents']} cents on order {order_id} ({drafted['request_id']})"

    return await ctx.run_typed("refund", pay)


class Service:
    """The Restate service served by hypercorn on a thread of this process (the process plugpull kills)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.stopping: asyncio.Event | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = threading.Thread(target=self._run, name="restate-service", daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            self.stopping = asyncio.Event()
            config = Config()
            config.bind = [f"127.0.0.1:{self.port}"]
            config.graceful_timeout = 1.0
            config.accesslog = None
            await serve(restate.app([refunds]), config, shutdown_trigger=self.stopping.wait)

        asyncio.run(main())

    def start(self, timeout: float = 30.0) -> None:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if not self.thread.is_alive() or time.monotonic() > deadline:
                    raise RuntimeError(f"the service did not listen on port {self.port}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.loop is not None and self.stopping is not None:
            self.loop.call_soon_threadsafe(self.stopping.set)
        # A phase that failed before the service started (the server never became healthy) stops here too: joining a
        # thread never started raises, and that RuntimeError hid the phase's own message.
        if self.thread.ident is not None:
            self.thread.join(5)


def serve_phase(workdir: Path) -> int:
    """The sidecar: a server for the whole run, started before ``start``, stopped after ``resume`` (SIGTERM)."""
    binary = rs.server_binary()
    if binary is None:
        log(f"no restate-server: {rs.INSTALL_HINT}")
        return 4
    signal.signal(signal.SIGTERM, lambda *_: None)  # wake from sigwait below; the server gets it too (same group)
    try:
        server, ports = rs.start_on_free_ports(binary, workdir / "restate-data", workdir / "server.log")
    except RuntimeError as exc:
        log(f"serve: {exc}")
        return 1
    try:
        rs.save_json(workdir / "server.json", {"ports": ports, "server": "sidecar"})
        print("ready", flush=True)
        signal.sigwait({signal.SIGTERM, signal.SIGINT})
    finally:
        rs.stop_server(server)
    return 0


def main(argv: list[str] | None = None) -> int:
    global _key_variant
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("sidecar", "in-run"), default="in-run")
    parser.add_argument("--key", choices=("none", "journaled"), default="none")
    parser.add_argument("phase", choices=("serve", "start", "resume"))
    args = parser.parse_args(argv)
    _key_variant = args.key
    workdir = Path(os.environ.get(WORKDIR_ENV, ".")).resolve()
    if args.phase == "serve":
        return serve_phase(workdir)
    announce(framework="restate-sdk", version=importlib.metadata.version("restate-sdk"))  # plugpull
    binary = rs.server_binary()
    if binary is None:
        log(f"no restate-server: {rs.INSTALL_HINT}")
        return 4
    announce(restate_server=rs.server_version(binary))  # plugpull
    state = workdir / "server.json"
    if args.server == "sidecar":
        if not state.exists():
            log("no server.json: the serve phase did not start a server (is this run plugpull's, with Target.sidecar?)")
            return 4
        ports = rs.load_json(state)["ports"]
    server = None
    if args.server == "in-run" and args.phase == "start":  # a new server, on ports free when it binds them
        try:
            server, ports = rs.start_on_free_ports(binary, workdir / "restate-data", workdir / "server.log")
        except RuntimeError as exc:
            log(f"start: {exc}")
            return 1
        rs.save_json(state, {"ports": ports, "server": "in-run"})
    elif args.server == "in-run":
        # resume: the same data directory and ports, so the server recovers its log.
        ports = rs.load_json(state)["ports"]
        server = rs.start_server(binary, workdir / "restate-data", ports, workdir / "server.log")
    service = Service(ports["service"])
    try:
        if server is not None:
            rs.wait_healthy(server, ports, log=workdir / "server.log")
        service.start()
        invocation = workdir / "invocation.json"
        if args.phase == "start":
            deployment = rs.register(ports)
            log(f"registered {rs.service_uri(ports)} as {deployment}")
            invocation_id = rs.send(ports, HANDLER, ORDER, IDEMPOTENCY_KEY)
            rs.save_json(invocation, {"id": invocation_id})
            log(f"invoked {HANDLER}: {invocation_id}")
            _invocation_saved.set()
        else:
            _invocation_saved.set()
            invocation_id = rs.load_json(invocation)["id"]
            log(f"resume: attaching to {invocation_id}; the server retries it against {rs.service_uri(ports)}")
        final = rs.attach(ports, invocation_id, RESULT_WAIT)
    except RuntimeError as exc:
        log(f"{args.phase}: {exc}")
        log("server log, last lines: " + " | ".join(rs.tail(workdir / "server.log", 5)))
        return 1
    finally:
        _invocation_saved.set()  # a start that failed before saving: let a waiting handler go, so the process can end
        service.stop()
        if server is not None:
            rs.stop_server(server)
    # The request id is drawn per run by design (the target ignores it: Target.result_ignore).
    answer, _, request_id = final.rpartition(" (")
    record_result({"answer": answer, "request_id": request_id.rstrip(")")})  # plugpull: the run's outcome
    print(final, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
