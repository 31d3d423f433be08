"""A findings notebook whose targets run different scenarios, and the server a notebook starts for its targets."""

from __future__ import annotations

from plugpull import postgres
from plugpull.report.kernel import notebook
from plugpull.results import Result, Verdict
from plugpull.targets import BUILT_INS


def test_each_target_runs_the_points_of_its_own_scenario(monkeypatch):
    ran: list[tuple[str, str]] = []

    def record(target, points, settings, runtime):
        ran.append((target.name, *points))
        return [Result(Verdict.PASS, target.scenario, points[0], target.name, "measured")]

    monkeypatch.setattr(notebook, "run_scenario", record)
    kill = BUILT_INS["dbos"].variants[0]
    approval = BUILT_INS["fastaiagent"].variants[0]
    points = ["after-effect", "racing-resumers", "killed-after-effect"]
    results, _ = notebook.run_lines([kill, approval], points, repeats=1, seed=None, timeout=1.0)
    assert ran == [("dbos", "after-effect"), ("fastaiagent", "racing-resumers"), ("fastaiagent", "killed-after-effect")]
    assert len(results) == 3


def test_no_server_is_started_when_no_chosen_target_needs_one(monkeypatch):
    monkeypatch.setattr(postgres, "cluster", lambda: (_ for _ in ()).throw(AssertionError("started a cluster")))
    with notebook.postgres_for(list(BUILT_INS["dbos"].variants)) as servers:
        assert servers == {}


def test_a_server_named_before_the_run_is_used_as_is_and_named_in_the_record(monkeypatch):
    monkeypatch.setenv(postgres.URL_ENV, "postgresql://me@127.0.0.1:5999/postgres")
    monkeypatch.setattr(postgres, "cluster", lambda: (_ for _ in ()).throw(AssertionError("started a cluster")))
    with notebook.postgres_for(list(BUILT_INS["dbos-postgresql"].variants)) as servers:
        assert servers == {
            "postgresql": "the server at postgresql://me@127.0.0.1:5999/postgres (PLUGPULL_POSTGRES_URL was set before the run)"
        }
