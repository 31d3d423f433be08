"""A pre-imported fork server for built-in Python targets: pay the framework import once.

Cold, every kill-and-resume cycle starts two fresh interpreters and each imports the
framework (docs/architecture.md: langgraph + sqlite saver 3.4 s, openai-agents 5.2 s per
import here). The fork server imports a target module once, then forks a fresh child for
every start and resume:

- the child calls ``setsid()`` first, so it leads a new session and process group
  (pgid == pid), exactly like a cold target started with ``start_new_session=True``;
- its stdin is /dev/null and its stdout/stderr are the write ends of pipes the harness
  created and passed over the socket (SCM_RIGHTS), so output is captured the same way;
- it runs the module as ``__main__`` with the given argv, environment and cwd, then
  ``os._exit`` with the exit code;
- the harness SIGKILLs the child's group itself (a real ``killpg``); the server, the
  child's parent, reaps it and reports the raw wait status, so "died of SIGKILL" is what
  the kernel said, not what the server assumed.

What differs from a cold start (docs/DECISIONS.md, "Harness core and processes"): module-level state
the target computed at import time is inherited from the server, not recomputed.

A target module may define ``plugpull_prefork(argv)`` (docs/DECISIONS.md, "Throughput"): the
server calls it once per argv, before it forks the first child for that argv, so what it builds (a
compiled graph, an app) is built once and inherited by every fork; the callable it returns runs in the
child, with the phase's argv, environment and cwd in place, instead of the module as ``__main__``.
It must open nothing of a phase (its workdir's files, the channel's socket): the child does that; and it
must start no thread (the server forks right after it, and a fork copies only the calling thread).

Protocol on the server's Unix socket (one connection per child): the harness sends one JSON
line ``{"module", "argv", "env", "cwd"}`` with two fds attached; the server answers
``{"pid": N}`` and, when the child has been reaped, ``{"returncode": R}`` (Popen's
convention: -N for death by signal N).
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import runpy
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Iterable, Sequence

from plugpull import reaper
from plugpull.client import recv_line
from plugpull.evidence import Outcome
from plugpull.process import (
    Running,
    Tail,
    _live_groups,
    _live_lock,
    _stopping,
    kill_group,
    sigint_reset,
    socket_dir,
    spawn,
)

#: madvise(2) advice: collapse a range into transparent huge pages now (Linux >= 6.1).
MADV_COLLAPSE = 25
HUGE_PAGE = 2 << 20


def huge_pages() -> int:
    """Back the server's anonymous memory by 2 MiB pages where the kernel can; the bytes collapsed.

    fork(2) copies a page-table entry per 4 KiB page of the server (its imports: ~60 MB here) and every
    child's exit frees as many; a 2 MiB page is one entry. A child that writes into one is given 4 KiB
    copies as before (the kernel splits the mapping first). ``MADV_COLLAPSE``
    (https://man7.org/linux/man-pages/man2/madvise.2.html) does it at once, whatever the
    transparent_hugepage setting short of "never"; where the kernel has no such advice nothing changes.
    """
    if not sys.platform.startswith("linux"):
        return 0
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps") as maps:
            regions = maps.read().splitlines()
    except (OSError, AttributeError):
        return 0
    collapsed = 0
    for line in regions:
        fields = line.split()
        # Private writable memory that is no file's: the heap and the anonymous mappings (obmalloc's arenas).
        if fields[1] != "rw-p" or (len(fields) > 5 and fields[5] != "[heap]"):
            continue
        low, high = (int(x, 16) for x in fields[0].split("-"))
        low, high = -(-low // HUGE_PAGE) * HUGE_PAGE, high // HUGE_PAGE * HUGE_PAGE
        if high > low and madvise(low, high - low, MADV_COLLAPSE) == 0:
            collapsed += high - low
    return collapsed


#: Forks after which a server collapses its memory into huge pages. A collapse costs ~0.3 CPU-s (the 36-62 MB
#: of a framework's import, nearly all of it system time) and saves ~2 ms a forked phase (docs/DECISIONS.md,
#: "Throughput"), so it pays for itself after ~150 phases, and most servers fork far fewer (a test module's:
#: ~10). Collapsing once that many have been forked is the ski-rental rule: whatever the number of phases
#: still to come, it never costs more than twice what the best choice, made knowing it, would.
COLLAPSE_AFTER = 150
_forked = 0


def collapse_when_paid() -> bool:
    """Count one fork about to happen; collapse the memory into huge pages at the ``COLLAPSE_AFTER``-th. Whether it did."""
    global _forked
    _forked += 1
    if _forked != COLLAPSE_AFTER:
        return False
    huge_pages()
    return True


def serve(path: str, preload: list[str]) -> None:
    """The server's main loop: single-threaded, so forking is safe."""
    for module in preload:
        try:
            importlib.import_module(module)
        except BaseException:  # the child will import it cold and report its own error
            traceback.print_exc()
    # Everything imported so far is moved out of the collector's sight: a collection in a forked
    # child would otherwise write to every object's header and copy nearly every page of the
    # import (https://docs.python.org/3/library/gc.html#gc.freeze, "copy-on-write").
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    # A child's exit wakes the loop (a byte on the wakeup pipe from SIGCHLD) instead of a poll every
    # few milliseconds for the whole run (https://docs.python.org/3/library/signal.html#signal.set_wakeup_fd).
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    print("ready", flush=True)
    children: dict[int, socket.socket] = {}
    while True:
        ready, _, _ = select.select([listener, sys.stdin, wake_r], [], [])
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        if sys.stdin in ready and not sys.stdin.buffer.read1(1):
            break  # the harness closed our stdin: it is done (or died)
        if listener in ready:
            conn, _ = listener.accept()
            pid = fork_child(conn)
            if pid is not None:
                children[pid] = conn
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                conn = children.pop(pid)
                try:
                    conn.sendall(json.dumps({"returncode": returncode(status)}).encode() + b"\n")
                except OSError:
                    pass
                conn.close()
    for pid in children:
        kill_group(pid)


#: The optional hook a target module defines to build what every phase shares before the fork.
PREFORK = "plugpull_prefork"
#: (module, argv) -> what the hook returned for it (None: run the module as __main__).
_prepared: dict[tuple[str, tuple[str, ...]], object] = {}


def prepare(module: str, argv: list[str]) -> object:
    """The hook's callable for ``argv``, built once in the server; None without a hook or when it failed."""
    key = (module, tuple(argv))
    if key not in _prepared:
        hook = getattr(sys.modules.get(module), PREFORK, None)
        run = None
        if callable(hook):
            try:
                run = hook(list(argv))
            except BaseException:  # the child runs the module as __main__ and reports its own error
                traceback.print_exc()
            gc.freeze()  # what it built joins the import, out of the collector's sight
            if _forked >= COLLAPSE_AFTER:  # collapsed already: what the hook built joins it
                huge_pages()
        _prepared[key] = run if callable(run) else None
    return _prepared[key]


def returncode(status: int) -> int:
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def fork_child(conn: socket.socket) -> int | None:
    msg, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 2)
    while not msg.endswith(b"\n"):
        more = conn.recv(1 << 20)
        if not more:
            break
        msg += more
    request = json.loads(msg)
    request["prepared"] = prepare(request["module"], request["argv"])
    collapse_when_paid()  # before the fork: the pages collapsed are not yet shared with this child
    # The pid is reported only once the child leads its own group: a kill sent between fork()
    # and setsid() would find no group with that id and miss the child.
    led_r, led_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(led_r)
        run_child(request, fds, conn, led_w)
    os.close(led_w)
    os.read(led_r, 1)
    os.close(led_r)
    for fd in fds:
        os.close(fd)
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    return pid


