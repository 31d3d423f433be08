"""What a disk could hold after a power cut, from the operations a store made: a pure model.

A SIGKILL keeps the page cache: every write a killed process made is there for the next process.
A power cut keeps only what reached stable storage. :class:`Disk` is fed, in order, every
operation that changes a directory tree (create, mkdir, symlink, link, unlink, rmdir, rename,
write, truncate, fsync/fdatasync of a file, fsync of a directory) and answers what the tree holds
after a cut, under one of four :class:`Variant` s, with a sentence per loss.

**The persistence model.** It is the pessimistic one that POSIX allows and that crash-consistency
tools test applications against: ALICE (Pillai et al., "All File Systems Are Not Created Equal",
OSDI '14, https://www.usenix.org/conference/osdi14/technical-sessions/presentation/pillai) and
CrashMonkey (Mohan et al., "Finding Crash-Consistency Bugs with Bounded Black-Box Crash Testing",
OSDI '18, https://www.usenix.org/conference/osdi18/presentation/mohan):

- **File contents** are durable as of the file's last ``fsync`` or ``fdatasync`` (both persist
  data here; what fdatasync may skip, timestamps, is not modelled). Every ``write`` and
  ``truncate`` after it is *unsynced*.
- **A directory's entries** (which names it holds, and which file each name points to) are
  durable as of the directory's last ``fsync``. A create, mkdir, link, unlink, rmdir or rename
  changes the entries of the directories it touches and is *not durable* until each of those
  directories is fsynced afterwards. An fsync of a file persists neither its name nor its
  directory: ext4, XFS and btrfs often do persist a new file's name with it, but POSIX does not
  promise it and a store that relies on it is exactly what this model is meant to expose.
- Each directory is persisted on its own: a rename from ``a/x`` to ``b/x`` followed by an fsync
  of ``b`` alone leaves the file under both names after the cut. Journaling file systems commit a
  rename whole; this model does not pretend to know which journal the store sits on.
- Permissions, owners and timestamps are not modelled: a surviving file keeps its current mode.
- Everything present when the model starts (:meth:`Disk.add_file` and friends) is durable.

**Variants** (:class:`Variant`), from LazyFS (https://github.com/dsrhaslab/lazyfs), the FUSE file
system Jepsen uses to lose unsynced data, to the strict model above:

- ``unsynced`` (the default): every unsynced write and every namespace operation without a
  later fsync of its directory is lost. File contents are their last synced state; a file
  created without an fsync of its directory is absent; a rename without one is undone (the old
  name is back, the new name holds what it held before or is absent); an unlink without one is
  undone.
- ``lazyfs``: what LazyFS's ``lazyfs::clear-cache`` leaves: every unsynced write is lost, every
  namespace operation is kept. LazyFS caches file data only and passes create, rename, mkdir
  and unlink straight to its backing file system (``lfs_rename`` in lazyfs/src/lazyfs_ops_dir.cpp
  calls rename(2) on the backing path), so a file created and never fsynced is there, empty.
- ``torn``: ``unsynced``, and the last unsynced write of the whole log partly reached the disk:
  the sectors of that write before its last 512-byte boundary (an absolute file offset strictly
  inside the write) hold the new bytes, the rest of it is lost. A disk writes a 512-byte sector
  whole or not at all, so a write inside one sector is lost whole. When the write extended the
  file, the file ends at the tear. The other unsynced writes are lost, as in ``unsynced``.
  LazyFS's ``torn-op`` fault likewise splits one write into parts and persists only some of them.
- ``namespace``: only the namespace operations without a later fsync of their directory are
  lost; every write is kept (file contents are what the writers left, as after a SIGKILL).

Paths are relative to the model's root, ``/`` separated (a leading ``/`` is ignored). The model
keeps the synced bytes of every file and the bytes of every unsynced write in memory: it is
meant for an agent's work directory, not a data set.
"""

from __future__ import annotations

import enum
import stat
from dataclasses import dataclass, field

#: A disk writes a sector whole or not at all; the torn variant tears a write at this boundary.
SECTOR = 512

ROOT = 1


class Variant(str, enum.Enum):
    """Which unsynced state a power cut loses (module docstring: exactly what each keeps)."""

    UNSYNCED = "unsynced"
    LAZYFS = "lazyfs"
    TORN = "torn"
    NAMESPACE = "namespace"

    @property
    def loses_data(self) -> bool:
        return self is not Variant.NAMESPACE

    @property
    def loses_namespace(self) -> bool:
        return self is not Variant.LAZYFS


