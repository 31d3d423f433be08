"""The power-cut daemon: ``python -m plugpull.powercut.daemon BACKING MOUNTPOINT``.

Mounts :class:`~plugpull.powercut.passthrough.Passthrough` over BACKING at MOUNTPOINT and obeys
commands, one JSON object a line on stdin, answering with JSON lines on stdout:

- at start: ``{"event": "ready", "pid": ...}`` once mounted, or ``{"event": "error", "stage":
  "libfuse" | "load" | "mount", "reason": ...}`` and exit 3;
- ``{"op": "cut", "variant": "unsynced"}``: the power is cut. Every later operation on the mount
  fails with EIO; the model's current tree is checked against BACKING (``drift``); the mount is
  unmounted; BACKING is rewritten to what the model says survives; the answer is
  ``{"event": "cut", "variant", "losses", "activity", "drift", "model_errors", "unmount"}``
  and the daemon exits 0;
- ``{"op": "stop"}``: unmount, BACKING keeps what the writers left (as after a SIGKILL),
  answer ``{"event": "stopped", "unmount": ...}``, exit 0;
- end of stdin (the harness is gone, however it died): as ``stop``, without an answer.

Nothing stays mounted on any exit path: the mount is made with libfuse's ``auto_unmount``
(fusermount3 keeps a watchdog that unmounts when the daemon's /dev/fuse descriptor closes, even
after a SIGKILL); a normal exit unmounts with ``fusermount3 -u`` and falls back to a lazy
``-u -z`` when the mount is busy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import asdict
from pathlib import Path

#: How long the daemon waits for the FUSE loop to end after unmounting before it goes on anyway.
LOOP_END_WAIT = 10.0


class Channel:
    """JSON lines to the harness on a private copy of stdout; fd 1 then points at stderr, so
    nothing else (libfuse, a stray print) can corrupt the protocol."""

    def __init__(self) -> None:
        self._out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
        self._lock = threading.Lock()

    def send(self, message: dict) -> None:
        with self._lock:
            self._out.write(json.dumps(message) + "\n")
            self._out.flush()


def unmount(mountpoint: Path) -> str:
    """Unmount with fusermount3, lazily if busy; say which worked (or why neither did)."""
    normal = subprocess.run(["fusermount3", "-u", "-q", str(mountpoint)], capture_output=True, text=True)
    if normal.returncode == 0:
        return "unmounted"
    lazy = subprocess.run(["fusermount3", "-u", "-z", "-q", str(mountpoint)], capture_output=True, text=True)
    if lazy.returncode == 0:
        return f"detached lazily (fusermount3 -u: {normal.stderr.strip() or normal.returncode})"
    return f"not unmounted: fusermount3 -u: {normal.stderr.strip()}; -u -z: {lazy.stderr.strip()}"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m plugpull.powercut.daemon BACKING MOUNTPOINT", file=sys.stderr)
        return 2
    backing_dir, mountpoint = Path(args[0]).resolve(), Path(args[1]).resolve()
    channel = Channel()
    # Modes come from the caller (the kernel applied its umask): the backing files get them as asked.
    os.umask(0)
    # mfusepy looks for libfuse 2 first; this layer is written and tested against libfuse 3.
    os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")
    try:
        from plugpull.powercut import passthrough
    except OSError as error:  # mfusepy raises OSError when it cannot load libfuse
        channel.send({"event": "error", "stage": "libfuse", "reason": f"libfuse3 could not be loaded: {error}"})
        return 3

    from plugpull.powercut import backing

    try:
        disk = backing.load(backing_dir)
    except (OSError, ValueError) as error:
        channel.send({"event": "error", "stage": "load", "reason": f"cannot read {backing_dir}: {error}"})
        return 3
    mounted = threading.Event()

    def ready() -> None:
        mounted.set()
        channel.send({"event": "ready", "pid": os.getpid()})

    ops = passthrough.Passthrough(backing_dir, disk, on_ready=ready)
    loop_ended = threading.Event()
    busy = threading.Event()  # a command is being carried out: the main thread waits for it
    finished = threading.Event()

    def control() -> None:
        for line in sys.stdin:
            try:
                command = json.loads(line)
            except ValueError:
                continue
            busy.set()
            if command.get("op") == "cut":
                channel.send(cut(command.get("variant", "unsynced")))
                break
            if command.get("op") == "stop":
                channel.send({"event": "stopped", "unmount": unmount(mountpoint)})
                break
        else:  # end of stdin: the harness is gone
            busy.set()
            unmount(mountpoint)
        finished.set()
        if not loop_ended.wait(LOOP_END_WAIT):
            os._exit(0)  # a lazily detached mount still in use keeps the loop alive; nothing is left to serve

    def cut(variant: str) -> dict:
        ops.freeze()
        with ops.mutex:
            result = disk.cut(variant)
            drift = backing.differences(disk.current(), backing_dir)
        how = unmount(mountpoint)
        loop_ended.wait(LOOP_END_WAIT)
        backing.restore(result.image, backing_dir)
        left = backing.differences(result.image, backing_dir)
        return {
            "event": "cut",
            "variant": result.variant.value,
            "losses": [asdict(loss) for loss in result.losses],
            "activity": asdict(result.activity),
            "drift": drift,
            "model_errors": list(ops.model_errors),
            "restore_errors": left,
            "unmount": how,
        }

    threading.Thread(target=control, name="powercut-control", daemon=True).start()
    try:
        passthrough.FUSE(
            ops,
            str(mountpoint),
            foreground=True,
            nothreads=True,
            hard_remove=True,
            auto_unmount=True,
            # No path in it: a comma in a path would split the -o option list.
            fsname="plugpull-powercut",
        )
    except RuntimeError as error:  # fuse_main failed: libfuse printed why on stderr
        if not mounted.is_set():
            channel.send({"event": "error", "stage": "mount", "reason": f"fuse_main failed ({error})"})
            return 3
    finally:
        loop_ended.set()
    if busy.is_set():
        finished.wait()
    else:  # unmounted from outside (or SIGTERM/SIGINT/SIGHUP, which libfuse turns into an exit)
        channel.send({"event": "ended", "reason": "the mount was unmounted from outside the daemon"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