def run_child(request: dict, fds: list[int], conn: socket.socket, led: int) -> None:
    code = 1
    interrupted = False
    try:
        # The server's SIGCHLD wakeup is not the target's: its pipe is closed below, and a signal
        # written to a reused descriptor number would land in the target's own file.
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        # A subreaper keeps every process of the phase below the child while it lives, even a
        # double-forked daemon: the harness's tracker finds them by PPid (plugpull.reaper).
        reaper.set_subreaper()
        os.write(led, b"1")
        os.close(led)
        conn.close()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in (devnull, *fds):
            os.close(fd)
        # Nothing of the server (its listener, other children's connections) stays open in
        # the child: a lingering child must not hold another child's exit report open.
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        # Python's own handler, as a cold interpreter starts with: Ctrl-C is a KeyboardInterrupt the agent may
        # catch (cancel-mid-stream's sync consumer does); an uncaught one still ends the process by SIGINT.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])  # as process.sigint_reset
        # The phase's environment: only what differs from the server's is unset or set (each is a
        # putenv/unsetenv that writes into the inherited environ pages; clearing and setting all of them
        # copied ~170 more pages a phase).
        env = request["env"]
        for key in [k for k in os.environ if k not in env]:
            del os.environ[key]
        for key, value in env.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
        if request.get("cwd"):
            os.chdir(request["cwd"])
        sys.argv = [request["module"], *request["argv"]]
        try:
            if request["prepared"] is not None:
                result = request["prepared"]()
                code = result if isinstance(result, int) else 0
            else:
                # The preloaded copy stays out of the way: the child runs the module's code afresh as
                # __main__ (its imports are the cached, pre-imported ones), as `python -m` would.
                sys.modules.pop(request["module"], None)
                runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
                code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, (int, type(None))):
                print(exc.code, file=sys.stderr)
        except KeyboardInterrupt:
            traceback.print_exc()
            interrupted = True
        except BaseException:
            traceback.print_exc()
            code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            if interrupted:
                # An uncaught KeyboardInterrupt ends a cold interpreter by SIGINT, so its parent sees the signal
                # (Python 3.8+, https://github.com/python/cpython/issues/41078, "What's New In Python 3.8"): the
                # same here, not exit code 1; 130 (128 + SIGINT) if the signal did not end it.
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGINT)
                code = 128 + signal.SIGINT
            os._exit(code)


