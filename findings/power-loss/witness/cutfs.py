"""A small power-cut file system for the SQLite witnesses of this finding (mfusepy, libfuse 3; no plugpull).

    python cutfs.py BACKING STASH MOUNTPOINT

Mounts a passthrough of BACKING at MOUNTPOINT and keeps what a disk would hold, under the POSIX model that
crash-consistency tools test applications against (ALICE, OSDI '14; CrashMonkey, OSDI '18):

- a file's bytes are durable as of its last fsync/fdatasync; what was written after is not (a file never
  fsynced is empty after the cut);
- a create, mkdir, unlink or rename changes its directory's entries, durable only once that directory is
  fsynced: until then an unlinked or renamed-away name is kept as a hard link in STASH (same file system as
  BACKING), so the cut can bring it back; rmdir is taken as durable at once (none of the stores here uses it).

It prints ``ready`` once mounted, then reads one command on stdin: ``cut VARIANT`` unmounts and rewrites BACKING
to what a disk could show (``lazyfs``: unsynced bytes lost, names kept, as Jepsen's LazyFS; ``namespace``: names
not made durable lost, bytes kept; ``unsynced``: both), prints one JSON line ``{"lost": [...]}`` and exits;
``stop`` (or the end of stdin) unmounts and exits, BACKING as the writers left it. Everything in BACKING at the
mount is durable. The files are held in memory at each fsync: it is meant for a small store.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")
import mfusepy  # noqa: E402  (after FUSE_LIBRARY_NAME: mfusepy loads libfuse when imported)

STAT = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks", "st_blksize", "st_rdev")


def parent_of(path: str) -> str:
    return os.path.dirname(path.rstrip("/")) or "/"


class CutFS(mfusepy.Operations):
    use_ns = True

    def __init__(self, backing: str, stash: str) -> None:
        self.root, self.stash = backing, stash
        self.mutex = threading.Lock()
        self.frozen = False
        self.synced: dict[int, bytes] = {}  # inode -> its bytes at its last fsync
        self.dirty: set[int] = set()  # inodes written or truncated since their last fsync (or ever)
        self.created: dict[str, set[str]] = {}  # directory -> names made since its last fsync
        self.removed: dict[str, dict[str, str]] = {}  # directory -> name -> stash link of what it held
        self.counter = 0
        for left in os.listdir(stash):  # an earlier mount's links: what the backing holds now is durable
            os.unlink(os.path.join(stash, left))
        for here, _, files in os.walk(backing):  # what is there at the mount is durable
            for name in files:
                info = os.lstat(os.path.join(here, name))
                self.synced[info.st_ino] = Path(here, name).read_bytes()

    def _full(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def _enter(self) -> None:
        if self.frozen:
            raise mfusepy.FuseOSError(errno.EIO)

    def init(self, path: str) -> None:
        print("ready", flush=True)

    # -- namespace model -------------------------------------------------------------------------
    def _made(self, path: str) -> None:
        self.created.setdefault(parent_of(path), set()).add(os.path.basename(path))

    def _gone(self, path: str) -> None:
        """``path`` is about to lose its name: keep what it held (a hard link) unless the name was never durable."""
        where, name = parent_of(path), os.path.basename(path)
        if name in self.created.get(where, set()):
            self.created[where].discard(name)
            return
        if name in self.removed.get(where, {}) or os.path.isdir(self._full(path)):
            return
        self.counter += 1
        link = os.path.join(self.stash, str(self.counter))
        os.link(self._full(path), link)
        self.removed.setdefault(where, {})[name] = link

    # -- reading ---------------------------------------------------------------------------------
    def getattr(self, path, fh=None):
        with self.mutex:
            self._enter()
            info = os.fstat(fh) if fh is not None else os.lstat(self._full(path))
            attrs = {k: getattr(info, k) for k in STAT}
            attrs.update(st_atime=info.st_atime_ns, st_mtime=info.st_mtime_ns, st_ctime=info.st_ctime_ns)
            return attrs

    def access(self, path, amode):
        with self.mutex:
            self._enter()
            if not os.access(self._full(path), amode):
                raise mfusepy.FuseOSError(errno.EACCES)
            return 0

    def readdir(self, path, fh):
        with self.mutex:
            self._enter()
            return [".", "..", *os.listdir(self._full(path))]

    def read(self, path, size, offset, fh):
        with self.mutex:
            self._enter()
            return os.pread(fh, size, offset)

    def statfs(self, path):
        with self.mutex:
            info = os.statvfs(self._full(path))
            names = ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree", "f_favail")
            return {k: getattr(info, k) for k in (*names, "f_flag", "f_namemax")}

    # -- files -----------------------------------------------------------------------------------
    def create(self, path, mode, flags=os.O_WRONLY):
        with self.mutex:
            self._enter()
            existed = os.path.lexists(self._full(path))
            fd = os.open(self._full(path), (flags | os.O_CREAT) & ~os.O_APPEND, mode)
            if not existed:
                self._made(path)
            if not existed or flags & os.O_TRUNC:
                self.dirty.add(os.fstat(fd).st_ino)
            return fd

    def open(self, path, flags):
        with self.mutex:
            self._enter()
            fd = os.open(self._full(path), flags & ~os.O_APPEND)
            if flags & os.O_TRUNC:
                self.dirty.add(os.fstat(fd).st_ino)
            return fd

    def write(self, path, data, offset, fh):
        with self.mutex:
            self._enter()
            written = os.pwrite(fh, data, offset)
            self.dirty.add(os.fstat(fh).st_ino)
            return written

    def truncate(self, path, length, fh=None):
        with self.mutex:
            self._enter()
            if fh is not None:
                os.ftruncate(fh, length)
                self.dirty.add(os.fstat(fh).st_ino)
            else:
                os.truncate(self._full(path), length)
                self.dirty.add(os.lstat(self._full(path)).st_ino)
            return 0

    def fsync(self, path, datasync, fh):
        with self.mutex:
            self._enter()
            (os.fdatasync if datasync else os.fsync)(fh)
            info = os.fstat(fh)
            self.synced[info.st_ino] = os.pread(fh, info.st_size, 0)
            self.dirty.discard(info.st_ino)
            return 0

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        with self.mutex:
            os.close(fh)
            return 0

    def utimens(self, path, times=None):
        with self.mutex:
            self._enter()
            os.utime(self._full(path), ns=times, follow_symlinks=False)
            return 0

    def chmod(self, path, mode):
        with self.mutex:
            self._enter()
            os.chmod(self._full(path), mode)
            return 0

    # -- directories -----------------------------------------------------------------------------
    def opendir(self, path):
        with self.mutex:
            self._enter()
            return os.open(self._full(path), os.O_RDONLY | os.O_DIRECTORY)

    def releasedir(self, path, fh):
        with self.mutex:
            os.close(fh)
            return 0

    def fsyncdir(self, path, datasync, fh):
        with self.mutex:
            self._enter()
            os.fsync(fh)
            self.created.pop(path, None)
            for link in self.removed.pop(path, {}).values():
                os.unlink(link)
            return 0

    def mkdir(self, path, mode):
        with self.mutex:
            self._enter()
            os.mkdir(self._full(path), mode)
            self._made(path)
            return 0

    def rmdir(self, path):
        with self.mutex:
            self._enter()
            os.rmdir(self._full(path))
            self.created.get(parent_of(path), set()).discard(os.path.basename(path))
            return 0

    def unlink(self, path):
        with self.mutex:
            self._enter()
            self._gone(path)
            os.unlink(self._full(path))
            return 0

    def rename(self, old, new):
        with self.mutex:
            self._enter()
            if os.path.lexists(self._full(new)):
                self._gone(new)
            self._gone(old)
            os.rename(self._full(old), self._full(new))
            self._made(new)
            return 0

    # -- the cut ---------------------------------------------------------------------------------
    def cut(self, variant: str) -> list[str]:
        """Rewrite the backing directory to what a disk could hold; one sentence per loss."""
        lost: list[str] = []
        if variant in ("namespace", "unsynced"):
            for where in sorted(self.created, key=len, reverse=True):
                for name in sorted(self.created[where]):
                    path = self._full(os.path.join(where, name))
                    if os.path.lexists(path):
                        (shutil.rmtree if os.path.isdir(path) else os.remove)(path)
                        lost.append(
                            f"{os.path.join(where, name).lstrip('/')} is gone: created, its directory never fsynced after"
                        )
            for where, names in self.removed.items():
                for name, link in names.items():
                    path = self._full(os.path.join(where, name))
                    if os.path.isdir(os.path.dirname(path)) and not os.path.lexists(path):
                        os.link(link, path)
                        lost.append(
                            f"{os.path.join(where, name).lstrip('/')} is back: its unlink or rename was never made durable"
                        )
        if variant in ("lazyfs", "unsynced"):
            for here, _, files in os.walk(self.root):
                for name in files:
                    path = os.path.join(here, name)
                    inode = os.lstat(path).st_ino
                    if inode in self.dirty:
                        before, after = os.path.getsize(path), self.synced.get(inode, b"")
                        Path(path).write_bytes(after)
                        shown = os.path.relpath(path, self.root)
                        lost.append(
                            f"{shown} lost its unsynced writes: {before} bytes before the cut, {len(after)} after"
                        )
        return lost


def unmount(mountpoint: str) -> None:
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}  # "not mounted": auto_unmount was first
    if subprocess.run(["fusermount3", "-u", "-q", mountpoint], **quiet).returncode != 0:
        subprocess.run(["fusermount3", "-u", "-z", "-q", mountpoint], **quiet)


def main() -> int:
    backing, stash, mountpoint = (str(Path(p).resolve()) for p in sys.argv[1:4])
    fs = CutFS(backing, stash)
    asked: dict[str, str] = {}

    def control() -> None:
        line = sys.stdin.readline().split()
        if line[:1] == ["cut"] and len(line) == 2:
            asked["variant"] = line[1]
        with fs.mutex:
            fs.frozen = True  # the power is off: nothing more reaches the disk
        unmount(mountpoint)

    threading.Thread(target=control, daemon=True).start()
    os.umask(0)
    mfusepy.FUSE(fs, mountpoint, foreground=True, nothreads=True, hard_remove=True, auto_unmount=True)
    if "variant" in asked:
        print(json.dumps({"lost": fs.cut(asked["variant"])}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
