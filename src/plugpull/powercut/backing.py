"""The backing directory of a power-cut mount: read into the model, compared with it, rewritten by a cut.

Stdlib only and no FUSE: the daemon calls these on the real directory under the mount.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from plugpull.powercut.durability import Disk, Node


def load(root: Path) -> Disk:
    """A model whose durable state is ``root`` as it is now (everything on it counts as durable).

    Hard links on the backing directory are read as separate files; sockets, FIFOs and devices
    are refused (a store does not keep its state in them, and the model has no kind for them).
    """
    disk = Disk(root_mode=stat.S_IMODE(os.lstat(root).st_mode))
    for directory, dirnames, filenames in os.walk(root):
        here = Path(directory)
        for name in sorted(dirnames + filenames):
            path = here / name
            relative = path.relative_to(root).as_posix()
            info = os.lstat(path)
            mode = stat.S_IMODE(info.st_mode)
            if stat.S_ISLNK(info.st_mode):
                disk.add_symlink(relative, os.fsencode(os.readlink(path)))
            elif stat.S_ISDIR(info.st_mode):
                disk.add_directory(relative, mode)
            elif stat.S_ISREG(info.st_mode):
                disk.add_file(relative, path.read_bytes(), mode)
            else:
                raise ValueError(f"{path} is neither a file, a directory nor a symlink")
        # os.walk lists symlinks to directories among dirnames but does not enter them
    return disk


def scan(root: Path) -> dict[str, Node]:
    """``root``'s tree as the model writes trees (inodes from st_ino, so hard links compare equal)."""
    tree: dict[str, Node] = {}
    for directory, dirnames, filenames in os.walk(root):
        here = Path(directory)
        for name in sorted(dirnames + filenames):
            path = here / name
            info = os.lstat(path)
            relative = path.relative_to(root).as_posix()
            mode = stat.S_IMODE(info.st_mode)
            if stat.S_ISLNK(info.st_mode):
                tree[relative] = Node("symlink", mode, info.st_ino, os.fsencode(os.readlink(path)))
            elif stat.S_ISDIR(info.st_mode):
                tree[relative] = Node("dir", mode, info.st_ino)
            else:
                content = path.read_bytes() if stat.S_ISREG(info.st_mode) else b""
                kind = "file" if stat.S_ISREG(info.st_mode) else "other"
                tree[relative] = Node(kind, mode, info.st_ino, content)
    return dict(sorted(tree.items()))


def differences(expected: dict[str, Node], root: Path) -> list[str]:
    """How ``root`` differs from ``expected`` (kind, bytes, symlink target, mode): one line each.

    The daemon checks the model's current tree against the backing directory before a cut: a
    difference means a write reached the backing directory without passing the mount (or the
    model is wrong), and a cut computed from such a model would describe a crash that did not
    happen.
    """
    actual = scan(root)
    lines = []
    for path in sorted(set(expected) | set(actual)):
        want, have = expected.get(path), actual.get(path)
        if want is None:
            lines.append(f"{path}: on the backing directory, not in the model")
        elif have is None:
            lines.append(f"{path}: in the model, not on the backing directory")
        elif want.kind != have.kind:
            lines.append(f"{path}: a {want.kind} in the model, a {have.kind} on the backing directory")
        elif want.content != have.content:
            lines.append(
                f"{path}: {len(want.content)} bytes in the model, {len(have.content)} different bytes "
                "on the backing directory"
            )
        elif want.kind != "symlink" and want.mode != have.mode:
            lines.append(f"{path}: mode {want.mode:o} in the model, {have.mode:o} on the backing directory")
    return lines


def restore(image: dict[str, Node], root: Path) -> None:
    """Make ``root`` hold exactly ``image`` (the tree a cut left): remove, create and rewrite.

    Paths of one inode become hard links of one file again. Files whose bytes already match are
    left alone. The backing directory is not fsynced: it is the simulation's storage, not a disk
    the simulation makes promises about.
    """
    for directory, dirnames, filenames in os.walk(root, topdown=False):
        here = Path(directory)
        for name in dirnames + filenames:
            path = here / name
            relative = path.relative_to(root).as_posix()
            want = image.get(relative)
            info = os.lstat(path)
            kind = (
                "symlink"
                if stat.S_ISLNK(info.st_mode)
                else "dir"
                if stat.S_ISDIR(info.st_mode)
                else "file"
                if stat.S_ISREG(info.st_mode)
                else "other"
            )
            if want is not None and want.kind == kind:
                continue
            if kind == "dir":
                os.rmdir(path)  # bottom-up: its entries are gone already
            else:
                os.unlink(path)
    written: dict[int, Path] = {}
    for relative, node in image.items():  # parents come before their entries
        path = root / relative
        if node.kind == "dir":
            if not path.is_dir():
                os.mkdir(path)
            os.chmod(path, node.mode)
        elif node.kind == "symlink":
            target = os.fsdecode(node.content)
            if os.path.lexists(path) and os.readlink(path) != target:
                os.unlink(path)
            if not os.path.lexists(path):
                os.symlink(target, path)
        elif node.inode in written:
            if os.path.lexists(path):
                os.unlink(path)
            os.link(written[node.inode], path)
        else:
            written[node.inode] = path
            if os.path.lexists(path) and os.stat(path).st_nlink > 1:
                os.unlink(path)  # a link of another file: rewriting it in place would change both
            if not os.path.lexists(path) or path.read_bytes() != node.content:
                with open(path, "wb") as file:
                    file.write(node.content)
            os.chmod(path, node.mode)
