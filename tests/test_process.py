"""Starting target processes: where their sockets live."""

import os
import socket
import tempfile

from plugpull import process
from plugpull.channel import Channel


def test_a_socket_folder_is_under_tmpdir_when_the_path_fits(tmp_path, monkeypatch):
    short = tmp_path.parent / "t"
    short.mkdir(exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(short))
    folder = process.socket_dir("pp-")
    try:
        assert folder.parent == short
        assert folder.stat().st_mode & 0o777 == 0o700
    finally:
        folder.rmdir()


def test_a_tmpdir_too_long_for_a_unix_socket_puts_the_socket_under_tmp(tmp_path, monkeypatch):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    channel = Channel()
    try:
        assert channel.path.startswith("/tmp/plugpull-chan-")
        assert len(os.fsencode(channel.path)) <= process.SOCKET_PATH_MAX
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(channel.path)  # it is bound and listening
    finally:
        channel.close()
    assert list(deep.iterdir()) == []  # nothing tried under the long folder is left there
