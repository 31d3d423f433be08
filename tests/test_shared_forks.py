"""tests/shared_forks.py: one server per framework family and key in a pytest process, and a test that would make the
run import a family again (outside the family's xdist group, or under another key) is caught, on hand-built calls."""

import os
import sys
from importlib.machinery import PathFinder
from pathlib import Path

import shared_forks
from plugpull import postgres
from plugpull.targets import BUILT_INS

SDK_APP = [sys.executable, "-m", "plugpull.targets.openai_agents_app", "start"]


def test_no_script_of_tests_agents_has_the_name_of_a_module_found_elsewhere():
    # What lets a server's key leave tests/agents out of PYTHONPATH: with it or without it on sys.path, every import
    # but of these scripts finds the same module. The path searched is this process's (the tests' folders) and the
    # working directory a `python -m` server puts first: more than a server's.
    path = [p for p in [*sys.path, os.getcwd()] if p != shared_forks.AGENTS]
    scripts = sorted(p.stem for p in Path(shared_forks.AGENTS).glob("*.py"))
    assert "fake_framework" in scripts
    assert {name: PathFinder.find_spec(name, path).origin for name in scripts if PathFinder.find_spec(name, path)} == {}


def test_a_servers_key_leaves_out_tests_agents_and_the_per_test_variables_only(monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    unset = shared_forks.key()
    monkeypatch.setenv("PYTHONPATH", shared_forks.AGENTS)
    assert shared_forks.key() == unset
    monkeypatch.setenv("PYTHONPATH", "/opt/elsewhere")
    base = shared_forks.key()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([shared_forks.AGENTS, "/opt/elsewhere"]))
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/x.py::test_y (call)")
    monkeypatch.setenv(postgres.URL_ENV, "postgresql://127.0.0.1:1/x")
    assert shared_forks.key() == base
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/opt/more", "/opt/elsewhere"]))
    assert shared_forks.key() != base
    monkeypatch.setenv("PYTHONPATH", "/opt/elsewhere")
    monkeypatch.setenv("PLUGPULL_SOME_SETTING", "1")
    assert shared_forks.key() != base


def test_the_postgresql_and_fastaiagent_tests_are_in_google_adks_group():
    postgresql = {name for name, b in BUILT_INS.items() if b.server == postgres.URL_ENV}
    assert "google-adk-approval-postgresql" in postgresql
    adk = shared_forks.group("google.adk").args
    assert all(shared_forks.group_of_built_in(name).args == adk for name in [*postgresql, "fastaiagent"])
    assert shared_forks.group_of_built_in("dbos").args != adk


def stray(test: tuple[str, str], argv: list[str], env: dict[str, str] | None = None) -> set[str]:
    servers = shared_forks.SharedForkServers(shared_forks.FAMILIES)
    servers.test = test
    servers._check(argv, env or {}, shared_forks.key())
    return servers.strays.get(test[0], set())


def test_forking_a_family_outside_its_group_is_a_stray_and_inside_it_is_not():
    (why,) = stray(("t.py::test_a", "t.py"), SDK_APP)
    assert "plugpull.targets.openai_agents_app in xdist group t.py, not forks-agents" in why
    assert stray(("t.py::test_a", "forks-agents"), SDK_APP) == set()
    assert stray(("t.py::test_a", "t.py"), [sys.executable, "-m", "fake_framework"]) == set()  # no family's


def test_a_postgresql_target_may_fork_from_the_postgresql_group_whichever_its_family():
    dbos = [sys.executable, "-m", "plugpull.targets.dbos_refund", "--store", "postgresql"]
    test = ("t.py::test_a", shared_forks.group_name(shared_forks.POSTGRESQL))
    assert stray(test, dbos, {postgres.URL_ENV: "postgresql://127.0.0.1:1/x"}) == set()
    assert stray(test, dbos) != set()


def test_forking_a_family_under_a_second_key_is_a_stray(monkeypatch):
    servers = shared_forks.SharedForkServers(shared_forks.FAMILIES)
    servers.test = ("t.py::test_a", "forks-agents")
    servers._check(SDK_APP, {}, shared_forks.key())
    monkeypatch.setenv("PLUGPULL_SOME_SETTING", "1")
    servers.test = ("t.py::test_b", "forks-agents")
    servers._check(SDK_APP, {}, shared_forks.key())
    assert "t.py::test_a" not in servers.strays
    (why,) = servers.strays["t.py::test_b"]
    assert "with PLUGPULL_SOME_SETTING unlike t.py::test_a, which started the agents family" in why


def test_a_server_asked_for_by_a_smoke_is_checked_as_a_fork_of_its_module(monkeypatch):
    # A smoke's kernel forks from the server itself (tests/report/kernel_forks.py): asking for it is what is checked.
    monkeypatch.setattr(shared_forks.FamilyServers, "server", lambda self, python, module, env: (python, module))
    servers = shared_forks.SharedForkServers(shared_forks.FAMILIES)
    servers.test = ("t.py::test_a", "t.py")
    assert servers.server_for("plugpull.targets.openai_agents_app") == (
        sys.executable,
        "plugpull.targets.openai_agents_app",
    )
    (why,) = servers.strays["t.py::test_a"]
    assert "plugpull.targets.openai_agents_app in xdist group t.py, not forks-agents" in why
    servers.test = ("t.py::test_b", "forks-google.adk")
    servers.server_for("plugpull.targets.dbos_refund", env={postgres.URL_ENV: "the notebook's cluster"})
    assert "t.py::test_b" not in servers.strays
