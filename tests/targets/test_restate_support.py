"""restate_support on a real restate-server: a port taken between drawing it and the server binding it."""

import shutil
import socket

import pytest

from installed import requires
from plugpull.targets import BUILT_INS

pytestmark = requires("restate", "hypercorn")

absent = BUILT_INS["restate"].missing_program()
if absent is not None:
    pytest.skip(f"the Restate server cannot run here: {absent}", allow_module_level=True)


def test_a_server_whose_port_was_taken_before_it_bound_starts_again_on_new_ports(tmp_path, monkeypatch):
    from plugpull.targets import restate_support as rs

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    first = {**rs.new_ports(), "admin": taken.getsockname()[1]}  # another process holds the admin port
    drawn = []

    def new_ports():
        drawn.append(first if not drawn else real_new_ports())
        return drawn[-1]

    real_new_ports = rs.new_ports
    monkeypatch.setattr(rs, "new_ports", new_ports)
    try:
        server, ports = rs.start_on_free_ports(rs.server_binary(), tmp_path / "data", tmp_path / "server.log")
        try:
            assert len(drawn) == 2 and ports == drawn[1] and ports["admin"] != first["admin"]
            assert rs.ADDRESS_IN_USE in (tmp_path / "server.log").read_text()  # the first try's, in the same log
        finally:
            rs.stop_server(server)
    finally:
        taken.close()
    assert server.returncode is not None


def test_a_server_that_exits_for_another_reason_is_not_started_again(tmp_path, monkeypatch):
    from plugpull.targets import restate_support as rs

    calls = []
    real_new_ports = rs.new_ports
    monkeypatch.setattr(rs, "new_ports", lambda: calls.append(1) or real_new_ports())
    with pytest.raises(RuntimeError, match="exited with code 1 while starting"):
        rs.start_on_free_ports(
            shutil.which("false"), tmp_path / "data", tmp_path / "server.log"
        )  # exits 1, says nothing
    assert calls == [1]
