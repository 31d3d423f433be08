"""Jupyter kernels forked from a template that imported what a findings notebook's kernel imports.

Each notebook smoke (tests/report/test_notebooks.py) started a cold kernel that spent ~1.3 of its ~1.6 CPU-s
importing ipykernel, IPython, pandas, matplotlib and plugpull's kernel side, the same modules every time. Here
one template process imports them once and forks a fresh kernel for every papermill run. What runs the
notebook is still the real thing: papermill and jupyter_client start the kernelspec's argv (this file's
``launch``), talk to the kernel over ZeroMQ, interrupt it with a signal and shut it down; the kernel is
ipykernel's own ``ipykernel_launcher`` run as ``__main__`` in a new process, with the environment, working
directory and argv jupyter_client gave the launcher. What differs from a cold start is only that those modules
are already in ``sys.modules`` (as with plugpull's fork server for targets, plugpull/forkserver.py); the cold
kernel start stays tested by test_pipeline.py and the Dask workers' runs (test_executor.py).
A notebook smoke also names its pytest worker's family servers (:data:`WORKER_SERVERS`): its kernel's forked lines
fork from them instead of a server of the kernel's own (:func:`fork_from`).

The launcher is the process jupyter_client owns: it hands its stdin, stdout and stderr and its environment to
the template over a Unix socket, relays SIGINT, SIGTERM and SIGHUP to the kernel's process group, and exits
as the kernel did (the same code, or killed by the same signal). If the launcher is SIGKILLed (jupyter_client's
last resort), the template sees its connection close and SIGKILLs the kernel's group: nothing stays behind.

Only the standard library is imported at the top: the launcher starts in a few milliseconds.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

# What every findings notebook's kernel imports (ipykernel_launcher's kernelapp; the notebooks' first cell
# imports plugpull.report.kernel.notebook; nb.table and nb.plot import pandas and matplotlib.pyplot).
PRELOAD = ("ipykernel.kernelapp", "IPython", "pandas", "matplotlib.pyplot", "plugpull.report.kernel.notebook")
# ipykernel sets this default before the kernel imports matplotlib (ipykernel/kernelapp.py, init_gui_pylab);
# matplotlib reads it once, at import, so the template sets it first, as the kernel would.
INLINE = "module://matplotlib_inline.backend_inline"
# environment.current's name: the kernel is this Python's environment, as there; a record names it, and the
# Dask test compares records of these kernels with records of its workers' cold ones.
NAME = "plugpull-current"
#: Set by a notebook smoke (test_notebooks.py) in its kernel's environment: ``{"python": ..., "sockets": {target
#: module: socket}}``, the pytest worker's family servers its ``fork_server=True`` phases fork from (:func:`fork_from`).
#: Taken out of the kernel's environment before the kernel runs: no phase inherits it.
WORKER_SERVERS = "PLUGPULL_TEST_WORKER_SERVERS"


def serve(path: str) -> None:
    """The template: import, then fork one kernel per connection; ends when its stdin closes."""
    import gc
    import importlib

    os.environ.setdefault("MPLBACKEND", INLINE)
    for module in PRELOAD:
        importlib.import_module(module)
    # A collection in a forked kernel would otherwise write to every imported object's header and copy its
    # pages (https://docs.python.org/3/library/gc.html#gc.freeze).
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    print("ready", flush=True)
    kernels: dict[int, socket.socket] = {}  # kernel pid -> its launcher's connection
    orphans: set[int] = set()  # kernels SIGKILLed because their launcher died, until reaped
    while True:
        launchers = [conn for pid, conn in kernels.items() if pid not in orphans]
        ready, _, _ = select.select([listener, sys.stdin, wake_r, *launchers], [], [])
        if sys.stdin in ready and not sys.stdin.buffer.read1(1):
            break
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        if listener in ready:
            conn, _ = listener.accept()
            kernels[fork_kernel(conn)] = conn
        for pid, conn in list(kernels.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
                try:
                    conn.sendall(json.dumps({"returncode": code}).encode() + b"\n")
                except OSError:
                    pass
                conn.close()
                del kernels[pid]
                orphans.discard(pid)
            elif conn in ready and not conn.recv(1):  # the launcher died (SIGKILLed): so does its kernel
                kill_group(pid)
                orphans.add(pid)
    for pid in kernels:
        kill_group(pid)
        os.waitpid(pid, 0)


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def fork_kernel(conn: socket.socket) -> int:
    msg, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
    while not msg.endswith(b"\n"):
        more = conn.recv(1 << 20)
        if not more:
            break
        msg += more
    request = json.loads(msg)
    led_r, led_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(led_r)
        run_kernel(request, fds, led_w)
    os.close(led_w)
    os.read(led_r, 1)  # the kernel leads its own group before its pid is given out (a signal must find it)
    os.close(led_r)
    for fd in fds:
        os.close(fd)
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    return pid


def run_kernel(request: dict, fds: list[int], led: int) -> None:
    """In the forked child: become the kernel jupyter_client asked for, then exit with its code."""
    import runpy

    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setsid()
        os.write(led, b"1")
        os.close(led)
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # nothing of the template (its socket, other launchers')
        os.environ.clear()
        os.environ.update(request["env"])
        servers = os.environ.pop(WORKER_SERVERS, None)
        if servers is not None:
            fork_from(**json.loads(servers))
        os.environ.setdefault("MPLBACKEND", INLINE)
        os.chdir(request["cwd"])
        tempfile.tempdir = None  # TMPDIR is the run's scratch folder, read afresh
        sys.path.insert(0, request["cwd"])  # as `python -m` puts the working directory first
        sys.argv = ["ipykernel_launcher", *request["argv"]]
        try:
            runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            import traceback

            traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def fork_from(python: str, sockets: dict[str, str]) -> None:
    """In a kernel: ``ForkServers()`` (what run_lines starts for ``fork_server=True``) forks each phase of
    ``python -m MODULE`` from the pytest worker's server at ``sockets[MODULE]`` instead of a server of its own, which
    would import the framework again (docs/DECISIONS.md, "The test suite": the smokes fork from their worker's
    servers).

    The phase is forked, SIGKILLed and reaped as from a server of the kernel's (plugpull.forkserver's protocol: a
    socket is all a client needs); its parent is the worker's server, so an orphan it leaves reaches the worker, not
    the kernel: the smoke looks for one there. Another command starts cold, as ForkServers starts it; a module or
    Python the worker started no server for fails the notebook rather than import its framework a second time.
    """
    from plugpull import forkserver, process, reaper

    module_of = forkserver.ForkServers.module_of

    class Connected(forkserver.ForkServer):
        """The worker's server: a socket to fork from; nothing to start or stop."""

        def __init__(self, path: str, module: str) -> None:
            self.path, self.module = path, module

        def close(self) -> None:
            pass

    class WorkerForks:
        def __init__(self) -> None:
            reaper.make_subreaper()  # as a server of its own makes it (ForkServer): cold phases' orphans come here

        def spawn(self, argv: list[str], *, env: dict[str, str], cwd: str | None):
            forkable = module_of(tuple(argv))
            if forkable is None:
                return process.spawn(argv, env=env, cwd=cwd)
            if forkable[0] != python or forkable[1] not in sockets:
                raise RuntimeError(
                    f"the pytest worker started no server that forks {forkable[1]} for {forkable[0]}: "
                    "the smoke names its targets' families (tests/report/test_notebooks.py)"
                )
            return Connected(sockets[forkable[1]], forkable[1]).spawn(forkable[2], env=env, cwd=cwd, shown=argv)

        def close(self) -> None:
            pass

    forkserver.ForkServers = WorkerForks


