"""The harness side of a power-cut mount: start the daemon, cut the power, read what was lost.

::

    with PowerCutMount(backing, workdir) as mount:     # FuseUnavailable if FUSE cannot mount
        ...run the writers with workdir as their state directory, SIGKILL them...
        report = mount.cut(Variant.UNSYNCED)           # backing now holds what a disk would
    for line in report.lines(): ...                   # "checkpoints.sqlite-wal lost its last ..."
    with PowerCutMount(backing, workdir):              # resume on the rewritten store, same path
        ...

A cut ends the mount (the kernel's caches of the old mount must not serve the resumed run);
mount again over the same backing directory to resume at the same path. Nothing is left mounted
or running on any exit path: :meth:`PowerCutMount.stop` (also on ``__exit__``) asks the daemon
to unmount, then SIGTERMs and SIGKILLs it if it does not exit, then unmounts what is still
mounted (``fusermount3 -u``, lazily with ``-z`` when busy). A harness killed outright closes the
daemon's stdin, and the daemon unmounts; a daemon killed outright leaves the unmount to
fusermount3's ``auto_unmount`` watchdog.
"""

from __future__ import annotations

import ctypes.util
import importlib.util
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from plugpull.errors import FuseUnavailable, PowerCutError
from plugpull.powercut.durability import Activity, Loss, Variant

#: How long the daemon may take to mount, to cut or to stop (seconds): a loaded 2-core machine
#: starts a Python process and mounts in well under a second; this bounds a hung libfuse.
TIMEOUT = 30.0
#: Kept from the daemon's stderr for error messages.
STDERR_TAIL = 16 * 1024


@dataclass(frozen=True)
class CutReport:
    """What a power cut lost, from the model, and how much durability work the writers did."""

    variant: Variant
    losses: tuple[Loss, ...]
    activity: Activity
    #: How the mount went away ("unmounted", or "detached lazily (...)" when it was busy).
    unmount: str

    def lines(self) -> list[str]:
        if not self.losses:
            return [f"nothing was lost ({self.variant.value}): every write and every name was durable"]
        return [loss.text for loss in self.losses]

    def to_json(self) -> dict:
        return {
            "variant": self.variant.value,
            "losses": [{"path": loss.path, "kind": loss.kind, "text": loss.text} for loss in self.losses],
            "activity": self.activity.__dict__.copy(),
            "unmount": self.unmount,
        }

    @classmethod
    def from_json(cls, data: dict) -> CutReport:
        return cls(
            Variant(data["variant"]),
            tuple(Loss(**loss) for loss in data["losses"]),
            Activity(**data["activity"]),
            data["unmount"],
        )


def unavailable_reason() -> str | None:
    """Why FUSE cannot mount here, checked without mounting; None if nothing is missing.

    A mount can still fail for a reason only the kernel knows (a container without the
    capability to mount): :meth:`PowerCutMount.start` reports that one from libfuse's own words.
    """
    if not sys.platform.startswith("linux"):
        return f"power cuts need Linux FUSE; this is {sys.platform}"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse (the fuse kernel module is not loaded, or this container was given no access to it)"
    try:
        os.close(os.open("/dev/fuse", os.O_RDWR))
    except OSError as error:
        return f"/dev/fuse cannot be opened: {error.strerror}"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed (Debian: apt-get install fuse3)"
    if ctypes.util.find_library("fuse3") is None:
        return "libfuse3 is not installed (Debian: apt-get install fuse3)"
    if importlib.util.find_spec("mfusepy") is None:
        return "the Python binding mfusepy is not installed (pip install 'plugpull[power-loss]')"
    return None


