"""The durability model on hand-built operation logs: what each variant keeps, and the losses in words."""

import pytest

from plugpull.powercut.durability import Disk, Variant, describe_data_loss

ALL = list(Variant)
LOSING_DATA = [Variant.UNSYNCED, Variant.LAZYFS, Variant.TORN]


def contents(disk: Disk, variant: Variant) -> dict[str, bytes]:
    """Path -> bytes of every regular file after a cut (directories as None)."""
    return {path: (node.content if node.kind == "file" else None) for path, node in disk.cut(variant).image.items()}


def texts(disk: Disk, variant: Variant) -> list[str]:
    return [loss.text for loss in disk.cut(variant).losses]


def durable_file(content: bytes, path: str = "f") -> Disk:
    disk = Disk()
    disk.add_file(path, content)
    return disk


@pytest.mark.parametrize("variant", LOSING_DATA)
def test_a_write_without_fsync_is_lost_by_every_variant_that_loses_data(variant):
    disk = durable_file(b"old!")
    disk.write("f", 0, b"new!")
    assert disk.current()["f"].content == b"new!"
    assert contents(disk, variant) == {"f": b"old!"}


def test_a_write_without_fsync_is_kept_when_only_namespace_operations_are_lost():
    disk = durable_file(b"old!")
    disk.write("f", 0, b"new!")
    assert contents(disk, Variant.NAMESPACE) == {"f": b"new!"}
    assert texts(disk, Variant.NAMESPACE) == []


@pytest.mark.parametrize("variant", ALL)
def test_a_write_followed_by_fsync_survives_every_variant(variant):
    disk = durable_file(b"old!")
    disk.write("f", 0, b"new!")
    disk.fsync("f")
    assert contents(disk, variant) == {"f": b"new!"}
    assert texts(disk, variant) == []


def test_fdatasync_makes_the_data_durable_like_fsync_and_is_counted_apart():
    disk = durable_file(b"")
    disk.write("f", 0, b"data")
    disk.fsync("f", data_only=True)
    assert contents(disk, Variant.UNSYNCED) == {"f": b"data"}
    activity = disk.cut().activity
    assert (activity.fsyncs, activity.fdatasyncs) == (0, 1)


def test_overlapping_writes_apply_in_order_and_only_the_synced_ones_survive():
    disk = durable_file(b"")
    disk.write("f", 0, b"AAAAAAAA")
    disk.write("f", 4, b"BBBBBBBB")  # overlaps the last 4 bytes of the first write
    disk.fsync("f")
    disk.write("f", 2, b"CCCC")  # overlaps both, unsynced
    assert disk.current()["f"].content == b"AACCCCBBBBBB"
    assert contents(disk, Variant.UNSYNCED) == {"f": b"AAAABBBBBBBB"}
    assert texts(disk, Variant.UNSYNCED) == [
        "f is back to its synced 12 bytes (it held 12): unsynced writes were lost, 4 bytes differ in 1 range, "
        "the first at offset 2"
    ]


def test_a_write_past_the_end_fills_the_gap_with_zeros():
    disk = durable_file(b"ab")
    disk.write("f", 4, b"cd")
    disk.fsync("f")
    assert contents(disk, Variant.UNSYNCED) == {"f": b"ab\0\0cd"}


def test_the_loss_of_appended_bytes_is_said_as_the_last_bytes_since_the_synced_offset():
    disk = Disk()
    disk.add_file("checkpoints.sqlite-wal", b"w" * 8192)
    disk.write("checkpoints.sqlite-wal", 8192, b"x" * 4096)
    assert texts(disk, Variant.UNSYNCED) == [
        "checkpoints.sqlite-wal lost its last 4096 bytes (unsynced since offset 8192)"
    ]


def test_an_unsynced_truncate_is_undone_and_said_so():
    disk = durable_file(b"0123456789")
    disk.truncate("f", 4)
    assert disk.current()["f"].content == b"0123"
    assert contents(disk, Variant.UNSYNCED) == {"f": b"0123456789"}
    assert texts(disk, Variant.UNSYNCED) == [
        "f is 10 bytes again: its unsynced truncate to 4 bytes was lost (bytes 4–9 are back)"
    ]


def test_a_synced_truncate_that_grows_the_file_adds_zeros_and_survives():
    disk = durable_file(b"ab")
    disk.truncate("f", 4)
    disk.fsync("f")
    assert contents(disk, Variant.UNSYNCED) == {"f": b"ab\0\0"}


def test_a_truncate_then_rewrite_without_fsync_comes_back_old_or_kept_per_variant():
    # A JSON file rewritten in place: open("w") truncates, write puts the new text, no fsync.
    disk = durable_file(b'{"step": 1}', "state.json")
    disk.truncate("state.json", 0)
    disk.write("state.json", 0, b'{"step": 2, "done": true}')
    assert contents(disk, Variant.UNSYNCED) == {"state.json": b'{"step": 1}'}
    assert contents(disk, Variant.NAMESPACE) == {"state.json": b'{"step": 2, "done": true}'}


