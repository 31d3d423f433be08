"""The backing directory: read into the model as durable, compared with it, rewritten to a cut's tree."""

import os

from plugpull.powercut import backing
from plugpull.powercut.durability import Variant


def test_everything_on_the_backing_directory_is_read_as_durable(tmp_path):
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "db").write_bytes(b"rows")
    os.symlink("store/db", tmp_path / "current")
    disk = backing.load(tmp_path)
    disk.unlink("store/db")  # not durable: it comes back
    image = disk.cut(Variant.UNSYNCED).image
    assert image["store/db"].content == b"rows"
    assert image["current"].kind == "symlink"
    assert image["current"].content == b"store/db"


def test_the_model_read_from_a_directory_has_no_differences_with_it(tmp_path):
    (tmp_path / "a").write_bytes(b"x")
    os.chmod(tmp_path / "a", 0o600)
    (tmp_path / "d").mkdir()
    assert backing.differences(backing.load(tmp_path).current(), tmp_path) == []


def test_a_write_that_did_not_pass_the_model_is_named(tmp_path):
    (tmp_path / "a").write_bytes(b"x")
    disk = backing.load(tmp_path)
    (tmp_path / "a").write_bytes(b"changed behind the model's back")
    (tmp_path / "stray").write_bytes(b"")
    assert backing.differences(disk.current(), tmp_path) == [
        "a: 1 bytes in the model, 31 different bytes on the backing directory",
        "stray: on the backing directory, not in the model",
    ]


def test_restore_makes_the_directory_hold_exactly_the_cut_tree(tmp_path):
    (tmp_path / "kept").write_bytes(b"synced")
    (tmp_path / "dir").mkdir()
    disk = backing.load(tmp_path)
    # What the writers did: an unsynced write, a new file, a new directory, a removed directory.
    (tmp_path / "kept").write_bytes(b"synced and more")
    disk.write("kept", 6, b" and more")
    (tmp_path / "new").write_bytes(b"n")
    disk.create("new")
    disk.write("new", 0, b"n")
    (tmp_path / "newdir").mkdir()
    disk.mkdir("newdir")
    os.rmdir(tmp_path / "dir")
    disk.rmdir("dir")
    cut = disk.cut(Variant.UNSYNCED)
    backing.restore(cut.image, tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["dir", "kept"]
    assert (tmp_path / "kept").read_bytes() == b"synced"
    assert backing.differences(cut.image, tmp_path) == []


def test_restore_replaces_a_file_by_a_directory_and_keeps_hard_links_linked(tmp_path):
    (tmp_path / "x").mkdir()
    disk = backing.load(tmp_path)
    disk.rmdir("x")
    disk.create("x")
    disk.link("x", "y")
    disk.fsync("")
    disk.write("x", 0, b"shared")
    disk.fsync("x")
    image = disk.cut(Variant.UNSYNCED).image
    os.rmdir(tmp_path / "x")
    (tmp_path / "x").write_bytes(b"stale")
    backing.restore(image, tmp_path)
    assert (tmp_path / "y").read_bytes() == b"shared"
    assert os.stat(tmp_path / "x").st_ino == os.stat(tmp_path / "y").st_ino
