"""Target processes: spawn each in its own process group, kill the group, reap, time out.

A target is started with ``start_new_session=True``, so it leads a new session and a new
process group whose id equals its pid. Everything it forks stays in that group unless it
calls ``setsid()``/``setpgid()`` itself, which is exactly the case the kill proof must
catch: such a process survives :func:`kill_group`.

Output is read from pipes by threads that keep only a bounded tail, so a target that
floods stdout can neither block on a full pipe nor fill memory or disk.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from plugpull import reaper
from plugpull.evidence import Outcome

#: How much of a target's stdout/stderr is kept for the report (the tail).
OUTPUT_TAIL_BYTES = 16 * 1024
#: Seconds a phase that exited by itself gives its helpers to finish before they count as left behind.
OUTLIVE_GRACE = 1.0


class Tail:
    """Reads a pipe to its end on a thread, keeping only the last ``limit`` bytes.

    A target that floods its output costs a bounded amount of memory and no disk, and
    can never block on a full pipe.
    """

    def __init__(self, fd: int, limit: int = OUTPUT_TAIL_BYTES) -> None:
        self._fd, self._limit = fd, limit
        self._buf = bytearray()
        self.total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="plugpull-tail", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            while not self._stop.is_set():
                ready, _, _ = select.select([self._fd], [], [], 0.1)
                if not ready:
                    continue
                chunk = os.read(self._fd, 65536)
                if not chunk:
                    return
                self.total += len(chunk)
                self._buf += chunk
                if len(self._buf) > 2 * self._limit:
                    del self._buf[: len(self._buf) - self._limit]
        except OSError:
            return
        finally:
            os.close(self._fd)

    def text(self, drain: float = 1.0) -> str:
        """The kept tail, decoded leniently (targets may print any bytes).

        Waits up to ``drain`` seconds for the pipe's end: a process outside the killed
        group could still hold the pipe open, and it must not block the harness.
        """
        self._thread.join(timeout=drain)
        self._stop.set()
        self._thread.join(timeout=1)
        data = bytes(self._buf[-self._limit :])
        text = data.decode("utf-8", errors="replace")
        if self.total > len(data):
            text = f"[... {self.total - len(data)} earlier bytes not kept ...]\n" + text
        return text


#: Process groups started and not yet reaped, so an interrupt can kill them all.
_live_groups: set[int] = set()
#: Phase markers (reaper.PHASE_ENV) of targets being started: a Ctrl-C that lands inside Popen, after the
#: child exec'd but before its pid reached _live_groups, would leave it running; its marker still finds it.
_starting: set[str] = set()
_live_lock = threading.Lock()


_stopping = threading.Event()

#: An AF_UNIX path holds at most 107 bytes on Linux (sun_path is 108 with its NUL; unix(7)).
SOCKET_PATH_MAX = 107


def socket_dir(prefix: str) -> Path:
    """A new private folder for a Unix socket named ``s``: under TMPDIR, or under /tmp when TMPDIR is too
    long for the socket's path (a deep TMPDIR, such as pytest's or a CI runner's, would fail at bind)."""
    for root in (None, "/tmp"):
        path = tempfile.mkdtemp(prefix=prefix, dir=root)  # mode 0700
        if len(os.fsencode(os.path.join(path, "s"))) <= SOCKET_PATH_MAX:
            return Path(path)
        os.rmdir(path)
    raise OSError(f"no temporary folder short enough for a Unix socket (at most {SOCKET_PATH_MAX} bytes)")


def stop_all() -> None:
    """Refuse new targets and SIGKILL every target process group still running (Ctrl-C).

    Scenarios running on other threads then see their targets die and their next spawn
    refused, and clean up their own channels and workdirs on the way out.
    """
    _stopping.set()
    with _live_lock:
        groups = list(_live_groups)
        starting = [f"{reaper.PHASE_ENV}={phase_id}".encode() for phase_id in _starting]
    for pgid in groups:
        kill_group(pgid)
    if starting:  # each leads its own group (start_new_session)
        for proc in reaper.snapshot().values():
            if proc.alive and proc.pid == proc.pgid and any(reaper.environ_has(proc.pid, m) for m in starting):
                kill_group(proc.pgid)
    # And what left those groups (setsid helpers, double-forked daemons): Ctrl-C leaves nothing.
    reaper.stop_all()


