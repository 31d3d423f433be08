import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import pytest

from plugpull.targets import Target

AGENTS = Path(__file__).parent / "agents"


def agent_target(script: str, *args: str) -> Target:
    return Target(name="agent", argv=(sys.executable, str(AGENTS / script), *args))


@pytest.fixture
def fake_framework():
    return lambda body: agent_target("fake_framework.py", body)


@pytest.fixture
def misbehaving():
    return lambda how: agent_target("misbehaving.py", how)


@pytest.fixture
def approval_framework():
    return lambda how: agent_target("approval_framework.py", how)


@pytest.fixture
def session_app():
    return lambda how: replace(agent_target("session_app.py", how), scenario="lost-session-write")


@pytest.fixture
def processes_carrying():
    """Live (non-zombie) pids whose command line holds a marker, read from /proc."""

    def carrying(marker: str) -> list[int]:
        found = []
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[-1].split()[0]
            except (OSError, IndexError):
                continue
            if marker.encode() in cmd and state != "Z":
                found.append(int(entry))
        return found

    return carrying


class Exited(NamedTuple):
    """What ``plugpull ARGS`` gave back: its exit code and what it printed."""

    returncode: int | str | None
    stdout: str
    stderr: str


@pytest.fixture
def plugpull_main(capsys, monkeypatch, tmp_path):
    """``plugpull ARGS`` run in this process through ``plugpull.cli.main(argv)``: an :class:`Exited`.

    For bad input, which never starts a target: no subprocess per case (tests/test_cli.py keeps one that
    goes through the console script). Temporary files go under ``tmp_path`` (as TMPDIR would send a
    subprocess's), so a test can check that nothing was left there.
    """
    import tempfile

    from plugpull import cli

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def run(*argv: str) -> Exited:
        try:
            code = cli.main(list(argv))
        except SystemExit as exc:  # argparse's --help exits; bad input returns 2
            code = exc.code
        out, err = capsys.readouterr()
        return Exited(code, out, err)

    return run