def launch(path: str, argv: list[str]) -> None:
    """The kernelspec's argv: ask the template for a kernel, stand for it, exit as it exits."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    request = {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
    reply = conn.makefile("rb")
    pid = json.loads(reply.readline())["pid"]

    def relay(signum: int, _frame: object) -> None:
        try:
            os.killpg(pid, signum)
        except ProcessLookupError:  # the kernel has just exited: its return code is on its way
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, relay)
    line = reply.readline()
    code = json.loads(line)["returncode"] if line else 1
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


class Template:
    """The template process and a kernelspec under ``prefix`` that launches kernels forked from it."""

    def __init__(self, prefix: Path, socket_dir: Path) -> None:
        self.path = str(socket_dir / "kernels")
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "serve", self.path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        if self.proc.stdout.readline().strip() != b"ready":
            self.close()
            raise RuntimeError("the kernel template did not start")
        self.jupyter_path = prefix / "share" / "jupyter"
        spec = self.jupyter_path / "kernels" / NAME
        spec.mkdir(parents=True)
        argv = [sys.executable, __file__, "launch", self.path, "-f", "{connection_file}"]
        kernel = {"argv": argv, "display_name": "plugpull (forked)", "language": "python", "interrupt_mode": "signal"}
        (spec / "kernel.json").write_text(json.dumps(kernel, indent=1))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


if __name__ == "__main__":
    sys.path.pop(0)  # this folder: neither the template nor a kernel imports from tests/report
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        launch(sys.argv[2], sys.argv[3:])