def begin_run() -> None:
    """Accept new targets again: a run starts after an interrupted one in the same process.

    stop_all refuses spawns for the run it stopped; an in-process caller (plugpull.testing.run, a notebook,
    cli.main called twice) that caught the KeyboardInterrupt and starts another run must be able to.
    """
    _stopping.clear()


@dataclass
class Running:
    """A target process leading its own process group (pgid == pid)."""

    popen: subprocess.Popen
    outcome: Outcome
    out: Tail
    err: Tail
    tracker: reaper.Tracker | None = None  # every process of the phase, wherever it went
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def pgid(self) -> int:
        return self.popen.pid

    def poll(self) -> int | None:
        return self.popen.poll()

    def _wait(self, timeout: float | None) -> bool:
        """Reap the leader within ``timeout`` seconds (None: no limit); False if it is still running."""
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def finish(self, grace: float = 0.0) -> Outcome:
        """Collect the exit status and the output tails once the leader is reaped.

        Processes of the phase still alive (after ``grace`` seconds for a phase that exited by
        itself; none after a kill) are the evidence ``outlived``, and are killed and reaped.
        """
        with _live_lock:
            _live_groups.discard(self.pgid)
        if self.tracker is not None:
            self.outcome.outlived = self.tracker.settle(grace)
        reaper.disown(self.pid)
        self.outcome.returncode = self.poll()
        self.outcome.seconds = time.monotonic() - self.started
        self.outcome.stdout = self.out.text()
        self.outcome.stderr = self.err.text()
        return self.outcome

    def wait_reaped(self) -> None:
        """Block until the leader has been reaped (after a kill)."""
        self._wait(None)

    def kill(self) -> Outcome:
        """SIGKILL the group, reap the leader, collect what it printed."""
        kill_group(self.pgid)
        self._wait(None)
        return self.finish()

    def wait(self, timeout: float) -> Outcome:
        """Wait for the leader; past ``timeout`` SIGKILL the whole group and mark it timed out."""
        deadline = time.monotonic() + timeout
        # Note the phase's processes while it runs: one that leaves the tree before the leader
        # exits is still attributed to this phase by what was seen (reaper.Tracker).
        while not self._wait(max(0.0, min(reaper.SCAN_EVERY, deadline - time.monotonic()))):
            if self.tracker is not None:
                self.tracker.scan()
            if time.monotonic() >= deadline:
                self.outcome.timed_out = True
                if self.tracker is not None:
                    self.tracker.scan(force=True)
                kill_group(self.pgid)
                self._wait(None)
                break
        # Members the leader left behind (a forked child) are killed too: nothing of a
        # target outlives its phase. A phase that exited gets a moment for helpers that are
        # finishing on their own; anything still alive then is evidence (Outcome.outlived).
        kill_group(self.pgid)
        return self.finish(grace=0.0 if self.outcome.timed_out else OUTLIVE_GRACE)


@contextmanager
def reaping() -> Iterator[list[Running | Outcome]]:
    """A list to put started targets in; any still running on the way out is SIGKILLed.

    On an interrupt (or a harness bug) nothing of a target may outlive its scenario run.
    Enter it last, so it exits first: targets die before their socket and workdir go.
    """
    spawned: list[Running | Outcome] = []
    try:
        yield spawned
    finally:
        for running in spawned:
            if isinstance(running, Running) and running.poll() is None:
                running.kill()