def is_mounted(path: Path) -> bool:
    """Whether something is mounted at ``path``, from /proc/self/mountinfo.

    Not ``os.path.ismount``: on a FUSE mount whose daemon died, stat fails with ENOTCONN and
    ismount says False while the mount is still there.
    """
    target = os.path.realpath(path)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as mountinfo:
            for line in mountinfo:
                fields = line.split()
                if len(fields) > 4 and _unescape(fields[4]) == target:
                    return True
    except OSError:
        return False
    return False


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in paths as octal escapes."""
    for escaped, plain in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(escaped, plain)
    return field


def force_unmount(path: Path) -> str | None:
    """Unmount ``path`` if mounted: fusermount3 -u, then lazily; None if it was not mounted."""
    if not is_mounted(path):
        return None
    for argv in (["fusermount3", "-u", "-q"], ["fusermount3", "-u", "-z", "-q"], ["umount", "-l"]):
        if shutil.which(argv[0]) is None:
            continue
        subprocess.run([*argv, str(path)], capture_output=True)
        if not is_mounted(path):
            return " ".join(argv)
    return "still mounted"


class PowerCutMount:
    """A power-cut file system at ``mountpoint`` over ``backing``, served by its own daemon process.

    ``mountpoint`` must be an empty directory; ``backing`` a directory (its contents are the
    durable state the model starts from). Single use: :meth:`start` once, then :meth:`cut` or
    :meth:`stop`.
    """

    def __init__(self, backing: Path | str, mountpoint: Path | str, *, timeout: float = TIMEOUT) -> None:
        self.backing = Path(backing).resolve()
        self.mountpoint = Path(mountpoint).resolve()
        self.timeout = timeout
        self._process: subprocess.Popen | None = None
        self._events: queue.Queue[dict | None] = queue.Queue()
        self._stderr = bytearray()
        self._threads: list[threading.Thread] = []
        #: How the last stop ended the mount, for the evidence ("unmounted", "fusermount3 -u -z"...).
        self.unmount_note: str | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def __enter__(self) -> PowerCutMount:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> PowerCutMount:
        if self._process is not None:
            raise PowerCutError("a PowerCutMount is started once; make a new one to mount again")
        reason = unavailable_reason()
        if reason:
            raise FuseUnavailable(reason)
        if not self.backing.is_dir():
            raise ValueError(f"backing directory {self.backing} is not a directory")
        if not self.mountpoint.is_dir() or any(self.mountpoint.iterdir()):
            raise ValueError(f"mountpoint {self.mountpoint} must be an existing empty directory")
        if is_mounted(self.mountpoint):
            raise ValueError(f"something is already mounted at {self.mountpoint}")
        if self.mountpoint == self.backing or self.backing in self.mountpoint.parents:
            raise ValueError("the mountpoint must not be inside the backing directory")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "plugpull.powercut.daemon", str(self.backing), str(self.mountpoint)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # Its own session: a Ctrl-C or a kill of the harness's process group does not take the
            # daemon down with the mount still up; the daemon sees its stdin close and unmounts.
            start_new_session=True,
            env={**os.environ, "FUSE_LIBRARY_NAME": "fuse3"},
        )
        self._threads = [
            threading.Thread(target=self._read_events, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        try:
            event = self._next_event("mount")
            if event.get("event") == "error" and event.get("stage") in ("libfuse", "mount"):
                raise FuseUnavailable(f"{event.get('reason')}{self._stderr_said()}")
            if event.get("event") == "error":
                raise PowerCutError(f"{event.get('reason')}{self._stderr_said()}")
            if event.get("event") != "ready" or not is_mounted(self.mountpoint):
                raise PowerCutError(f"the daemon did not mount {self.mountpoint}: {event}{self._stderr_said()}")
        except BaseException:
            self.stop()
            raise
        return self

    def cut(self, variant: Variant | str = Variant.UNSYNCED) -> CutReport:
        """Cut the power: the backing directory becomes what a disk would hold; the mount ends.

        The caller has already SIGKILLed every writer (and proven it). Raises PowerCutError when
        the model cannot be trusted: a write reached the backing directory without passing the
        mount, a model update failed, or the rewrite did not produce the model's tree.
        """
        variant = Variant(variant)
        process = self._require_running()
        try:
            self._send({"op": "cut", "variant": variant.value})
            event = self._next_event("cut")
        except BaseException:
            self.stop()
            raise
        self._finish(process)
        left = force_unmount(self.mountpoint)
        if left == "still mounted":
            raise PowerCutError(f"{self.mountpoint} is still mounted after the cut and every way to unmount it")
        if event.get("event") != "cut":
            raise PowerCutError(f"the daemon did not cut: {event}{self._stderr_said()}")
        self.unmount_note = event.get("unmount")
        problems = [
            *(f"the model did not match the backing directory: {line}" for line in event["drift"]),
            *(f"a model update failed: {line}" for line in event["model_errors"]),
            *(f"the rewrite left: {line}" for line in event["restore_errors"]),
        ]
        if problems:
            raise PowerCutError("; ".join(problems))
        return CutReport.from_json(event)

    def stop(self) -> None:
        """Unmount and end the daemon; the backing directory keeps what the writers left.

        Safe to call in any state, more than once.
        """
        process = self._process
        if process is None:
            return  # never started: whatever is mounted at the mountpoint is not ours
        if process.poll() is None:
            try:
                self._send({"op": "stop"})
                event = self._next_event("stop")
                self.unmount_note = event.get("unmount")
            except PowerCutError:
                pass
        self._finish(process)
        left = force_unmount(self.mountpoint)
        if left is not None:
            self.unmount_note = f"unmounted by the harness ({left})"
            if left == "still mounted":
                raise PowerCutError(f"{self.mountpoint} is still mounted after every way to unmount it")

    # -- internals -----------------------------------------------------------------------------

    def _require_running(self) -> subprocess.Popen:
        if self._process is None:
            raise PowerCutError("the mount was not started")
        if self._process.poll() is not None:
            raise PowerCutError(f"the daemon is gone (exit {self._process.returncode}){self._stderr_said()}")
        return self._process

    def _send(self, command: dict) -> None:
        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write((json.dumps(command) + "\n").encode())
            self._process.stdin.flush()
        except (BrokenPipeError, ValueError) as error:
            raise PowerCutError(f"the daemon is gone ({error}){self._stderr_said()}") from error

    def _next_event(self, waiting_for: str) -> dict:
        try:
            event = self._events.get(timeout=self.timeout)
        except queue.Empty:
            raise PowerCutError(
                f"the daemon did not answer {waiting_for} within {self.timeout:.0f} s{self._stderr_said()}"
            ) from None
        if event is None:
            self._events.put(None)  # later waits see the end too
            code = self._process.wait(5) if self._process else None
            raise PowerCutError(f"the daemon exited (code {code}) during {waiting_for}{self._stderr_said()}")
        return event

    def _finish(self, process: subprocess.Popen) -> None:
        """Wait for the daemon to exit; SIGTERM (libfuse unmounts on it), then SIGKILL its session."""
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                try:
                    os.killpg(process.pid, sig) if sig == signal.SIGKILL else process.send_signal(sig)
                except ProcessLookupError:
                    pass
            try:
                process.wait(self.timeout if sig is None else 5)
                break
            except subprocess.TimeoutExpired:
                continue
        if process.stdin:
            try:
                process.stdin.close()
            except OSError:
                pass
        for thread in self._threads:
            thread.join(5)

    def _read_events(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for raw in self._process.stdout:
            try:
                self._events.put(json.loads(raw))
            except ValueError:
                self._stderr.extend(b"(stdout) " + raw)
        self._events.put(None)

    def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        for raw in self._process.stderr:
            self._stderr.extend(raw)
            del self._stderr[:-STDERR_TAIL]

    def _stderr_said(self) -> str:
        lines = [line for line in self._stderr.decode(errors="replace").splitlines() if line.strip()]
        return f" (daemon stderr: {' | '.join(lines[-5:])})" if lines else ""


def wait_unmounted(path: Path, timeout: float) -> bool:
    """Poll until nothing is mounted at ``path``; whether that happened within ``timeout``."""
    deadline = time.monotonic() + timeout
    while is_mounted(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