class ForkedRunning(Running):
    """A target forked by the server: the same interface as a cold :class:`Running`."""

    def __init__(
        self, pid: int, conn: socket.socket, outcome: Outcome, out: Tail, err: Tail, tracker: reaper.Tracker
    ) -> None:
        self._pid, self._conn, self._returncode = pid, conn, None
        self.outcome, self.out, self.err, self.tracker = outcome, out, err, tracker
        self.started = time.monotonic()

    @property
    def pid(self) -> int:
        return self._pid

    @property
    def pgid(self) -> int:
        return self._pid

    def poll(self) -> int | None:
        if self._returncode is None and select.select([self._conn], [], [], 0)[0]:
            self._read_exit()
        return self._returncode

    def _read_exit(self) -> None:
        line = recv_line(self._conn)
        if line is None:
            raise RuntimeError("the fork server went away before reporting the child's exit")
        self._returncode = json.loads(line)["returncode"]
        self._conn.close()

    def _wait(self, timeout: float | None) -> bool:
        # The server, the child's parent, reaps it and reports the status on this connection.
        if self._returncode is None:
            if not select.select([self._conn], [], [], timeout)[0]:
                return False
            self._read_exit()
        return True


def _recv_one_line(conn: socket.socket) -> bytes | None:
    """Read exactly one line, byte by byte, leaving what follows on the socket.

    The server sends the pid line and, when the child exits, the returncode line on the same
    connection; a child that exits at once makes both arrive together, and a chunked read
    (client.recv_line) would swallow the second into the first ("Extra data"), leaving
    ForkedRunning nothing to select on. The pid line is a few bytes, once per spawn.
    """
    buf = b""
    while not buf.endswith(b"\n"):
        byte = conn.recv(1)
        if not byte:
            return None
        buf += byte
    return buf


