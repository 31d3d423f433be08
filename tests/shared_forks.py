"""The fork servers that every test module of one pytest process shares: one server per framework family.

A module's :class:`~plugpull.scenarios.Runtime` keeps its own clean runs; only the servers are shared, so a framework
is imported once per pytest process (per xdist worker), not once per module that forks its targets. tests/conftest.py
puts the modules of one family in one xdist group (``--dist loadgroup``), so that one worker imports it.

A phase forked from a shared server is the phase a server of the module's own would have forked:

- run_child gives the phase its own environment and cwd (plugpull.forkserver): every variable it was given is set
  and every other one unset, in the child, whatever the server started with;
- what the server fixed when it started is the same: servers are kept apart by this process's environment and
  working directory at the phase's start (its sys.path comes from PYTHONPATH and, for ``python -m``, the directory
  it started in; a framework may read a variable on import), so a module that changes either (a PYTHONPATH, a
  monkeypatched variable) gets servers of its own. Two variables are left out of that key, as each differs between
  tests and nothing reads it on import: pytest's PYTEST_CURRENT_TEST, and plugpull.postgres.URL_ENV, which a target
  reads in its phase only (``run_database``) from the phase's environment; and one entry of PYTHONPATH, tests/agents,
  which a module of in-process CLI runs has there (conftest's ``agent_forks``): no script of that folder has the name
  of a module found anywhere else (tests/test_shared_forks.py), so no import of a family's server or phase finds a
  different module with it or without it;
- a family server imports the family's target modules at its start and runs each one's ``plugpull_prefork`` hook
  for the argv it is asked for (ForkServers' ``together``): a target's phase runs as its own ``__main__`` either
  way, with its framework already imported (tests/targets/test_recovery_protocol.py has done so).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from plugpull import postgres, targets
from plugpull.evidence import Outcome
from plugpull.forkserver import ForkServer, ForkServers
from plugpull.process import Running

#: Variables left out of a server's key: each differs between tests, and nothing reads it on import (docstring).
PER_TEST = frozenset({"PYTEST_CURRENT_TEST", postgres.URL_ENV})
#: The PYTHONPATH entry left out of a server's key (docstring): the fake frameworks' folder.
AGENTS = str(Path(__file__).parent / "agents")
#: In the place of a framework: the tests whose targets keep their state on a throwaway PostgreSQL cluster, whichever
#: framework (``server`` in tests/targets/conftest.py), are one group.
POSTGRESQL = "postgresql"
#: Groups that are one: the PostgreSQL tests race Google ADK's approvers (google-adk-approval-postgresql), so they
#: share ADK's worker and its server (an import of ~1.8 CPU-s), instead of importing ADK on a second worker; and
#: FastAIAgent's few tests (~4 s) join them, as they fork FastAIAgent too (~0.7 CPU-s). DBOS, which they fork as well
#: (~0.7 CPU-s), keeps its group: its ~29 s would make this one the longest of the run (~80 s of a worker's ~185,
#: .ci/run), too long to balance four workers.
SAME_GROUP = {POSTGRESQL: "google.adk", "fastaiagent": "google.adk"}
#: The example app of the Agents SDK (plugpull.examples), forked with the SDK's family; and the tests/agents script
#: that runs a real LangGraph graph (tests/scenarios/test_kill_mid_tool_every_effect.py), forked with LangGraph's.
EXAMPLES = {"agents": ("plugpull.examples.openai_agents_refund_approval",), "langgraph": ("langgraph_order_flow",)}


def families() -> dict[str, tuple[str, ...]]:
    """Each framework's module name (a built-in's ``module``) -> the target modules of its built-ins, sorted."""
    found: dict[str, set[str]] = {framework: set(modules) for framework, modules in EXAMPLES.items()}
    for built_in in targets.BUILT_INS.values():
        for variant in built_in.variants:
            forkable = ForkServers.module_of(variant.argv)
            if forkable is not None:
                found.setdefault(built_in.module, set()).add(forkable[1])
    return {framework: tuple(sorted(modules)) for framework, modules in found.items()}


FAMILIES = families()
#: A target module's name without its package (``langgraph_refund``) -> its framework's module name.
FAMILY_OF = {module.rpartition(".")[2]: framework for framework, modules in FAMILIES.items() for module in modules}
#: A target module's full name -> its framework's module name.
FAMILY_OF_MODULE = {module: framework for framework, modules in FAMILIES.items() for module in modules}


def group_name(framework: str) -> str:
    """The name of the xdist group of the tests that fork ``framework``'s targets, or ``POSTGRESQL``'s."""
    return f"forks-{SAME_GROUP.get(framework, framework)}"


def group(framework: str) -> pytest.MarkDecorator:
    """The xdist group of the tests that fork ``framework``'s targets (tests/conftest.py), or ``POSTGRESQL``'s."""
    return pytest.mark.xdist_group(group_name(framework))


def group_of_built_in(name: str) -> pytest.MarkDecorator:
    """The group of a test that forks the built-in ``name``'s targets; a built-in whose state lives on PostgreSQL
    joins the tests that share a throwaway cluster, whichever framework (tests/targets/test_postgresql_targets.py)."""
    built_in = targets.BUILT_INS[name]
    return group(POSTGRESQL if built_in.server == postgres.URL_ENV else built_in.module)


def group_of(test_module: str) -> pytest.MarkDecorator | None:
    """The group of a test module named after a target module (test_langgraph_refund.py); None for any other."""
    framework = FAMILY_OF.get(test_module.removeprefix("test_").removesuffix(".py"))
    return group(framework) if framework else None


class FamilyServers(ForkServers):
    """ForkServers whose servers start with tests/agents on PYTHONPATH, so that LangGraph's imports its tests/agents
    script (EXAMPLES); as no script there has the name of a module found elsewhere (docstring), that entry of sys.path
    changes no other import of a server or its phases. A phase's environment is its own, whatever the server's."""

    def server_env(self, env: dict[str, str]) -> dict[str, str]:
        return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [AGENTS, env.get("PYTHONPATH")]))}


def key() -> tuple:
    """What keeps this process's servers apart: its cwd and environment, less what cannot matter (docstring)."""
    environ = {k: v for k, v in os.environ.items() if k not in PER_TEST}
    if "PYTHONPATH" in environ:
        environ["PYTHONPATH"] = os.pathsep.join(p for p in environ["PYTHONPATH"].split(os.pathsep) if p != AGENTS)
        if not environ["PYTHONPATH"]:  # tests/agents alone: as no PYTHONPATH (an empty one adds nothing to sys.path)
            del environ["PYTHONPATH"]
    return os.getcwd(), frozenset(environ.items())


