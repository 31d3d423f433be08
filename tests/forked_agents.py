"""The tests/agents scripts forked from one server per pytest process and key instead of each phase starting cold.

tests/conftest.py gives a module this process's :class:`AgentForks` (fixture ``agent_forks``, tests/agents on PYTHONPATH
meanwhile) and runs the CLI in-process forking from it (fixture ``plugpull_forking``).
"""

import os
import sys
import threading

import shared_forks
from plugpull.forkserver import ForkServer, ForkServers
from plugpull.process import spawn
from plugpull.targets import Target

#: The tests/agents scripts with a main guard, which a fork server may import: ``python -m NAME`` with tests/agents
#: on PYTHONPATH forks from :class:`AgentForks` (their import runs nothing but ``plugpull.client``'s).
FORKABLE = (
    "fake_framework",
    "misbehaving",
    "approval_framework",
    "protocol_mistakes",
    "background_saver",
    "boundary_framework",
    "versioned_framework",
    "two_tools",
    "journal_agent",
    "stream_agent",
    "session_app",
)


def forked_agent(script: str, *args: str) -> Target:
    """A tests/agents script as ``python -m SCRIPT ARGS``: forked where the run's runtime has :class:`AgentForks`."""
    return Target(name="agent", argv=(sys.executable, "-m", script.removesuffix(".py"), *args))


class AgentForks:
    """One fork server that imported every :data:`FORKABLE` script (and ``plugpull.client``) once, for the pytest
    process (one a key, :data:`AGENT_FORKS`): each module that ran its own paid the import again (~0.2 CPU-s).

    A phase of ``python -m SCRIPT`` forks from it instead of starting an interpreter that imports plugpull.client
    (~0.05 CPU-s a phase; a module runs tens to hundreds); every other command starts cold as before. A forked
    phase is still its own session and process group, SIGKILLed for real, reaped by the server that reports the
    kernel's wait status (plugpull.forkserver). What it does not show is the script's command line: /proc shows
    the server's, so a test that finds its processes by a marker on the command line keeps the script cold.
    The server starts here, not at the first phase: its socket folder stays out of a test's temp dir.
    """

    def __init__(self) -> None:
        first, *also = FORKABLE
        self._server = ForkServer(sys.executable, first, dict(os.environ), also)

    def spawn(self, argv: list[str], *, env: dict[str, str], cwd: str | None):
        forkable = ForkServers.module_of(tuple(argv))
        if forkable is None or forkable[0] != sys.executable or forkable[1] not in FORKABLE:
            return spawn(argv, env=env, cwd=cwd)
        return self._server.spawn(forkable[2], env=env, cwd=cwd, shown=argv, module=forkable[1])

    def close(self) -> None:
        """Nothing: the server outlives a module's Runtime, as the shared fork servers do (:meth:`stop`)."""

    def stop(self) -> None:
        self._server.close()


class KeptAgentForks:
    """This pytest process's :class:`AgentForks`, one per key (tests/shared_forks.py): a module that changes the
    environment or cwd it starts with gets its own; tests/agents on PYTHONPATH, which every one has, is no part of it."""

    def __init__(self) -> None:
        self._kept: dict[tuple, AgentForks] = {}
        self._lock = threading.Lock()

    def get(self) -> AgentForks:
        """The process's AgentForks for its present key, started now if none is (tests/agents on PYTHONPATH)."""
        here = shared_forks.key()
        with self._lock:
            forks = self._kept.get(here)
            if forks is None:
                forks = self._kept[here] = AgentForks()
        return forks

    def stop(self) -> None:
        with self._lock:
            kept, self._kept = list(self._kept.values()), {}
        for forks in kept:
            forks.stop()


AGENT_FORKS = KeptAgentForks()


class KeptForks:
    """What ``--fork-server`` forks from in a module whose CLI runs are in-process (:func:`plugpull_forking`).

    The tests/agents scripts fork from the process's :class:`AgentForks`, any other ``python -m`` agent or built-in
    from ``others``: the pytest process's shared servers (tests/shared_forks.py), kept past the module; ``close``
    (each run's Runtime ends with it) keeps both.
    """

    def __init__(self, agents: AgentForks, others) -> None:
        self.agents, self.others = agents, others

    def spawn(self, argv: list[str], *, env: dict[str, str], cwd: str | None):
        forkable = ForkServers.module_of(tuple(argv))
        if forkable is not None and forkable[1] in FORKABLE:
            return self.agents.spawn(argv, env=env, cwd=cwd)
        return self.others.spawn(argv, env=env, cwd=cwd)

    def close(self) -> None:
        pass
