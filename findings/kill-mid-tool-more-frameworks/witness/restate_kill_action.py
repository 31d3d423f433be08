"""Restate: a service process SIGKILLed inside a ctx.run action, alone or with the server; the server retries.

    python restate_kill_action.py --point before-effect|after-effect [--crash service|server] [--fork]

Needs restate-sdk and hypercorn, and restate-server on PATH (the npm package @restatedev/restate-server).
A throwaway server runs on free loopback ports with its data in the current directory. A service (one
handler: ctx.run "draft", then ctx.run "refund", whose side effect is a line in effects.txt) is served by
hypercorn in a child process, registered with the admin API and invoked through the ingress. Inside the
refund action the child SIGKILLs itself, before or after the line; with --crash server it SIGKILLs the
server's process group first. Then (the server restarted on the same data directory for --crash server)
the service is served again on the same port and the script attaches to the invocation. Restate's docs:
ctx.run has "Restate store its result in the execution log"; an action without a stored result runs again
("Restate might re-execute the closure multiple times until it records a result",
https://docs.restate.dev/ktdocs/sdk-api-kotlin/dev.restate.sdk.kotlin/-context/run-block).

With --fork (Linux) the script imports restate-sdk and hypercorn once and forks each service process from itself
instead of starting a new interpreter for it (the default, as the records ran): the same serve() code, a fresh
process in a session of its own each time, SIGKILLed for real; the server and the script's requests are the same.

Exit 0: the invocation finished with one refund; 1: two refunds (or none); 2: the kill did not land as designed.
"""

# No `from __future__ import annotations`: the SDK reads the handler's annotations, and `restate` is imported
# inside serve(), where a string annotation could not be resolved.
import argparse
import asyncio
import importlib.metadata
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request

NAME = "restate_kill_action"
# --fork: what serve() imports, imported once before the first service is forked.
PHASE_IMPORTS = ("restate", "hypercorn.asyncio", "hypercorn.config")
EFFECTS = "effects.txt"
KILLED = "killed"  # the child kills itself once: the retried attempt finds this file


def effects() -> int:
    try:
        with open(EFFECTS) as f:
            return sum(1 for line in f if line.strip())
    except FileNotFoundError:
        return 0


def serve(port: int, point: str) -> None:
    import restate
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config

    service = restate.Service("refunds")

    def die() -> None:
        open(KILLED, "w").close()
        server_group = os.environ.get("WITNESS_SERVER_PGID")
        if server_group:
            os.killpg(int(server_group), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)

    @service.handler()
    async def refund(ctx: restate.Context, order_id: str) -> str:
        drafted = await ctx.run_typed("draft", lambda: {"order_id": order_id, "cents": 1999})

        def pay() -> str:
            first = not os.path.exists(KILLED)
            if first and point == "before-effect":
                die()
            with open(EFFECTS, "a") as f:
                f.write("refund\n")
                f.flush()
                os.fsync(f.fileno())
            if first and point == "after-effect":
                die()
            return f"refunded {drafted['cents']} cents on order {drafted['order_id']}"

        return await ctx.run_typed("refund", pay)

    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.graceful_timeout = 1.0
    asyncio.run(hypercorn_serve(restate.app([service]), config))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def request(method: str, url: str, body: object = None, headers: dict | None = None, timeout: float = 30) -> object:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        url, data, method=method, headers={"content-type": "application/json", **(headers or {})}
    )
    with urllib.request.urlopen(req, timeout=timeout) as reply:
        return json.loads(reply.read() or b"null")