class SharedForkServers:
    """ForkServers kept for the whole pytest process, one set per environment and cwd (module docstring).

    ``close`` is a module's Runtime being done: the servers stay for the next module; :meth:`stop` ends them (at
    the end of the session, tests/conftest.py)."""

    def __init__(self, together: dict[str, tuple[str, ...]]) -> None:
        self._together = list(together.values())
        self._sets: dict[tuple, ForkServers] = {}
        self._lock = threading.Lock()
        #: The test running now: its node id and xdist group (tests/conftest.py sets it); None between tests.
        self.test: tuple[str, str | None] | None = None
        #: Node id -> what it forked that imports a family a second time (:meth:`_check`); tests/conftest.py fails it.
        self.strays: dict[str, set[str]] = {}
        self._keys: dict[str, tuple[tuple, str]] = {}

    def spawn(self, argv: list[str], *, env: dict[str, str], cwd: str | None) -> Running | Outcome:
        return self._of_key(argv, env).spawn(argv, env=env, cwd=cwd)

    def server_for(self, module: str, *, env: dict[str, str] | None = None) -> ForkServer:
        """This process's server (under its present key) that forks ``module``, started now if none is, for a process
        that forks from it itself (a notebook smoke's kernel, tests/report/kernel_forks.py); checked as a fork of
        ``module`` by the test running now is (:attr:`strays`). ``env``: what its phases' environments hold beside
        this process's (a PostgreSQL URL)."""
        argv = [sys.executable, "-m", module]
        return self._of_key(argv, env or {}).server(sys.executable, module, dict(os.environ))

    def _of_key(self, argv: list[str], env: dict[str, str]) -> ForkServers:
        """The servers of this process's present key, for a fork of ``argv`` by the test running now (checked)."""
        here = key()
        with self._lock:
            self._check(argv, env, here)
            servers = self._sets.get(here)
            if servers is None:
                servers = self._sets[here] = FamilyServers(together=self._together)
        return servers

    def _check(self, argv: list[str], env: dict[str, str], here: tuple) -> None:
        """Note a stray (:attr:`strays`): a family forked by a test outside the family's group, whose worker may import
        it a second time; or forked under a second key in this process, which starts a second server of it."""
        forkable = ForkServers.module_of(tuple(argv))
        family = FAMILY_OF_MODULE.get(forkable[1]) if forkable else None
        if family is None or self.test is None:
            return
        nodeid, its_group = self.test
        # A target whose state lives on PostgreSQL may be forked from the PostgreSQL group, whichever its family.
        allowed = {group_name(family)} | ({group_name(POSTGRESQL)} if postgres.URL_ENV in env else set())
        if its_group not in allowed:
            self.strays.setdefault(nodeid, set()).add(
                f"it forks {forkable[1]} in xdist group {its_group}, not {group_name(family)}: another worker may "
                f"import {family} again (mark it shared_forks.group({family!r}), tests/shared_forks.py)"
            )
        first = self._keys.setdefault(family, (here, nodeid))
        if first[0] != here:
            names = sorted({k for k, _ in first[0][1] ^ here[1]} | ({"cwd"} if first[0][0] != here[0] else set()))
            self.strays.setdefault(nodeid, set()).add(
                f"it forks {forkable[1]} with {', '.join(names)} unlike {first[1]}, which started the {family} "
                f"family's server: a second server imports {family} (keep the environment, or leave it out of the key)"
            )

    def close(self) -> None:
        """Nothing: the servers outlive the module's Runtime (:meth:`stop`)."""

    def serves(self, module: str) -> bool:
        """Whether a server of this process, under its present key, forks ``module`` (started by it or its family)."""
        with self._lock:
            servers = self._sets.get(key())
        if servers is None:
            return False
        first = servers._groups.get(module, (module,))[0]  # ForkServers keeps one server a group, by its first module
        return any(started == first for _, started in servers._servers)

    def stop(self) -> None:
        with self._lock:
            sets, self._sets = list(self._sets.values()), {}
        for servers in sets:
            servers.close()


#: This pytest process's servers.
FORKS = SharedForkServers(FAMILIES)