class ForkServer:
    """One server process per (python, module); start it with a context manager.

    ``also``: further target modules it imports at start, beside ``module``, and forks as well (ForkServers'
    ``together``)."""

    def __init__(self, python: str, module: str, env: dict[str, str] | None = None, also: Sequence[str] = ()) -> None:
        self.module = module
        self._dir = socket_dir("plugpull-fork-")
        self.path = str(self._dir / "s")
        reaper.make_subreaper()
        # A forked child never execs: /proc/PID/environ of it and of what it forks shows this
        # environment, so it names the server (not the first run's phase) for the reaper.
        env = {**(os.environ if env is None else env), reaper.SERVER_ENV: self.path}
        env.pop(reaper.PHASE_ENV, None)
        with reaper.owning():
            self._proc = subprocess.Popen(
                [python, "-m", "plugpull.forkserver", self.path, module, *also],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # a Ctrl-C at the terminal is the harness's to handle
                preexec_fn=sigint_reset(),  # but a SIGINT sent to a target must reach it
            )
            reaper.own(self._proc.pid)
        line = self._proc.stdout.readline()
        if line.strip() != b"ready":
            self.close()
            raise RuntimeError(f"the fork server for {module} did not start")

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc.stdout.close()
        reaper.disown(self._proc.pid)
        shutil.rmtree(self._dir, ignore_errors=True)

    def spawn(
        self, argv: list[str], *, env: dict[str, str], cwd: str | None, shown: list[str], module: str | None = None
    ) -> ForkedRunning | Outcome:
        """Fork a child running ``module`` (``self.module`` or one of ``also``) with ``argv``; ``shown`` is the argv
        for the report."""
        outcome = Outcome(argv=list(shown))
        if _stopping.is_set():
            outcome.spawn_error = "plugpull is stopping (interrupted)"
            return outcome
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # What the child execs carries the phase's marker, as a cold target's descendants do.
        phase_id = uuid.uuid4().hex
        env = {**env, reaper.PHASE_ENV: phase_id}
        try:
            conn.connect(self.path)
            request = {"module": module or self.module, "argv": argv, "env": env, "cwd": cwd}
            socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [out_w, err_w])
        finally:
            os.close(out_w)
            os.close(err_w)
        line = _recv_one_line(conn)
        if line is None:
            raise RuntimeError("the fork server closed the connection before forking")
        pid = json.loads(line)["pid"]
        with _live_lock:
            _live_groups.add(pid)
        tracker = reaper.Tracker(pid, phase_id=phase_id, server=self.path)
        return ForkedRunning(pid, conn, outcome, Tail(out_r), Tail(err_r), tracker)


class ForkServers:
    """Fork servers started on first use, one per (python, module); thread-safe for -j.

    ``together``: groups of target modules that one server imports and forks, one server per (python, group)
    instead of one per module: target modules of one framework then share its import (the tests' family servers,
    tests/shared_forks.py; plugpull's ``--fork-server`` keeps one server a module). A phase forked from such a
    server runs with the group's other target modules imported, and their ``plugpull_prefork`` hooks run there for
    their own argv.
    """

    def __init__(self, together: Iterable[Sequence[str]] = ()) -> None:
        self._servers: dict[tuple[str, str], ForkServer] = {}
        self._lock = threading.Lock()
        self._groups = {module: tuple(group) for group in together for module in group}

    @staticmethod
    def module_of(argv: tuple[str, ...]) -> tuple[str, str, list[str]] | None:
        """(python, module, args) for ``python -m module args``; None for any other command."""
        if len(argv) >= 3 and argv[1] == "-m" and os.path.basename(argv[0]).startswith("python"):
            return argv[0], argv[2], list(argv[3:])
        return None

    def spawn(self, argv: list[str], *, env: dict[str, str], cwd: str | None) -> Running | Outcome:
        forkable = self.module_of(tuple(argv))
        if forkable is None:
            return spawn(argv, env=env, cwd=cwd)
        python, module, args = forkable
        return self.server(python, module, env).spawn(args, env=env, cwd=cwd, shown=argv, module=module)

    def server(self, python: str, module: str, env: dict[str, str]) -> ForkServer:
        """The server that forks ``module`` for ``python``, started now (with ``env``, :meth:`server_env`) if none is."""
        first, *also = self._groups.get(module, (module,))
        with self._lock:
            server = self._servers.get((python, first))
            if server is None:
                server = self._servers[(python, first)] = ForkServer(python, first, self.server_env(env), also)
        return server

    def server_env(self, env: dict[str, str]) -> dict[str, str]:
        """The environment a new server starts with: its first phase's (each phase still gets its own)."""
        return env

    def close(self) -> None:
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.close()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2:])