def test_a_file_created_without_a_directory_fsync_is_absent_unless_the_variant_keeps_names():
    disk = Disk()
    disk.create("new.json")
    disk.write("new.json", 0, b"{}")
    disk.fsync("new.json")  # the data is durable; the name is not
    for variant in (Variant.UNSYNCED, Variant.TORN, Variant.NAMESPACE):
        assert contents(disk, variant) == {}, variant
        assert texts(disk, variant) == [
            "new.json is absent after the cut: the file was created and no fsync of its directory followed "
            "(it held 2 bytes)"
        ]
    assert contents(disk, Variant.LAZYFS) == {"new.json": b"{}"}


def test_a_file_created_and_never_fsynced_comes_back_empty_under_lazyfs():
    disk = Disk()
    disk.create("state.json")
    disk.write("state.json", 0, b'{"ok": 1}')
    assert contents(disk, Variant.LAZYFS) == {"state.json": b""}
    assert texts(disk, Variant.LAZYFS) == ["state.json lost all its 9 bytes (none was synced): it is empty"]


def test_a_directory_fsync_after_a_create_makes_the_name_durable_but_not_the_data():
    disk = Disk()
    disk.create("a")
    disk.write("a", 0, b"data")
    disk.fsync("")
    assert contents(disk, Variant.UNSYNCED) == {"a": b""}
    disk.fsync("a")
    assert contents(disk, Variant.UNSYNCED) == {"a": b"data"}


def test_a_rename_over_an_existing_file_without_a_directory_fsync_is_undone():
    disk = durable_file(b"old", "state.json")
    disk.create("state.json.tmp")
    disk.write("state.json.tmp", 0, b"new")
    disk.fsync("state.json.tmp")
    disk.fsync("")  # the temp file's name is durable, then the rename is not
    disk.rename("state.json.tmp", "state.json")
    assert disk.current()["state.json"].content == b"new"
    assert contents(disk, Variant.UNSYNCED) == {"state.json": b"old", "state.json.tmp": b"new"}
    assert texts(disk, Variant.UNSYNCED) == [
        "state.json holds the file it held before state.json.tmp was renamed over it: the rename was not made "
        "durable (no fsync of its directory followed)",
        "state.json.tmp is back after the cut: its rename to state.json was not made durable "
        "(no fsync of its directory followed)",
    ]
    assert contents(disk, Variant.LAZYFS) == {"state.json": b"new"}


def test_an_fsync_of_the_directory_after_a_rename_keeps_the_rename_in_every_variant():
    disk = durable_file(b"old", "state.json")
    disk.create("state.json.tmp")
    disk.write("state.json.tmp", 0, b"new")
    disk.fsync("state.json.tmp")
    disk.rename("state.json.tmp", "state.json")
    disk.fsync("")
    for variant in ALL:
        assert contents(disk, variant) == {"state.json": b"new"}, variant
        assert texts(disk, variant) == [], variant


def test_a_file_fsynced_then_renamed_without_a_directory_fsync_is_under_neither_name():
    disk = Disk()
    disk.create("journal.tmp")
    disk.write("journal.tmp", 0, b"key=1")
    disk.fsync("journal.tmp")
    disk.rename("journal.tmp", "journal")
    assert contents(disk, Variant.UNSYNCED) == {}
    assert texts(disk, Variant.UNSYNCED) == [
        "journal is absent after the cut: the rename of journal.tmp to it was not made durable "
        "(no fsync of its directory followed) (it held 5 bytes)"
    ]
    # LazyFS applies the rename at once and the data was synced: the journal is whole.
    assert contents(disk, Variant.LAZYFS) == {"journal": b"key=1"}


def test_an_unlink_without_a_directory_fsync_is_undone():
    disk = durable_file(b"keep", "lock")
    disk.unlink("lock")
    assert "lock" not in disk.current()
    assert contents(disk, Variant.UNSYNCED) == {"lock": b"keep"}
    assert texts(disk, Variant.UNSYNCED) == [
        "lock is back after the cut: its unlink was not made durable (no fsync of its directory followed)"
    ]


def test_an_unlinked_file_still_open_can_be_written_and_synced_by_its_inode():
    disk = durable_file(b"v1")
    inode = disk.inode("f")
    disk.unlink("f")
    disk.write(inode, 0, b"v2")
    disk.fsync(inode)
    assert contents(disk, Variant.UNSYNCED) == {"f": b"v2"}  # the unlink was not durable
    disk.fsync("")
    assert contents(disk, Variant.UNSYNCED) == {}


def test_a_new_directory_is_absent_with_everything_in_it_until_its_parent_is_fsynced():
    disk = Disk()
    disk.mkdir("store")
    disk.create("store/db")
    disk.write("store/db", 0, b"rows")
    disk.fsync("store/db")
    disk.fsync("store")
    assert contents(disk, Variant.UNSYNCED) == {}
    assert texts(disk, Variant.UNSYNCED) == [
        "store is absent after the cut with the 1 paths under it: the directory was created and "
        "no fsync of its directory followed"
    ]
    disk.fsync("")
    assert contents(disk, Variant.UNSYNCED) == {"store": None, "store/db": b"rows"}


