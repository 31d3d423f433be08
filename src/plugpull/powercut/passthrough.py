"""The FUSE operations of a power-cut mount: pass every call through to the backing directory, feed the model.

Runs inside the daemon's process only (importing this module loads libfuse through mfusepy,
https://github.com/mxmlnkn/mfusepy). Every operation runs under one lock, and the model is fed
after the backing call succeeded, so the model's order is the backing directory's order.

What the kernel sends and how it reaches the model (Linux FUSE, libfuse 3 high-level API,
https://libfuse.github.io/doxygen/structfuse__operations.html):

- write(2) on the mount arrives as ``write`` at once: libfuse 3 does not ask for the kernel's
  writeback cache unless told to, so a SIGKILLed writer leaves nothing the daemon has not seen.
  The kernel cuts a write(2) that crosses a 4 KiB page boundary into one ``write`` per page
  (measured here: 4096 bytes at offset 5000 arrive as 3192 bytes at 5000 and 904 at 8192), so
  the torn variant's "last unsynced write" is the last such piece, as a page cache would write back.
- ``open`` with O_TRUNC is a truncate (libfuse asks for atomic O_TRUNC); ``truncate`` covers
  truncate(2), ftruncate(2) and open without atomic O_TRUNC.
- fsync(2) and fdatasync(2) of a file arrive as ``fsync`` (``datasync`` set for the latter);
  fsync of a directory as ``fsyncdir``. Both are passed through to the backing directory too,
  so a store on the mount pays what it pays on a disk.
- O_APPEND is stripped from the backing descriptor: the kernel already computed the offset of
  an appending write, and pwrite(2) on an O_APPEND descriptor would ignore it (pwrite(2), BUGS).
- ``hard_remove`` (set by the daemon): libfuse removes an unlinked file that is still open at
  once instead of renaming it to ``.fuse_hidden*``, which would show up in the model as a rename.
  Later calls on such a file carry no path, which is why the model is fed by inode.

After :meth:`Passthrough.freeze` (the power cut) every operation fails with EIO: nothing that
happens after the cut reaches the backing directory or the model.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from pathlib import Path

import mfusepy

from plugpull.powercut.durability import Disk

STAT_FIELDS = (
    "st_mode",
    "st_nlink",
    "st_uid",
    "st_gid",
    "st_size",
    "st_blocks",
    "st_blksize",
    "st_rdev",
    "st_atime",
    "st_mtime",
    "st_ctime",
)


class Passthrough(mfusepy.Operations):
    """mfusepy operations over ``backing`` that record every durability-relevant call in ``disk``."""

    use_ns = True  # times as nanoseconds (mfusepy warns about float seconds)

    def __init__(self, backing: Path, disk: Disk, on_ready: Callable[[], None] = lambda: None) -> None:
        self.root = str(backing)
        self.disk = disk
        # Not "lock": mfusepy would take an attribute of that name for the FUSE lock operation.
        self.mutex = threading.Lock()
        self.frozen = False
        #: backing file descriptor (the FUSE fh) -> model inode
        self.handles: dict[int, int] = {}
        #: Model updates that failed after the backing call succeeded: the model no longer matches.
        self.model_errors: list[str] = []
        self._on_ready = on_ready

    def freeze(self) -> None:
        """The power is cut: every later operation fails with EIO."""
        with self.mutex:
            self.frozen = True

    def _full(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def _enter(self) -> None:
        if self.frozen:
            raise mfusepy.FuseOSError(errno.EIO)

    def _record(self, what: str, update: Callable[[], object]) -> object:
        try:
            return update()
        except Exception as error:  # the backing call succeeded: keep the caller's result, note the drift
            self.model_errors.append(f"{what}: {error!r}")
            return None

    # -- lifecycle -------------------------------------------------------------------------

    def init(self, path: str) -> None:
        self._on_ready()

    # -- reading ---------------------------------------------------------------------------

    def getattr(self, path: str, fh: int | None = None) -> dict[str, int]:
        with self.mutex:
            self._enter()
            info = os.fstat(fh) if fh is not None else os.lstat(self._full(path))
            attrs = {name: getattr(info, name) for name in STAT_FIELDS if not name.endswith("time")}
            attrs.update(st_atime=info.st_atime_ns, st_mtime=info.st_mtime_ns, st_ctime=info.st_ctime_ns)
            return attrs

    def access(self, path: str, amode: int) -> int:
        with self.mutex:
            self._enter()
            if not os.access(self._full(path), amode):
                raise mfusepy.FuseOSError(errno.EACCES)
            return 0

    def readlink(self, path: str) -> str:
        with self.mutex:
            self._enter()
            return os.readlink(self._full(path))

    def readdir(self, path: str, fh: int) -> list[str]:
        with self.mutex:
            self._enter()
            return [".", "..", *os.listdir(self._full(path))]

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        with self.mutex:
            self._enter()
            return os.pread(fh, size, offset)

    def statfs(self, path: str) -> dict[str, int]:
        with self.mutex:
            self._enter()
            info = os.statvfs(self._full(path))
            names = ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree", "f_favail")
            return {name: getattr(info, name) for name in (*names, "f_flag", "f_namemax")}

    # -- files -----------------------------------------------------------------------------

    def create(self, path: str, mode: int, flags: int = os.O_WRONLY) -> int:
        with self.mutex:
            self._enter()
            existed = os.path.lexists(self._full(path))
            fd = os.open(self._full(path), (flags | os.O_CREAT) & ~os.O_APPEND, mode)
            if existed:
                inode = self._record(f"open {path}", lambda: self.disk.inode(path))
                if flags & os.O_TRUNC and inode is not None:
                    self._record(f"truncate {path}", lambda: self.disk.truncate(inode, 0))
            else:
                inode = self._record(f"create {path}", lambda: self.disk.create(path, mode))
            if inode is not None:
                self.handles[fd] = inode
            return fd

    def open(self, path: str, flags: int) -> int:
        with self.mutex:
            self._enter()
            fd = os.open(self._full(path), flags & ~os.O_APPEND)
            inode = self._record(f"open {path}", lambda: self.disk.inode(path))
            if inode is not None:
                self.handles[fd] = inode
                if flags & os.O_TRUNC:
                    self._record(f"truncate {path}", lambda: self.disk.truncate(inode, 0))
            return fd

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        with self.mutex:
            self._enter()
            written = os.pwrite(fh, data, offset)
            inode = self.handles.get(fh)
            self._record(f"write {path}", lambda: self.disk.write(inode, offset, data[:written]))
            return written

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        with self.mutex:
            self._enter()
            if fh is not None:
                os.ftruncate(fh, length)
                inode = self.handles.get(fh)
            else:
                os.truncate(self._full(path), length)
                inode = self._record(f"truncate {path}", lambda: self.disk.inode(path))
            self._record(f"truncate {path}", lambda: self.disk.truncate(inode, length))
            return 0

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        with self.mutex:
            self._enter()
            (os.fdatasync if datasync else os.fsync)(fh)
            inode = self.handles.get(fh)
            self._record(f"fsync {path}", lambda: self.disk.fsync(inode, data_only=bool(datasync)))
            return 0

    def flush(self, path: str, fh: int) -> int:
        with self.mutex:
            self._enter()
            return 0

    def release(self, path: str, fh: int) -> int:
        # Not refused after the cut: the kernel releases every open file when the mount goes.
        with self.mutex:
            os.close(fh)
            self.handles.pop(fh, None)
            return 0

    # -- directories -----------------------------------------------------------------------

    def opendir(self, path: str) -> int:
        with self.mutex:
            self._enter()
            fd = os.open(self._full(path), os.O_RDONLY | os.O_DIRECTORY)
            inode = self._record(f"opendir {path}", lambda: self.disk.inode(path))
            if inode is not None:
                self.handles[fd] = inode
            return fd

    def releasedir(self, path: str, fh: int) -> int:
        with self.mutex:
            os.close(fh)
            self.handles.pop(fh, None)
            return 0

    def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
        with self.mutex:
            self._enter()
            os.fsync(fh)
            inode = self.handles.get(fh)
            self._record(f"fsync directory {path}", lambda: self.disk.fsync(inode))
            return 0

    def mkdir(self, path: str, mode: int) -> int:
        with self.mutex:
            self._enter()
            os.mkdir(self._full(path), mode)
            self._record(f"mkdir {path}", lambda: self.disk.mkdir(path, mode))
            return 0

    def rmdir(self, path: str) -> int:
        with self.mutex:
            self._enter()
            os.rmdir(self._full(path))
            self._record(f"rmdir {path}", lambda: self.disk.rmdir(path))
            return 0

    def unlink(self, path: str) -> int:
        with self.mutex:
            self._enter()
            os.unlink(self._full(path))
            self._record(f"unlink {path}", lambda: self.disk.unlink(path))
            return 0

    def rename(self, old: str, new: str) -> int:
        with self.mutex:
            self._enter()
            os.rename(self._full(old), self._full(new))
            self._record(f"rename {old} {new}", lambda: self.disk.rename(old, new))
            return 0

    def link(self, target: str, source: str) -> int:
        with self.mutex:
            self._enter()
            os.link(self._full(source), self._full(target))
            self._record(f"link {source} {target}", lambda: self.disk.link(source, target))
            return 0

    def symlink(self, target: str, source: str) -> int:
        with self.mutex:
            self._enter()
            os.symlink(source, self._full(target))
            self._record(f"symlink {target}", lambda: self.disk.symlink(target, source))
            return 0

    # -- attributes (passed through; modes are kept, not durability-modelled) ---------------

    def chmod(self, path: str, mode: int) -> int:
        with self.mutex:
            self._enter()
            os.chmod(self._full(path), mode)
            self._record(f"chmod {path}", lambda: self.disk.chmod(path, mode))
            return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        with self.mutex:
            self._enter()
            os.lchown(self._full(path), uid, gid)
            return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        with self.mutex:
            self._enter()
            os.utime(self._full(path), ns=times, follow_symlinks=False)
            return 0


class FUSE(mfusepy.FUSE):
    """mfusepy's FUSE, refusing rename flags it would otherwise drop.

    mfusepy's ``rename_fuse_3`` ignores renameat2's flags; RENAME_NOREPLACE or RENAME_EXCHANGE
    would then silently become a plain rename. EINVAL makes callers (coreutils ``mv``, glibc)
    fall back to what they do on a file system without renameat2 flags.
    """

    def rename_fuse_3(self, old: bytes, new: bytes, flags: int) -> int:
        if flags:
            return -errno.EINVAL
        return super().rename_fuse_3(old, new, flags)
