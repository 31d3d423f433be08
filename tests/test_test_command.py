"""README's test command is .ci/run's: plain ``uv run pytest`` runs two xdist workers a core, ``--dist loadgroup``
(tests/conftest.py, ``pytest_cmdline_main``), unless the command line says otherwise."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).parent.parent


def _load_conftest():
    # By path: ``import conftest`` gets whichever conftest.py pytest registered under that name first
    # (tests/report/, tests/targets/ and tests/powercut/ have their own), which depends on collection order.
    spec = importlib.util.spec_from_file_location("plugpull_tests_root_conftest", ROOT / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


conftest = _load_conftest()
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class Plugins:
    def __init__(self, loaded: tuple[str, ...] = ("xdist.plugin",), blocked: tuple[str, ...] = ()) -> None:
        self.loaded, self.blocked = loaded, blocked

    def hasplugin(self, name: str) -> bool:
        return name in self.loaded

    def is_blocked(self, name: str) -> bool:
        return name in self.blocked


def configured(*args: str, numprocesses=None, dist="no", usepdb=False, plugins=None) -> SimpleNamespace:
    """What the hook leaves of a command line's options (the ones it reads and sets)."""
    config = SimpleNamespace(
        pluginmanager=plugins or Plugins(),
        option=SimpleNamespace(numprocesses=numprocesses, dist=dist, usepdb=usepdb),
        args=list(args),
    )
    conftest.pytest_cmdline_main(config)
    return config.option


def test_plain_pytest_gets_two_workers_a_core_and_loadgroup(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    option = configured()
    assert (option.numprocesses, option.dist) == (conftest.WORKERS_A_CORE * CORES, "loadgroup")
    option = configured("tests/test_cli.py", "tests/targets")  # files and folders: as many tests as a suite
    assert (option.numprocesses, option.dist) == (conftest.WORKERS_A_CORE * CORES, "loadgroup")
    assert configured(dist="loadfile").dist == "loadfile"  # a --dist given is kept


@pytest.mark.parametrize(
    "what, kwargs, args",
    [
        ("-n given", {"numprocesses": 0}, ()),
        ("-n 3", {"numprocesses": 3}, ()),
        ("--pdb", {"usepdb": True}, ()),
        ("-p no:xdist", {"plugins": Plugins(blocked=("xdist",))}, ()),
        ("xdist not installed", {"plugins": Plugins(loaded=())}, ()),
        ("node ids only", {}, ("tests/test_cli.py::test_a", "tests/test_tour.py::test_b")),
    ],
)
def test_the_command_line_keeps_its_say(monkeypatch, what, kwargs, args):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    before = kwargs.get("numprocesses")
    option = configured(*args, **kwargs)
    assert (option.numprocesses, option.dist) == (before, "no"), what


def test_a_worker_sets_nothing(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    assert configured().numprocesses is None


def test_ci_runs_the_readmes_command():
    script = (ROOT / ".ci" / "run").read_text()
    runs = [line.strip() for line in script.splitlines() if "pytest" in line and not line.lstrip().startswith("#")]
    assert runs[0] == "uv run pytest", runs
    assert not any(" -n" in line or "--dist" in line for line in runs), runs


def test_plain_pytest_of_a_module_starts_the_workers(tmp_path):
    # For real, in a subprocess: a module given as a path (not a node id) is distributed as the whole suite is.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/test_test_command.py", "-k", "worker_sets"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"created: {conftest.WORKERS_A_CORE * CORES}/{conftest.WORKERS_A_CORE * CORES} workers" in run.stdout