def test_a_rename_across_directories_persists_each_directory_on_its_own():
    disk = Disk()
    disk.add_directory("a")
    disk.add_directory("b")
    disk.add_file("a/x", b"x")
    disk.rename("a/x", "b/x")
    disk.fsync("b")  # b gains the name; a's removal of it is not durable
    assert contents(disk, Variant.UNSYNCED) == {"a": None, "a/x": b"x", "b": None, "b/x": b"x"}
    image = disk.cut().image
    assert image["a/x"].inode == image["b/x"].inode


def test_a_hard_link_without_a_directory_fsync_is_absent():
    disk = durable_file(b"x", "a")
    disk.link("a", "b")
    assert texts(disk, Variant.UNSYNCED) == [
        "b is absent after the cut: the link to a was not made durable (no fsync of its directory followed)"
    ]
    disk.fsync("")
    image = disk.cut().image
    assert image["a"].inode == image["b"].inode


def test_torn_keeps_the_last_unsynced_write_up_to_its_last_512_byte_boundary():
    disk = durable_file(b"s" * 1024)
    disk.write("f", 1024, b"n" * 4096)  # ends at 5120; the last boundary inside is 4608
    after = contents(disk, Variant.TORN)["f"]
    assert after == b"s" * 1024 + b"n" * 3584
    assert texts(disk, Variant.TORN) == [
        "f lost its last 512 bytes (unsynced since offset 4608)",
        "f: its last unsynced write (4096 bytes at offset 1024) was torn at offset 4608: 3584 bytes of it "
        "reached the disk, 512 did not",
    ]


def test_torn_tears_an_unaligned_write_inside_the_file_and_keeps_the_file_size():
    disk = durable_file(b"." * 2048)
    disk.write("f", 100, b"#" * 1000)  # ends at 1100; the last boundary inside is 1024
    after = contents(disk, Variant.TORN)["f"]
    assert after == b"." * 100 + b"#" * 924 + b"." * 1024


def test_torn_loses_a_write_inside_one_sector_whole():
    disk = durable_file(b"old", "state.json")
    disk.write("state.json", 0, b'{"new": true}')
    assert contents(disk, Variant.TORN) == {"state.json": b'{"new": true}'[:0] + b"old"}
    assert any("lost whole" in text for text in texts(disk, Variant.TORN))


def test_torn_tears_only_the_last_unsynced_write_of_the_log_and_loses_the_others():
    disk = Disk()
    disk.add_file("a", b"")
    disk.add_file("b", b"")
    disk.write("b", 0, b"1" * 1024)
    disk.write("a", 0, b"2" * 1024)  # the last write of the log
    after = contents(disk, Variant.TORN)
    assert after == {"a": b"2" * 512, "b": b""}


def test_torn_says_nothing_of_a_tear_in_a_file_that_does_not_survive():
    disk = Disk()
    disk.create("new")
    disk.write("new", 0, b"x" * 4096)
    assert [loss.kind for loss in disk.cut(Variant.TORN).losses] == ["absent"]


def test_the_activity_counts_every_kind_of_operation():
    disk = Disk()
    disk.create("a")
    disk.write("a", 0, b"abc")
    disk.truncate("a", 1)
    disk.fsync("a")
    disk.fsync("a", data_only=True)
    disk.fsync("")
    disk.rename("a", "b")
    assert disk.activity().text() == (
        "1 writes (3 bytes), 1 truncates, 1 fsyncs, 1 fdatasyncs, 1 directory fsyncs, 2 namespace operations"
    )


def test_a_name_changed_back_to_its_synced_file_is_no_loss():
    disk = durable_file(b"x", "a")
    disk.rename("a", "b")
    disk.rename("b", "a")
    assert texts(disk, Variant.UNSYNCED) == []


def test_operations_the_kernel_would_refuse_are_refused():
    disk = Disk()
    disk.add_directory("d")
    disk.add_file("d/f", b"")
    with pytest.raises(FileExistsError):
        disk.create("d/f")
    with pytest.raises(FileNotFoundError):
        disk.unlink("missing")
    with pytest.raises(IsADirectoryError):
        disk.write("d", 0, b"x")
    with pytest.raises(OSError, match="not empty"):
        disk.rmdir("d")
    with pytest.raises(OSError, match="into itself"):
        disk.rename("d", "d/inner")
    with pytest.raises(ValueError):
        disk.create("d/../escape")


def test_the_general_data_loss_sentence_counts_the_differing_bytes_and_the_size():
    text = describe_data_loss("state.json", b'{"step": 2, "done": true}', b'{"step": 1}')
    assert text == (
        "state.json is back to its synced 11 bytes (it held 25): unsynced writes were lost, 2 bytes differ in "
        "1 range, the first at offset 9"
    )