class Forked:
    """--fork: serve(port, point) in a process forked from this one, seen as the subprocess.Popen(argv, env=env,
    stdout=DEVNULL, stderr=err, start_new_session=True) of a cold service is here: pid (its process group's id too),
    args, returncode (-9: SIGKILLed), poll(), wait(timeout)."""

    def __init__(self, argv: list[str], env: dict[str, str], port: int, point: str, err) -> None:
        self.args, self.returncode = argv, None
        sys.stdout.flush()  # nothing buffered here is written twice
        sys.stderr.flush()
        self.pid = os.fork()
        if self.pid == 0:  # the service; it never returns
            code = 1
            try:
                os.setsid()
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(err.fileno(), 2)
                os.environ.clear()
                os.environ.update(env)
                serve(port, point)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:  # os._exit: the parent's exit handlers and finally blocks are not the service's
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.01)
        return self.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=("before-effect", "after-effect"), default="after-effect")
    parser.add_argument("--crash", choices=("service", "server"), default="service")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="fork each service process from this one after one restate-sdk import (Linux; default: each is a new "
        "interpreter, as the records ran)",
    )
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fork and sys.platform != "linux":
        parser.error("--fork: needs Linux (os.fork)")
    if args.serve:
        serve(args.serve, args.point)
        return 0
    out = {"witness": NAME, "framework": "restate-sdk", "version": importlib.metadata.version("restate-sdk")}
    if args.fork:
        for name in PHASE_IMPORTS:
            importlib.import_module(name)
        if threading.active_count() != 1:
            did = f"--fork: {threading.active_count()} threads after the imports; fork() copies only this one"
            out.update(verdict="ERROR", counts={}, did=did)
            print(json.dumps(out))
            return 2
    binary = shutil.which("restate-server")
    if binary is None:
        out.update(verdict="ERROR", counts={"refund": 0}, did="restate-server is not on PATH")
        print(json.dumps(out))
        return 2
    for stale in (EFFECTS, KILLED):
        if os.path.exists(stale):
            os.remove(stale)
    shutil.rmtree("restate-data", ignore_errors=True)
    ports = {name: free_port() for name in ("ingress", "admin", "node", "service")}
    with open("config.toml", "w") as f:
        f.write(
            'cluster-name = "witness"\ndefault-num-partitions = 1\ndisable-telemetry = true\n'
            '[default-retry-policy]\ninitial-interval = "100ms"\nmax-interval = "1s"\n'
            f'[admin]\nbind-address = "127.0.0.1:{ports["admin"]}"\ndisable-web-ui = true\n'
            f'[ingress]\nbind-address = "127.0.0.1:{ports["ingress"]}"\n'
        )
    server_argv = [binary, "--config-file", "config.toml", "--base-dir", "restate-data", "--node-name", "witness"]
    server_argv += ["--listen-mode", "tcp", "--bind-address", f"127.0.0.1:{ports['node']}", "--no-logo"]
    log = open("server.log", "ab")  # noqa: SIM115 - closed in the finally below, after the last process
    processes: list[subprocess.Popen | Forked] = []

    def start_server() -> subprocess.Popen:
        server = subprocess.Popen(server_argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        processes.append(server)
        deadline = time.monotonic() + 60
        while True:
            try:
                request("GET", f"http://127.0.0.1:{ports['admin']}/health", timeout=2)
                request("GET", f"http://127.0.0.1:{ports['ingress']}/restate/health", timeout=2)
                return server
            except (urllib.error.URLError, OSError):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("restate-server did not start") from None
                time.sleep(0.1)

    def start_service(env: dict) -> subprocess.Popen | Forked:
        argv = [sys.executable, __file__, "--point", args.point, "--serve", str(ports["service"])]
        if args.fork:
            service = Forked(argv, env, ports["service"], args.point, log)
        else:
            service = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        processes.append(service)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", ports["service"]), timeout=1).close()
                return service
            except OSError:
                if service.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the service did not listen") from None
                time.sleep(0.05)

    try:
        server = start_server()
        env = dict(os.environ)
        if args.crash == "server":
            env["WITNESS_SERVER_PGID"] = str(server.pid)
        service = start_service(env)
        request(
            "POST", f"http://127.0.0.1:{ports['admin']}/deployments", {"uri": f"http://127.0.0.1:{ports['service']}"}
        )
        sent = request(
            "POST",
            f"http://127.0.0.1:{ports['ingress']}/refunds/refund/send",
            "A-1001",
            {"idempotency-key": "refund-A-1001"},
        )
        invocation = sent["invocationId"]
        service.wait(60)
        killed = service.returncode == -signal.SIGKILL and os.path.exists(KILLED)
        if args.crash == "server":
            server.wait(30)
            killed = killed and server.returncode == -signal.SIGKILL
        if not killed:
            out.update(verdict="ERROR", counts={"refund": effects()}, did="the service was not SIGKILLed in the action")
            print(json.dumps(out))
            return 2
        if args.crash == "server":
            start_server()  # the same data directory and ports: the server recovers its log
        start_service(dict(os.environ))
        answer = request(
            "GET", f"http://127.0.0.1:{ports['ingress']}/restate/invocation/{invocation}/attach", timeout=90
        )
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        out.update(verdict="ERROR", counts={"refund": effects()}, did=f"the run broke: {exc}")
        print(json.dumps(out))
        return 2
    finally:
        for proc in reversed(processes):
            if proc.poll() is None:
                # The service is stopped as hypercorn says ("CTRL + C to quit"): on SIGTERM it did not exit within
                # the 5 s below (hypercorn 0.18, restate-sdk 1.3), so every run waited them out before the SIGKILL.
                os.killpg(proc.pid, signal.SIGTERM if proc.args[0] == binary else signal.SIGINT)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        log.close()
    refunds = effects()
    ok = refunds == 1
    who = "the service and the server" if args.crash == "server" else "the service (the server stayed up)"
    out.update(
        verdict="PASS" if ok else "FAIL",
        counts={"refund": refunds},
        did=(
            f"{who} SIGKILLed inside the refund ctx.run action ({args.point}); the invocation finished "
            f"with {answer!r} after the retry; {refunds} refund(s)"
        ),
    )
    print(json.dumps(out))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
