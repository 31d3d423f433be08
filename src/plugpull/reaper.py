"""Accounting for every process a target phase started, in any process group or session.

Killing a phase's process group misses what left the group: a helper started with ``setsid``,
a double-forked daemon, a background writer. Such a process can act after the "crash", and the
verdict would then describe a run that never crashed. Three things keep those processes visible
(docs/DECISIONS.md, "Harness core and processes"):

- **The harness is a child subreaper** (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux >= 3.4,
  https://man7.org/linux/man-pages/man2/prctl.2.html): an orphan of a run is reparented to
  plugpull rather than to init, so it stays in plugpull's process tree and plugpull reaps it.
- **A forked phase leader is a subreaper too** (forkserver.py sets it in the child before it
  runs the target): while the leader lives, every process of its phase, double-forked or not,
  hangs below it by PPid. A cold leader cannot be made one without code between fork and exec
  (``preexec_fn``, unsafe with the harness's threads), so its orphans go to the harness and are
  attributed by the environment marker below.
- **Attribution**: a :class:`Tracker` per phase notes, with each pid's start time (pids are
  reused), the leader's descendants by PPid chains while the phase runs and just before a kill.
  An orphan that reached the harness belongs to the phase when its session or process group is
  a process the tracker saw, when its environment carries the phase's marker
  (:data:`PHASE_ENV`, set for exec'd targets), or, for a forked phase, the marker of the fork
  server it came from (a forked child never execs, so /proc/PID/environ shows the server's).
  A look reads only the tree below the leader, below what was seen and below plugpull's adopted orphans
  (/proc/PID/task/TID/children, :meth:`Tracker.look`), not every process on the machine.

When the phase is over, :meth:`Tracker.settle` lists the phase's processes still alive (the
evidence), SIGKILLs them and reaps those that became plugpull's children.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: Set in an exec'd phase's environment, unique per phase: its descendants inherit it.
PHASE_ENV = "PLUGPULL_PHASE_ID"
#: Set in a fork server's environment: what /proc/PID/environ shows for a forked child's descendants.
SERVER_ENV = "PLUGPULL_FORK_SERVER"

PR_SET_CHILD_SUBREAPER = 36

#: How often a running phase's descendants are noted (seconds). A scan reads the phase's tree through
#: /proc's children files (every process's stat where the kernel has none): more often would cost CPU for
#: nothing, as every aimed kill and settle scans first anyway.
SCAN_EVERY = 0.25
POLL = 0.01

_subreaper: bool | None = None
_subreaper_lock = threading.Lock()


def make_subreaper() -> bool:
    """Make this process a child subreaper (once); False where the OS has no such thing.

    Off Linux there is neither ``PR_SET_CHILD_SUBREAPER`` nor /proc: orphans go to init, and
    the evidence says the run's processes could not be accounted for (checks turn that into ERROR).
    """
    global _subreaper
    with _subreaper_lock:
        if _subreaper is None:
            _subreaper = set_subreaper()
        return _subreaper


def set_subreaper() -> bool:
    """``prctl(PR_SET_CHILD_SUBREAPER, 1)`` for the calling process; False if it is unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        # The running program's own symbols include libc's prctl: no find_library (it runs
        # ldconfig), so a forked child can call this cheaply.
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def accountable() -> bool:
    """True when this process is a subreaper and can read other processes from /proc."""
    return bool(_subreaper) and os.path.isdir("/proc/self")


@dataclass(frozen=True)
class Proc:
    """One line of /proc/PID/stat: enough to follow parents, sessions and pid reuse."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    start: int  # clock ticks after boot: a reused pid has a different one

    @property
    def alive(self) -> bool:
        # A zombie cannot run or hold a socket; it only waits to be reaped.
        return self.state not in ("Z", "X")


def read_proc(pid: int) -> Proc | None:
    # os.open/os.read, not open(): a scan reads every process's stat, and the file object's
    # buffering doubled its cost here (~10 ms for 120 processes on a loaded 2-core machine).
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        try:
            stat = os.read(fd, 4096).decode(errors="replace")
        finally:
            os.close(fd)
    except OSError:
        return None
    # Fields after the parenthesised command name: state ppid pgrp session ... starttime (field 22).
    rest = stat.rsplit(")", 1)[-1].split()
    try:
        return Proc(pid, int(rest[1]), int(rest[2]), int(rest[3]), rest[0], int(rest[19]))
    except (IndexError, ValueError):
        return None


def snapshot() -> dict[int, Proc]:
    """Every process /proc shows, by pid."""
    procs = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return procs
    for entry in entries:
        if entry.isdigit():
            proc = read_proc(int(entry))
            if proc is not None:
                procs[proc.pid] = proc
    return procs


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid``, read from /proc/PID/task/TID/children of each of its threads.

    A child belongs to the thread that forked it, and an adopted orphan to a live thread of its
    subreaper (https://man7.org/linux/man-pages/man5/proc_pid_task_tid_children.5.html): every
    thread's list is read. [] once ``pid`` is gone. Callers check :func:`children_readable` first.
    """
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for tid in tids:
        try:
            fd = os.open(f"/proc/{pid}/task/{tid}/children", os.O_RDONLY)
        except OSError:
            continue  # the thread ended meanwhile
        try:
            # One read holds the whole list for any realistic number of children (a pid is ~8
            # bytes); the file is not atomic across reads, so it is read to its end, not once.
            data = b""
            while chunk := os.read(fd, 65536):
                data += chunk
        except OSError:
            continue
        finally:
            os.close(fd)
        found.extend(int(pid) for pid in data.split())
    return found


