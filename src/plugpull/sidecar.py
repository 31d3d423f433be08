"""A target's sidecar: a server the run talks to that is not part of the run, so a kill of the run spares it.

A durable-execution server (Restate) runs apart from the app it drives: when the app's process dies,
the server lives on and retries. A target that measures that crash names a sidecar phase
(``Target.sidecar``, e.g. "serve"): plugpull runs ``COMMAND serve`` in the point's workdir before the
first phase, in a session of its own, and waits for its first line on stdout (it is ready); the
phases find it through what it wrote to the workdir. It is not a process of any phase: the kill does
not reach it and the accounting of a phase's processes does not count it. After the last phase plugpull
sends its process group SIGTERM, then SIGKILL after a grace period, and reaps it: nothing is left behind.

A sidecar that exits or says nothing within the timeout is stopped, and the phases run without it:
the target's own start fails then and the line is ERROR, with the target's account on its stderr.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

from plugpull.reaper import PHASE_ENV

#: How long a stopped sidecar gets to shut down cleanly before SIGKILL (a Restate server takes about 1 s).
GRACE = 10.0


@contextmanager
def running(argv: list[str] | None, env: dict[str, str], cwd: str | None, timeout: float) -> Iterator[str | None]:
    """Run ``argv`` as the sidecar for the ``with`` block; yields its first stdout line (None without a sidecar
    or when it said nothing before exiting or before ``timeout``)."""
    if not argv:
        yield None
        return
    env = {k: v for k, v in env.items() if k != PHASE_ENV}
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        yield _first_line(proc, timeout)
    finally:
        stop(proc)


def _first_line(proc: subprocess.Popen, timeout: float) -> str | None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([proc.stdout], [], [], min(left, 0.5))
        if ready:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                return None
            line += chunk
        elif proc.poll() is not None:
            return None
    return line.decode(errors="replace").splitlines()[0]


def stop(proc: subprocess.Popen, grace: float | None = None) -> None:
    """SIGTERM to the sidecar's process group, then SIGKILL to whatever of the group is left after the leader
    exited or ``grace`` seconds (default: :data:`GRACE`, read at the call) passed; reap it."""
    grace = GRACE if grace is None else grace
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:  # the whole group is gone
            break
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
