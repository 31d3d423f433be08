"""tests/shared_forks.py: what keeps a pytest process's servers of one framework family apart, and only that; and which
xdist group the PostgreSQL tests share."""

import os
import sys
from importlib.machinery import PathFinder
from pathlib import Path

import shared_forks
from plugpull import postgres
from plugpull.targets import BUILT_INS


def test_no_script_of_tests_agents_has_the_name_of_a_module_found_elsewhere():
    # What lets a server's key leave tests/agents out of PYTHONPATH: with it or without it on sys.path, every import
    # but of these scripts finds the same module. The path searched is this process's (the tests' folders) and the
    # working directory a `python -m` server puts first: more than a server's.
    path = [p for p in [*sys.path, os.getcwd()] if p != shared_forks.AGENTS]
    scripts = sorted(p.stem for p in Path(shared_forks.AGENTS).glob("*.py"))
    assert "fake_framework" in scripts
    assert {name: PathFinder.find_spec(name, path).origin for name in scripts if PathFinder.find_spec(name, path)} == {}


def test_a_servers_key_leaves_out_tests_agents_and_the_per_test_variables_only(monkeypatch):
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


def test_the_postgresql_tests_are_in_google_adks_group():
    postgresql = {name for name, b in BUILT_INS.items() if b.server == postgres.URL_ENV}
    assert "google-adk-approval-postgresql" in postgresql
    adk = shared_forks.group("google.adk").args
    assert all(shared_forks.group_of_built_in(name).args == adk for name in postgresql)
    assert shared_forks.group_of_built_in("dbos").args != adk