@dataclass(frozen=True)
class Node:
    """One path of a tree: a regular file's bytes, a directory, or a symlink's target (bytes).

    ``inode`` is the model's file identity: two paths with the same inode are hard links.
    """

    kind: str  # "file", "dir" or "symlink"
    mode: int
    inode: int
    content: bytes = b""


@dataclass(frozen=True)
class Loss:
    """One thing a reader would see differently after the cut than before it.

    ``kind``: ``data`` (unsynced writes or truncates lost), ``torn`` (the torn write),
    ``absent`` (a name that is gone), ``back`` (a name removed before the cut that is there again)
    or ``replaced`` (a name that points to the file it pointed to before a rename or link).
    """

    path: str
    kind: str
    text: str


@dataclass(frozen=True)
class Activity:
    """How many durability-relevant operations the model saw: tells "never fsynced" at a glance."""

    writes: int = 0
    bytes_written: int = 0
    truncates: int = 0
    fsyncs: int = 0
    fdatasyncs: int = 0
    directory_fsyncs: int = 0
    namespace_operations: int = 0

    def text(self) -> str:
        return (
            f"{self.writes} writes ({self.bytes_written} bytes), {self.truncates} truncates, "
            f"{self.fsyncs} fsyncs, {self.fdatasyncs} fdatasyncs, {self.directory_fsyncs} directory fsyncs, "
            f"{self.namespace_operations} namespace operations"
        )


@dataclass(frozen=True)
class Cut:
    """A power cut's outcome: the tree a disk holds (``image``) and what was lost, in words."""

    variant: Variant
    image: dict[str, Node]
    losses: tuple[Loss, ...]
    activity: Activity


@dataclass
class _Write:
    seq: int
    offset: int
    data: bytes


@dataclass
class _Truncate:
    seq: int
    length: int


@dataclass(frozen=True)
class _Change:
    """What last changed a name since its directory's last fsync.

    ``op``: created, mkdir, symlink, linked, unlinked, rmdir, renamed-to, renamed-from;
    ``other``: the other path of a link or rename; ``replaced``: the rename or link replaced a file.
    """

    op: str
    other: str | None = None
    replaced: bool = False


@dataclass
class _Inode:
    number: int
    kind: str
    mode: int
    synced: bytearray = field(default_factory=bytearray)  # file: contents at its last fsync
    unsynced: list[_Write | _Truncate] = field(default_factory=list)  # file: since then, in order
    target: bytes = b""  # symlink
    entries: dict[str, int] = field(default_factory=dict)  # directory: now
    synced_entries: dict[str, int] = field(default_factory=dict)  # directory: at its last fsync
    # directory: for each name whose entry differs from the synced one, the operation that last changed it
    changes: dict[str, _Change] = field(default_factory=dict)