_children_readable: bool | None = None


def children_readable() -> bool:
    """Whether this kernel has /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN; Linux >= 3.5)."""
    global _children_readable
    if _children_readable is None:
        _children_readable = os.path.exists(f"/proc/self/task/{threading.get_native_id()}/children")
    return _children_readable


def tree(roots: set[int]) -> dict[int, Proc]:
    """``roots`` and every process below them, by pid: /proc/PID/stat of those processes only."""
    procs: dict[int, Proc] = {}
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid in procs:
            continue
        proc = read_proc(pid)
        if proc is None:
            continue
        procs[pid] = proc
        todo.extend(children(pid))
    return procs


def cmdline(pid: int, limit: int = 160, wait: float = 0.0) -> str:
    """The process's command line for a message, shortened; its name when it has none.

    A process inside execve has none for a moment: the kernel drops the old image before it writes the new
    one's arguments (begin_new_exec, then the ELF loader's create_elf_tables), and Popen has returned by then.
    With ``wait`` an empty command line is read again for up to that many seconds (a zombie's stays empty).
    """
    deadline = time.monotonic() + wait
    try:
        while True:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                # One line for a message: arguments joined by spaces, any whitespace in them collapsed.
                text = " ".join(fh.read().replace(b"\0", b" ").decode(errors="replace").split())
            if text or time.monotonic() >= deadline:
                break
            time.sleep(0.005)
        if not text:
            with open(f"/proc/{pid}/comm", "rb") as fh:
                text = "[" + fh.read().decode(errors="replace").strip() + "]"
    except OSError:
        return "?"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def environ_has(pid: int, entry: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return entry in fh.read().split(b"\0")
    except OSError:
        return False


#: Pids plugpull started itself (phase leaders, fork servers): Popen or the server reaps them.
_own: set[int] = set()
#: Trackers of phases not yet settled: an orphan one of them saw is not another phase's.
_trackers: set[Tracker] = set()
_lock = threading.RLock()


@contextmanager
def owning() -> Iterator[None]:
    """Hold off every tracker while plugpull starts a child and calls :func:`own` for it.

    The child is plugpull's from its first instant: no tracker may take it for a run's orphan
    (and reap it, stealing the exit status Popen waits for) before it is registered.
    """
    with _lock:
        yield


def own(pid: int) -> None:
    with _lock:
        _own.add(pid)


def disown(pid: int) -> None:
    with _lock:
        _own.discard(pid)


class Tracker:
    """The processes of one phase: its leader and everything below it, wherever they went."""

    def __init__(self, leader: int, *, phase_id: str | None = None, server: str | None = None) -> None:
        self.leader = leader
        self.markers = []
        if phase_id:
            self.markers.append(f"{PHASE_ENV}={phase_id}".encode())
        if server:
            self.markers.append(f"{SERVER_ENV}={server}".encode())
        self.seen: dict[int, int] = {}  # pid -> start time, every process of the phase ever noted
        # The first look is SCAN_EVERY after the start, not at once: a leader just started has
        # forked nothing yet, and every aimed kill and every settle scans first anyway.
        self._last = time.monotonic()
        self._me, self._session = os.getpid(), os.getsid(0)
        with _lock:
            _trackers.add(self)

    def scan(self, force: bool = False) -> dict[int, Proc]:
        """Note the phase's processes now (at most every SCAN_EVERY seconds unless ``force``)."""
        now = time.monotonic()
        if not force and now - self._last < SCAN_EVERY:
            return {}
        self._last = now
        return self.note(self.look())

    def look(self) -> dict[int, Proc]:
        """Every process :meth:`members` could count, read from /proc.

        Only the processes below the leader, below those seen before and below plugpull's children
        that it did not start itself (the orphans a subreaper adopts, wherever they went: setsid,
        double fork) are read: each one's stat and children (:func:`tree`). That is everything
        ``members`` reaches from its roots, without reading every process on the machine (2.8 ms a
        scan with 140 of them, several scans a kill-and-resume cycle). Without
        /proc/PID/task/TID/children, every process (:func:`snapshot`).
        """
        if not children_readable():
            return snapshot()
        with _lock:
            roots = {self.leader, *self.seen}
            own_pids = set(_own)
        roots.update(pid for pid in children(self._me) if pid not in own_pids)
        return tree(roots)

    def note(self, procs: dict[int, Proc]) -> dict[int, Proc]:
        """The phase's processes among ``procs``, remembered as seen."""
        mine = self.members(procs)
        with _lock:  # other phases' threads read ``seen`` (members: another phase's orphan is not theirs)
            for proc in mine.values():
                self.seen.setdefault(proc.pid, proc.start)
        return mine

    def members(self, procs: dict[int, Proc]) -> dict[int, Proc]:
        """The phase's processes among ``procs``: seen ones, orphans it owns, and their descendants."""
        with _lock:
            roots = {self.leader} | {
                pid for pid, start in self.seen.items() if pid in procs and procs[pid].start == start
            }
            own_pids = set(_own)
            others = {pid for t in _trackers if t is not self for pid in t.seen}
        for proc in procs.values():
            if proc.ppid != self._me or proc.pid in own_pids or proc.pid in others or proc.sid == self._session:
                continue  # not an orphan of a run: a child plugpull started, or another phase's
            related = proc.sid in self.seen or proc.pgid in self.seen
            if related or (proc.alive and any(environ_has(proc.pid, m) for m in self.markers)):
                roots.add(proc.pid)
        children: dict[int, list[int]] = {}
        for proc in procs.values():
            children.setdefault(proc.ppid, []).append(proc.pid)
        found, todo = {}, [pid for pid in roots if pid in procs]
        while todo:
            pid = todo.pop()
            if pid in found:
                continue
            found[pid] = procs[pid]
            todo.extend(children.get(pid, ()))
        found.pop(self.leader, None)  # the leader's own end is the Outcome's business
        return found

    def settle(self, grace: float = 0.0) -> list[dict]:
        """The phase's processes alive now (after up to ``grace`` seconds), then SIGKILLed and reaped.

        ``grace`` lets a helper that is finishing on its own finish (a phase that exited); after a
        kill it is 0: anything alive then outlived the kill.
        """
        deadline = time.monotonic() + grace
        while True:
            procs = self.look()
            mine = self.note(procs)
            live = {p.pid: p for p in mine.values() if p.alive}
            if not live or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        # A helper started just before the kill may still be inside execve: wait a little for its arguments.
        outlived = [{"pid": pid, "cmdline": cmdline(pid, wait=0.2)} for pid in sorted(live)]
        if live:
            self.kill_all()
            procs = self.look()
        else:
            reap([p for p in mine.values() if p.ppid == self._me])
        with _lock:
            _trackers.discard(self)
        reap_orphans(procs)
        return outlived

    def kill_all(self, limit: float = 5.0) -> None:
        """SIGKILL every live process of the phase until none is left, reaping plugpull's orphans."""
        deadline = time.monotonic() + limit
        while True:
            mine = self.scan(force=True)
            live = [p for p in mine.values() if p.alive]
            for proc in live:
                kill(proc)
            reap([p for p in mine.values() if p.ppid == self._me])
            if not live or time.monotonic() > deadline:
                return
            time.sleep(POLL)


def kill(proc: Proc) -> None:
    """SIGKILL ``proc`` through a pidfd when the OS has them, so a reused pid is never hit."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        fd = None
    try:
        again = read_proc(proc.pid)
        if again is None or again.start != proc.start:
            return  # gone, or the pid now names another process
        if fd is not None:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        else:
            os.kill(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    finally:
        if fd is not None:
            os.close(fd)


def reap(procs: list[Proc]) -> None:
    """waitpid each orphan of a run that plugpull adopted, so no zombie piles up.

    Only pids a tracker attributed to a run, never a pid plugpull started itself: reaping one
    Popen waits for would steal its exit status (``members`` leaves those out).
    """
    for proc in procs:
        try:
            os.waitpid(proc.pid, os.WNOHANG)
        except ChildProcessError:
            pass


def reap_orphans(procs: dict[int, Proc] | None = None) -> None:
    """Reap every dead orphan of a run that reached plugpull, attributed or not.

    A helper that exited on its own after its parent died (the middle of a double fork's child,
    a finished daemon) is a zombie with no environment left to attribute it by. It is dead, so it
    is no evidence; it only must not pile up. Never a child plugpull started (its Popen or fork
    server reaps it) and never one of plugpull's own session (started by other code in this
    process without a new session): a run's processes all descend from a leader that left it.
    """
    me, session = os.getpid(), os.getsid(0)
    for proc in (snapshot() if procs is None else procs).values():
        if proc.ppid != me or proc.alive or proc.sid == session:
            continue
        with _lock:  # spawn holds it from fork to own(): the pid cannot become plugpull's meanwhile
            again = read_proc(proc.pid)
            if proc.pid in _own or again is None or again.start != proc.start or again.alive:
                continue
            try:
                os.waitpid(proc.pid, os.WNOHANG)
            except ChildProcessError:
                pass


def stop_all() -> None:
    """SIGKILL the processes of every phase not yet settled (Ctrl-C)."""
    with _lock:
        trackers = list(_trackers)
    for tracker in trackers:
        tracker.kill_all(limit=1.0)
