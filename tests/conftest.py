import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import pytest

import shared_forks
from forked_agents import AGENT_FORKS, KeptForks, forked_agent
from plugpull.scenarios import Runtime

# pytester runs the pytest plugin's tests in this process (tests/test_pytest_plugin.py).
pytest_plugins = ["pytester", "xdist_groups"]

AGENTS = Path(__file__).parent / "agents"
TESTS = Path(__file__).parent

# Markers by where a test lives or what it requests, so that a new test gets them without asking
# (pyproject.toml's [tool.pytest.ini_options] says what each means; README, "Tests", how to select).
# Modules under these folders start a real agent framework in real processes...
FRAMEWORK_FOLDERS = ("examples", "targets", "findings")
# ...except these, which read the built-in tables and notes only; and these modules elsewhere do too.
FRAMEWORK_FREE = {"test_built_in_notes.py", "test_built_ins.py", "test_installation.py"}
FRAMEWORK_MODULES = {
    "scenarios/test_lost_session_write.py",
    "scenarios/test_kill_mid_tool_every_effect.py",
    "test_forkserver.py",
}
# Fixtures that start a Jupyter kernel (tests/report/conftest.py).
KERNEL_FIXTURES = {"current_kernel", "forked_kernel", "whole_run"}
# What implies slow: each such test takes seconds, not milliseconds (network: uv builds venvs or resolves).
SLOW_MARKERS = {"framework", "notebook", "witness", "powercut", "network"}


#: xdist workers a core when `uv run pytest` is given no -n: the command README and .ci/run give is one.
WORKERS_A_CORE = 2


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which turns numprocesses into its workers (xdist/plugin.py)
def pytest_cmdline_main(config):
    """`uv run pytest` runs as .ci/run does: two xdist workers a core, ``--dist loadgroup``.

    A third of the suite's time is waiting (SIGKILLed phases, servers starting, uv), which a second worker on the
    same core fills, and loadgroup sends the tests that fork one framework's targets to one worker, whose fork server
    imports the framework once (docs/performance.md, "The test suite"). Only when nothing says otherwise: an ``-n``
    given (``-n 0``: one process), xdist not loaded (``-p no:xdist``), ``--pdb``, a worker's own start, or every
    argument one test's node id (``tests/test_x.py::test_y``: a worker a core would cost more than it saves)."""
    plugins = config.pluginmanager
    # pyproject's addopts load it as xdist.plugin; `-p no:xdist` blocks the name "xdist" only, which loads nothing here.
    loaded = any(plugins.hasplugin(name) for name in ("xdist", "xdist.plugin")) and not plugins.is_blocked("xdist")
    if not loaded or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    option = config.option
    if getattr(option, "numprocesses", 0) is not None or option.usepdb:
        return
    if config.args and all("::" in arg for arg in config.args):
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    option.numprocesses = WORKERS_A_CORE * cores
    if option.dist == "no":
        option.dist = "loadgroup"


# First, so that the groups are given before tests/xdist_groups.py tells them to xdist's controller (--dist loadgroup).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    of_module: dict[Path, tuple[pytest.MarkDecorator, tuple[pytest.MarkDecorator, ...]]] = {}
    for item in items:
        if item.path not in of_module:  # once a module, not once a test: every xdist worker does this for the suite
            of_module[item.path] = marks_of(Path(item.path).relative_to(TESTS))
        group, marks = of_module[item.path]
        names = {mark.name for mark in item.iter_markers()}
        if "xdist_group" not in names:
            item.add_marker(group)
        if KERNEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            marks += (pytest.mark.notebook,)
        for mark in marks:
            item.add_marker(mark)
        if SLOW_MARKERS & names.union(mark.name for mark in marks):
            item.add_marker(pytest.mark.slow)


def marks_of(path: Path) -> tuple[pytest.MarkDecorator, tuple[pytest.MarkDecorator, ...]]:
    """A test module's (tests/``path``) default xdist group, and the marks it gives every test of its own."""
    # One worker for the tests that fork one framework's targets, so that it imports the framework once
    # (tests/shared_forks.py); every other module is a group of its own, as with --dist loadfile.
    group = shared_forks.group_of(path.name) or pytest.mark.xdist_group(path.as_posix())
    marks = []
    in_folder = path.parts[0] in FRAMEWORK_FOLDERS and path.name not in FRAMEWORK_FREE
    if in_folder or path.as_posix() in FRAMEWORK_MODULES:
        marks.append(pytest.mark.framework)
    if path.parts[0] == "powercut":
        marks.append(pytest.mark.powercut)
    return group, tuple(marks)


