"""Target processes: spawn each in its own process group, kill the group, reap, time out.

A target is started with ``start_new_session=True``, so it leads a new session and a new
process group whose id equals its pid. Everything it forks stays in that group unless it
calls ``setsid()``/``setpgid()`` itself, which is exactly the case the kill proof must
catch: such a process survives :func:`kill_group`.

Output goes to files in a harness-owned directory (never the target's workdir), so a
target that floods stdout cannot fill a pipe and block; only a bounded tail is read back.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

#: How much of a target's stdout/stderr is kept for the report (the tail).
OUTPUT_TAIL_BYTES = 16 * 1024


@dataclass
class Outcome:
    """How one target process ended."""

    argv: list[str]
    returncode: int | None = None
    timed_out: bool = False
    spawn_error: str | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0

    @property
    def killed_by_sigkill(self) -> bool:
        # Popen reports death by signal N as returncode -N (as trio's tests assert).
        return self.returncode == -signal.SIGKILL

    def describe_exit(self) -> str:
        if self.spawn_error:
            return f"could not start: {self.spawn_error}"
        if self.timed_out:
            return "timed out"
        if self.returncode is None:
            return "still running"
        if self.returncode < 0:
            try:
                return f"killed by {signal.Signals(-self.returncode).name}"
            except ValueError:
                return f"killed by signal {-self.returncode}"
        return f"exit code {self.returncode}"


def read_tail(path: Path, limit: int = OUTPUT_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of a file, decoded leniently (targets may print any bytes)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            data = fh.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if size > limit:
        text = f"[... {size - limit} earlier bytes not kept ...]\n" + text
    return text


@dataclass
class Running:
    """A target process leading its own process group (pgid == pid)."""

    popen: subprocess.Popen
    outcome: Outcome
    out_path: Path
    err_path: Path
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def pgid(self) -> int:
        return self.popen.pid

    def poll(self) -> int | None:
        return self.popen.poll()

    def finish(self) -> Outcome:
        """Collect the exit status and the output tails once the leader is reaped."""
        self.outcome.returncode = self.popen.returncode
        self.outcome.seconds = time.monotonic() - self.started
        self.outcome.stdout = read_tail(self.out_path)
        self.outcome.stderr = read_tail(self.err_path)
        return self.outcome

    def wait(self, timeout: float) -> Outcome:
        """Wait for the leader; past ``timeout`` SIGKILL the whole group and mark it timed out."""
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.outcome.timed_out = True
            kill_group(self.pgid)
            self.popen.wait()
        # Members the leader left behind (a forked child) are killed too: nothing of a
        # target outlives its phase.
        kill_group(self.pgid)
        return self.finish()


def spawn(argv: list[str], *, env: dict[str, str], cwd: str | None, log_dir: Path, name: str) -> Running | Outcome:
    """Start ``argv`` in a new session and process group.

    Returns the :class:`Running` process, or a finished :class:`Outcome` carrying
    ``spawn_error`` when the command cannot be started at all (not found, not executable).
    """
    out_path = log_dir / f"{name}.stdout"
    err_path = log_dir / f"{name}.stderr"
    outcome = Outcome(argv=list(argv))
    try:
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            popen = subprocess.Popen(
                argv,
                env=env,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
    except OSError as exc:
        outcome.spawn_error = f"{argv[0]}: {exc.strerror or exc}"
        return outcome
    return Running(popen=popen, outcome=outcome, out_path=out_path, err_path=err_path)


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
    """Pids in group ``pgid`` that are not zombies, read from /proc.

    A zombie cannot run or hold a socket; it only waits for its parent (or init) to
    reap it, so it does not count as debris.
    """
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode(errors="replace")
        except OSError:
            continue
        # Fields after the parenthesised command name: state ppid pgrp ...
        rest = stat.rsplit(")", 1)[-1].split()
        if len(rest) >= 3 and int(rest[2]) == pgid and rest[0] != "Z":
            members.append(int(entry))
    return members