def _sigint_bit_set(field: str) -> bool:
    """Whether this thread's /proc status ``field`` (SigIgn: the process's, SigBlk: this thread's) has SIGINT."""
    with open("/proc/thread-self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return bool(int(line.split(":", 1)[1], 16) & (1 << (signal.SIGINT - 1)))
    return False


def _sigint_as_at_a_terminal() -> None:
    # Runs in the forked child before exec (Popen's preexec_fn): an ignored disposition and the
    # signal mask survive exec (signal(7), execve(2)); a caught one is reset by exec anyway.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


def sigint_reset() -> Callable[[], None] | None:
    """A preexec_fn giving a target SIGINT as a terminal's foreground program has it, or None when it would anyway.

    plugpull started from a script's background job (``cmd &`` without job control: POSIX sh
    ignores SIGINT for it), from ``nohup``-style wrappers or a CI runner may have SIGINT ignored
    or blocked, and every target would inherit that: interrupt-mid-tool's SIGINT would then
    not reach the framework at all, and the scenario would judge the launcher, not the
    framework (docs/DECISIONS.md, "Harness core and processes"). Only then is a preexec_fn used: the
    subprocess docs call it unsafe with threads, so the usual spawn stays without one.
    """
    try:
        off = _sigint_bit_set("SigIgn") or _sigint_bit_set("SigBlk")
    except OSError:  # no /proc: ask Python (it sees what Python set)
        off = signal.getsignal(signal.SIGINT) is signal.SIG_IGN or signal.SIGINT in signal.pthread_sigmask(
            signal.SIG_BLOCK, []
        )
    return _sigint_as_at_a_terminal if off else None


def spawn(argv: list[str], *, env: dict[str, str], cwd: str | None) -> Running | Outcome:
    """Start ``argv`` in a new session and process group, stdin from /dev/null.

    Returns the :class:`Running` process, or a finished :class:`Outcome` carrying
    ``spawn_error`` when the command cannot be started at all (not found, not executable,
    a bad working directory).
    """
    outcome = Outcome(argv=list(argv))
    if _stopping.is_set():
        outcome.spawn_error = "plugpull is stopping (interrupted)"
        return outcome
    reaper.make_subreaper()
    # Every exec'd descendant inherits the phase's marker, so an orphan that reaches plugpull is
    # attributed to its phase even with -j (reaper.Tracker).
    phase_id = uuid.uuid4().hex
    env = {**(os.environ if env is None else env), reaper.PHASE_ENV: phase_id}
    with _live_lock:
        _starting.add(phase_id)
    try:
        with reaper.owning():
            popen = subprocess.Popen(
                argv,
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=sigint_reset(),
            )
            reaper.own(popen.pid)
        with _live_lock:
            _live_groups.add(popen.pid)
            _starting.discard(phase_id)
    except OSError as exc:
        with _live_lock:
            _starting.discard(phase_id)
        outcome.spawn_error = f"{exc.filename or argv[0]}: {exc.strerror or exc}"
        return outcome
    # Any other exception (KeyboardInterrupt) leaves the marker in _starting for stop_all.
    tracker = reaper.Tracker(popen.pid, phase_id=phase_id)
    # Hand the raw fds to the readers; the Popen objects must not read or close them.
    out, err = Tail(os.dup(popen.stdout.fileno())), Tail(os.dup(popen.stderr.fileno()))
    popen.stdout.close()
    popen.stderr.close()
    popen.stdout = popen.stderr = None
    return Running(popen=popen, outcome=outcome, out=out, err=err, tracker=tracker)


def kill_group(pgid: int) -> bool:
    """Send SIGKILL to every process in group ``pgid``. True if the group still existed."""
    try:
        os.killpg(pgid, signal.SIGKILL)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return False


def group_of(pid: int) -> int | None:
    """The process group of a live ``pid`` as the OS reports it; None once it is gone."""
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def live_members(pgid: int) -> list[int]:
    """Pids in group ``pgid`` that are not zombies, read from /proc (reaper.snapshot).

    A zombie cannot run or hold a socket; it only waits for its parent (or init) to
    reap it, so it does not count as debris.
    """
    try:
        # Signal 0 checks only that the group has a process (kill(2)): after a kill it usually has
        # none, and that answer costs one system call instead of reading every process of /proc.
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    except PermissionError:
        pass
    return [proc.pid for proc in reaper.snapshot().values() if proc.pgid == pgid and proc.alive]