@pytest.fixture(scope="module")
def agent_forks():
    """This process's :class:`AgentForks` (one a key, forked_agents.AGENT_FORKS), with tests/agents on PYTHONPATH
    (``python -m SCRIPT`` cold too) while the module runs."""
    patch = pytest.MonkeyPatch()
    patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(AGENTS), os.environ.get("PYTHONPATH")])))
    try:
        yield AGENT_FORKS.get()
    finally:
        patch.undo()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item):
    """Tell the shared servers which test forks, and in which xdist group (its setup and teardown too)."""
    from xdist_groups import group_of  # the plugin (pytest_plugins), imported once pytest can rewrite its asserts

    shared_forks.FORKS.test = (item.nodeid, group_of(item))
    try:
        return (yield)
    finally:
        shared_forks.FORKS.test = None


@pytest.fixture(autouse=True)
def forks_its_family_once(request):
    """Fail a test that makes the run import a framework family again (tests/shared_forks.py, ``_check``): it forks
    the family's targets outside the family's xdist group, or from a second server with another environment."""
    yield
    strays = shared_forks.FORKS.strays.pop(request.node.nodeid, ())
    if strays:
        pytest.fail("; ".join(sorted(strays)), pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def shared_fork_servers():
    """This pytest process's fork servers (tests/shared_forks.py; forked_agents.AGENT_FORKS for tests/agents), stopped
    when its last test is done."""
    yield shared_forks.FORKS
    shared_forks.FORKS.stop()
    AGENT_FORKS.stop()


@pytest.fixture(scope="module")
def forked():
    """A runtime that forks built-in targets from the process's shared servers: one framework import per family.

    Its clean runs are the module's, shared by its tests (a test passes the same Settings, so the same key)."""
    with Runtime(forks=shared_forks.FORKS) as runtime:
        yield runtime


@pytest.fixture
def short_tmp():
    """A new folder right under the temp dir, removed after the test: for a run whose Unix sockets live
    below it. A socket's path holds 108 bytes, and tmp_path is long (longer under xdist: popen-gw0/)."""
    folder = Path(tempfile.mkdtemp(prefix="pp-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


# The fake frameworks as ``python -m SCRIPT`` (tests/agents on PYTHONPATH while the module runs, agent_forks): a
# runtime with the process's AgentForks forks their phases; without, each starts cold as before.
@pytest.fixture
def fake_framework(agent_forks):
    return lambda body: forked_agent("fake_framework", body)


@pytest.fixture
def misbehaving(agent_forks):
    return lambda how: forked_agent("misbehaving", how)


@pytest.fixture
def approval_framework(agent_forks):
    return lambda how: forked_agent("approval_framework", how)


@pytest.fixture
def session_app(agent_forks):
    return lambda how: replace(forked_agent("session_app", how), scenario="lost-session-write")


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
def fuse():
    """Skip the test where FUSE cannot mount (no /dev/fuse, no fusermount3, no mfusepy): the power-cut tests' need."""
    from plugpull.powercut.mount import unavailable_reason  # here, not at collection: only FUSE tests pay the import

    reason = unavailable_reason()
    if reason:
        pytest.skip(f"FUSE cannot mount here: {reason}")


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


@pytest.fixture(scope="module")
def kept_forks(agent_forks):
    return KeptForks(agent_forks, shared_forks.FORKS)


@pytest.fixture
def plugpull_forking(plugpull_main, kept_forks, monkeypatch):
    """``plugpull ARGS --fork-server`` run in this process (:func:`plugpull_main`), forking from the process's servers.

    For runs whose claim is what the command line prints and returns (lines, JSON, exit code), not how a phase
    starts: each ``python -m SCRIPT`` phase forks (no interpreter start, no import of plugpull.client) and the CLI
    itself is not started and imported again (~0.2 CPU-s a run). A phase is still its own process group, killed by
    a real SIGKILL. Tests of the console script, of Ctrl-C and of a cold command line stay subprocesses.
    """
    from plugpull import forkserver

    monkeypatch.setattr(forkserver, "ForkServers", lambda: kept_forks)
    return lambda *argv: plugpull_main(*argv, "--fork-server")