def split(path: str) -> list[str]:
    """``"/a/b/"`` -> ``["a", "b"]``; the root is ``[]``. ``.`` and ``..`` are refused."""
    parts = [p for p in path.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise ValueError(f"path {path!r} has a . or .. component")
    return parts


def join(parts: list[str]) -> str:
    return "/".join(parts)


def applied(base: bytes | bytearray, operations: list[_Write | _Truncate]) -> bytearray:
    """``base`` with ``operations`` (writes and truncates) applied in order."""
    content = bytearray(base)
    for op in operations:
        if isinstance(op, _Write):
            if op.offset > len(content):
                content.extend(bytes(op.offset - len(content)))
            content[op.offset : op.offset + len(op.data)] = op.data
        elif op.length < len(content):
            del content[op.length :]
        else:
            content.extend(bytes(op.length - len(content)))
    return content


def torn_prefix(write: _Write) -> bytes:
    """The bytes of ``write`` before its last 512-byte boundary (an absolute offset inside it)."""
    end = write.offset + len(write.data)
    tear = ((end - 1) // SECTOR) * SECTOR
    if tear <= write.offset:
        return b""
    return write.data[: tear - write.offset]


class Disk:
    """The durability model of one directory tree (module docstring: what survives which cut).

    Namespace operations take paths; data operations (:meth:`write`, :meth:`truncate`,
    :meth:`fsync`) take a path or the inode number that :meth:`create`/:meth:`inode` returned,
    so a file that is open while unlinked can still be written and synced.
    """

    def __init__(self, root_mode: int = 0o755) -> None:
        self._inodes: dict[int, _Inode] = {ROOT: _Inode(ROOT, "dir", root_mode)}
        self._next = ROOT + 1
        self._seq = 0
        self._activity: dict[str, int] = dict.fromkeys(Activity.__dataclass_fields__, 0)

    # -- the tree as it was before the log: durable ------------------------------------------

    def add_directory(self, path: str, mode: int = 0o755) -> int:
        """A directory that was durable before the log started (parents must be there)."""
        return self._adopt(path, _Inode(0, "dir", mode))

    def add_file(self, path: str, content: bytes = b"", mode: int = 0o644) -> int:
        """A file that was durable, with ``content``, before the log started."""
        return self._adopt(path, _Inode(0, "file", mode, synced=bytearray(content)))

    def add_symlink(self, path: str, target: bytes | str, mode: int = 0o777) -> int:
        """A symlink that was durable before the log started."""
        return self._adopt(path, _Inode(0, "symlink", mode, target=_bytes(target)))

    def _adopt(self, path: str, inode: _Inode) -> int:
        parent, name = self._parent(path)
        if name in parent.entries:
            raise FileExistsError(path)
        inode.number = self._new_number()
        inode.mode = stat.S_IMODE(inode.mode)
        self._inodes[inode.number] = inode
        parent.entries[name] = inode.number
        parent.synced_entries[name] = inode.number
        return inode.number

    # -- namespace operations ----------------------------------------------------------------

    def create(self, path: str, mode: int = 0o644) -> int:
        """A new empty file at ``path``; its name is durable after an fsync of its directory."""
        return self._make(path, _Inode(0, "file", mode), _Change("created"))

    def mkdir(self, path: str, mode: int = 0o755) -> int:
        return self._make(path, _Inode(0, "dir", mode), _Change("mkdir"))

    def symlink(self, path: str, target: bytes | str) -> int:
        """A symlink; its target is written with it, its name is durable as for a create."""
        return self._make(path, _Inode(0, "symlink", 0o777, target=_bytes(target)), _Change("symlink"))

    def link(self, existing: str, path: str) -> None:
        """A hard link ``path`` to the file at ``existing``."""
        number = self.inode(existing)
        if self._inodes[number].kind == "dir":
            raise IsADirectoryError(existing)
        parent, name = self._parent(path)
        if name in parent.entries:
            raise FileExistsError(path)
        self._namespace_change(parent, name, number, _Change("linked", _norm(existing)))

    def unlink(self, path: str) -> None:
        parent, name = self._parent(path)
        number = self._entry(parent, name, path)
        if self._inodes[number].kind == "dir":
            raise IsADirectoryError(path)
        self._namespace_change(parent, name, None, _Change("unlinked"))

    def rmdir(self, path: str) -> None:
        parent, name = self._parent(path)
        number = self._entry(parent, name, path)
        inode = self._inodes[number]
        if inode.kind != "dir":
            raise NotADirectoryError(path)
        if inode.entries:
            raise OSError(f"directory not empty: {path}")
        self._namespace_change(parent, name, None, _Change("rmdir"))

    def rename(self, old: str, new: str) -> None:
        """rename(2): ``new`` points to ``old``'s file, replacing what it pointed to; ``old`` is gone."""
        source, old_name = self._parent(old)
        number = self._entry(source, old_name, old)
        target, new_name = self._parent(new)
        replaced = target.entries.get(new_name)
        if replaced == number:
            return  # rename(2) of a name onto a link to the same file does nothing
        if replaced is not None:
            moving, there = self._inodes[number], self._inodes[replaced]
            if there.kind == "dir" and (moving.kind != "dir" or there.entries):
                raise IsADirectoryError(new)
            if moving.kind == "dir" and there.kind != "dir":
                raise NotADirectoryError(new)
        if self._inodes[number].kind == "dir" and self._is_below(target, number):
            raise OSError(f"cannot move {old} into itself")
        self._namespace_change(source, old_name, None, _Change("renamed-to", _norm(new)))
        self._namespace_change(target, new_name, number, _Change("renamed-from", _norm(old), replaced is not None))

    def _make(self, path: str, inode: _Inode, how: _Change) -> int:
        parent, name = self._parent(path)
        if name in parent.entries:
            raise FileExistsError(path)
        inode.number = self._new_number()
        inode.mode = stat.S_IMODE(inode.mode)  # FUSE passes the file type bits with the mode
        self._inodes[inode.number] = inode
        self._namespace_change(parent, name, inode.number, how)
        return inode.number

    def _namespace_change(self, parent: _Inode, name: str, number: int | None, how: _Change) -> None:
        # A rename changes two entries and counts as one operation (its removal half is not counted).
        if how.op != "renamed-to":
            self._activity["namespace_operations"] += 1
        if number is None:
            parent.entries.pop(name, None)
        else:
            parent.entries[name] = number
        if parent.entries.get(name) == parent.synced_entries.get(name):
            parent.changes.pop(name, None)
        else:
            parent.changes[name] = how

    # -- data operations ---------------------------------------------------------------------

    def write(self, file: str | int, offset: int, data: bytes) -> None:
        """pwrite(2) of ``data`` at ``offset``: unsynced until the file's next fsync."""
        if offset < 0:
            raise ValueError("negative offset")
        inode = self._file(file)
        self._seq += 1
        inode.unsynced.append(_Write(self._seq, offset, bytes(data)))
        self._activity["writes"] += 1
        self._activity["bytes_written"] += len(data)

    def truncate(self, file: str | int, length: int) -> None:
        """truncate(2)/ftruncate(2) (and open with O_TRUNC): unsynced until the next fsync."""
        if length < 0:
            raise ValueError("negative length")
        inode = self._file(file)
        self._seq += 1
        inode.unsynced.append(_Truncate(self._seq, length))
        self._activity["truncates"] += 1

    def fsync(self, target: str | int, data_only: bool = False) -> None:
        """fsync(2) (``data_only``: fdatasync(2)) of a file or a directory.

        A file's unsynced writes and truncates become durable. A directory's entries (every
        create, link, unlink, rename in it so far) become durable; the files' data does not.
        """
        inode = self._inodes[target] if isinstance(target, int) else self._inodes[self.inode(target)]
        if inode.kind == "dir":
            inode.synced_entries = dict(inode.entries)
            inode.changes.clear()
            self._activity["directory_fsyncs"] += 1
            return
        if inode.kind == "file" and inode.unsynced:
            inode.synced = applied(inode.synced, inode.unsynced)
            inode.unsynced = []
        self._activity["fdatasyncs" if data_only else "fsyncs"] += 1

    def chmod(self, target: str | int, mode: int) -> None:
        """The mode a surviving file is given back (modes are not durability-modelled)."""
        inode = self._inodes[target] if isinstance(target, int) else self._inodes[self.inode(target)]
        inode.mode = stat.S_IMODE(mode)

    # -- reading the model -------------------------------------------------------------------

    def inode(self, path: str) -> int:
        """The inode number ``path`` names now (FileNotFoundError if none)."""
        number = ROOT
        for part in split(path):
            inode = self._inodes[number]
            if inode.kind != "dir":
                raise NotADirectoryError(path)
            if part not in inode.entries:
                raise FileNotFoundError(path)
            number = inode.entries[part]
        return number

    def exists(self, path: str) -> bool:
        try:
            self.inode(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    def current(self) -> dict[str, Node]:
        """The tree a reader sees now (what a SIGKILL would leave): every operation applied."""
        return self._tree(lambda d: d.entries, lambda i: bytes(applied(i.synced, i.unsynced)))

    def activity(self) -> Activity:
        return Activity(**self._activity)

    def cut(self, variant: Variant | str = Variant.UNSYNCED) -> Cut:
        """The tree a disk could hold after a power cut now, and each loss in words."""
        variant = Variant(variant)
        torn = self._last_unsynced_write() if variant is Variant.TORN else None

        def content(inode: _Inode) -> bytes:
            if not variant.loses_data:
                return bytes(applied(inode.synced, inode.unsynced))
            if torn is not None and torn[0] is inode:
                return bytes(applied(inode.synced, [_Write(0, torn[1].offset, torn_prefix(torn[1]))]))
            return bytes(inode.synced)

        entries = (lambda d: d.synced_entries) if variant.loses_namespace else (lambda d: d.entries)
        image = self._tree(entries, content)
        now = self.current()
        losses = [*self._namespace_losses(now, image), *self._data_losses(now, image)]
        if torn is not None:
            losses.extend(self._torn_loss(torn[0], torn[1], image))
        losses.sort(key=lambda loss: (loss.path, loss.kind))
        return Cut(variant, image, tuple(losses), self.activity())

    # -- internals ---------------------------------------------------------------------------

    def _tree(self, entries, content) -> dict[str, Node]:
        tree: dict[str, Node] = {}
        seen_dirs = {ROOT}

        def walk(number: int, prefix: list[str]) -> None:
            directory = self._inodes[number]
            for name in sorted(entries(directory)):
                child = self._inodes[entries(directory)[name]]
                path = join([*prefix, name])
                if child.kind == "dir":
                    # Persisting directories one by one can leave one directory under two names
                    # (module docstring); it is shown under the first name in path order.
                    if child.number in seen_dirs:
                        continue
                    seen_dirs.add(child.number)
                    tree[path] = Node("dir", child.mode, child.number)
                    walk(child.number, [*prefix, name])
                elif child.kind == "symlink":
                    tree[path] = Node("symlink", child.mode, child.number, child.target)
                else:
                    tree[path] = Node("file", child.mode, child.number, content(child))

        walk(ROOT, [])
        return tree

    def _last_unsynced_write(self) -> tuple[_Inode, _Write] | None:
        last: tuple[_Inode, _Write] | None = None
        for inode in self._inodes.values():
            for op in inode.unsynced:
                if isinstance(op, _Write) and (last is None or op.seq > last[1].seq):
                    last = (inode, op)
        return last

    def _why(self, path: str, synced: bool) -> _Change | None:
        """The operation that last changed ``path``'s entry since its directory's last fsync.

        ``synced``: find the directory through the entries at their last fsync (for a path that is
        back after the cut) rather than through today's.
        """
        *dirs, name = split(path)
        number = ROOT
        for part in dirs:
            directory = self._inodes[number]
            number = (directory.synced_entries if synced else directory.entries).get(part, 0)
            if number == 0 or self._inodes[number].kind != "dir":
                return None
        return self._inodes[number].changes.get(name)

    def _namespace_losses(self, now: dict[str, Node], image: dict[str, Node]) -> list[Loss]:
        losses = []
        absent_dirs: list[str] = []
        for path, node in now.items():
            if any(path.startswith(d + "/") for d in absent_dirs):
                continue
            if path not in image:
                if node.kind == "dir":
                    absent_dirs.append(path)
                under = sum(1 for p in now if p.startswith(path + "/"))
                losses.append(Loss(path, "absent", _absent_text(path, node, self._why(path, False), under)))
            elif image[path].inode != node.inode:
                text = _replaced_text(path, image[path], self._why(path, False))
                losses.append(Loss(path, "replaced", text))
        back_dirs: list[str] = []
        for path, node in image.items():
            if path in now or any(path.startswith(d + "/") for d in back_dirs):
                continue
            if node.kind == "dir":
                back_dirs.append(path)
            losses.append(Loss(path, "back", _back_text(path, self._why(path, True))))
        return losses

    def _data_losses(self, now: dict[str, Node], image: dict[str, Node]) -> list[Loss]:
        losses = []
        for path, after in image.items():
            before = now.get(path)
            if before is None or before.inode != after.inode or after.kind != "file":
                continue
            text = describe_data_loss(path, before.content, after.content)
            if text:
                losses.append(Loss(path, "data", text))
        return losses

    def _torn_loss(self, inode: _Inode, write: _Write, image: dict[str, Node]) -> list[Loss]:
        paths = [p for p, n in image.items() if n.inode == inode.number]
        if not paths:
            return []  # the file itself does not survive: its absence is already a loss
        kept = len(torn_prefix(write))
        lost = len(write.data) - kept
        if kept:
            how = f"torn at offset {write.offset + kept}: {kept} bytes of it reached the disk, {lost} did not"
        else:
            how = f"lost whole: it does not cross a {SECTOR}-byte sector boundary, and a disk writes a sector whole or not at all"
        return [
            Loss(
                paths[0],
                "torn",
                f"{paths[0]}: its last unsynced write ({len(write.data)} bytes at offset {write.offset}) was {how}",
            )
        ]

    def _parent(self, path: str) -> tuple[_Inode, str]:
        parts = split(path)
        if not parts:
            raise ValueError("the root has no parent")
        parent = self._inodes[self.inode(join(parts[:-1]))]
        if parent.kind != "dir":
            raise NotADirectoryError(path)
        return parent, parts[-1]

    def _entry(self, parent: _Inode, name: str, path: str) -> int:
        if name not in parent.entries:
            raise FileNotFoundError(path)
        return parent.entries[name]

    def _file(self, file: str | int) -> _Inode:
        inode = self._inodes[file] if isinstance(file, int) else self._inodes[self.inode(file)]
        if inode.kind != "file":
            raise IsADirectoryError(str(file))
        return inode

    def _is_below(self, directory: _Inode, ancestor: int) -> bool:
        """Whether ``directory`` is ``ancestor`` or inside it (now)."""
        if directory.number == ancestor:
            return True
        stack = [ancestor]
        while stack:
            inode = self._inodes[stack.pop()]
            for child in inode.entries.values():
                if child == directory.number:
                    return True
                if self._inodes[child].kind == "dir":
                    stack.append(child)
        return False

    def _new_number(self) -> int:
        number = self._next
        self._next += 1
        return number


def describe_data_loss(path: str, before: bytes, after: bytes) -> str | None:
    """One sentence for how a file's bytes after the cut differ from what the writers left."""
    if before == after:
        return None
    if not after:
        return f"{path} lost all its {len(before)} bytes (none was synced): it is empty"
    if before.startswith(after):
        return f"{path} lost its last {len(before) - len(after)} bytes (unsynced since offset {len(after)})"
    if after.startswith(before):
        return (
            f"{path} is {len(after)} bytes again: its unsynced truncate to {len(before)} bytes was lost "
            f"(bytes {len(before)}–{len(after) - 1} are back)"
        )
    ranges = _differing_ranges(before, after)
    changed = sum(end - start for start, end in ranges)
    where = "1 range" if len(ranges) == 1 else f"{len(ranges)} ranges"
    return (
        f"{path} is back to its synced {len(after)} bytes (it held {len(before)}): unsynced writes were lost, "
        f"{changed} bytes differ in {where}, the first at offset {ranges[0][0]}"
    )


def _differing_ranges(before: bytes, after: bytes) -> list[tuple[int, int]]:
    common = min(len(before), len(after))
    ranges: list[tuple[int, int]] = []
    start = None
    for i in range(common):
        if before[i] != after[i]:
            if start is None:
                start = i
        elif start is not None:
            ranges.append((start, i))
            start = None
    if start is not None:
        ranges.append((start, common))
    if not ranges:
        ranges.append((common, max(len(before), len(after))))
    return ranges


UNDURABLE = "no fsync of its directory followed"


def _absent_text(path: str, node: Node, why: _Change | None, under: int) -> str:
    what = _what(node)
    held = f" (it held {len(node.content)} bytes)" if node.kind == "file" else ""
    inside = f" with the {under} paths under it" if under else ""
    head = f"{path} is absent after the cut{inside}"
    if why is None:
        return f"{head}: its name was never made durable{held}"
    if why.op == "renamed-from":
        return f"{head}: the rename of {why.other} to it was not made durable ({UNDURABLE}){held}"
    if why.op == "linked":
        return f"{head}: the link to {why.other} was not made durable ({UNDURABLE})"
    return f"{head}: the {what} was created and {UNDURABLE}{held}"


def _back_text(path: str, why: _Change | None) -> str:
    head = f"{path} is back after the cut"
    if why is not None and why.op == "renamed-to":
        return f"{head}: its rename to {why.other} was not made durable ({UNDURABLE})"
    if why is not None and why.op == "rmdir":
        return f"{head}: its rmdir was not made durable ({UNDURABLE})"
    return f"{head}: its unlink was not made durable ({UNDURABLE})"


def _replaced_text(path: str, before: Node, why: _Change | None) -> str:
    head = f"{path} holds the {_what(before)} it held before"
    if why is not None and why.op == "renamed-from":
        return f"{head} {why.other} was renamed over it: the rename was not made durable ({UNDURABLE})"
    if why is not None and why.op == "linked":
        return f"{head} it was made a link to {why.other}: the link was not made durable ({UNDURABLE})"
    return f"{head} it was removed and made anew: neither was made durable ({UNDURABLE})"


def _what(node: Node) -> str:
    return {"dir": "directory", "symlink": "symlink"}.get(node.kind, "file")


def _norm(path: str) -> str:
    return join(split(path))


def _bytes(value: bytes | str) -> bytes:
    return value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
