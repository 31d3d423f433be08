"""One report run end to end in this Python's kernel: files in place, errors still reported, no secrets, no leftovers."""

import json
import os
import re
import tempfile
from pathlib import Path

import pytest
from builders import make_repo

from plugpull.report.harness import pages, pipeline
from plugpull.report.harness.finding import load_all
from plugpull.report.kernel import record

SECRET = "sk-test-4f9a1c2e77"

WRITES_A_RECORD = """
from plugpull.report.kernel import notebook as nb
from plugpull.results import Result, Verdict
env = nb.environment("six", plugpull_commit)
r = Result(Verdict.PASS, "kill-mid-tool", "after-effect", "six x", "ok", framework="six", version="1.17.0",
           evidence={"counts": {"refund": 1}})
nb.write_record(results_path, finding="demo", pin=pin, env=env, parameters={}, results=[r], scenario_seconds=0.5)
"""


def job_for(root: Path, **overrides) -> pipeline.Job:
    finding = load_all(root)["demo"]
    return pipeline.Job(finding, finding.pins[0], overrides)


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return scratch


def with_a_fail_claim(root: Path) -> Path:
    """The demo finding claiming a FAIL after the effect on every release: its one PASS line does not reproduce it."""
    toml = root / "findings" / "demo" / "finding.toml"
    text = toml.read_text().replace(
        "[[pins]]",
        '[[claims]]\npoint = "after-effect"\nexpect = [{ versions = ">=1", verdict = "FAIL" }]\n\n[[pins]]',
        1,
    )
    toml.write_text(text)
    return root


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, current_kernel):
    """One pin set run twice (commit "one", then "two") with private temp dirs, and this process's children before
    the runs: shared by the tests below that read the files, the judgement, the leftovers and the rerun (a
    kernel run each, instead of one or two per test). Children this process already had (a LocalCluster test before
    this one leaves multiprocessing's resource tracker, which lives as long as the process) are not the runs'."""
    tmp_path = tmp_path_factory.mktemp("two-runs")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    root = with_a_fail_claim(make_repo(tmp_path / "repo", (WRITES_A_RECORD,)))
    before = set(children_of(os.getpid()))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tempfile, "tempdir", str(scratch))
        first = pipeline.run(job_for(root), commit="one", make_env=lambda job: current_kernel)
        second = pipeline.run(job_for(root), commit="two", make_env=lambda job: current_kernel)
    left = {"temp files": list(scratch.iterdir()), "children": set(children_of(os.getpid())) - before}
    return first, second, left


def test_a_run_writes_the_dated_notebook_html_and_json_with_phase_times(two_runs):
    outcome, _, _ = two_runs
    assert outcome.error is None and outcome.verdicts == {"PASS": 1}
    folder = outcome.files[".json"].parent
    doc = json.loads(outcome.files[".json"].read_text())
    assert re.fullmatch(r"\d{8}T\d{6}Z", doc["run_id"])
    name = f"p1-{doc['run_id']}"
    assert sorted(p.name for p in folder.glob(f"{name}.*")) == [f"{name}.html", f"{name}.ipynb", f"{name}.json"]
    assert record.problems(outcome.files[".json"], folder.parent) == []
    assert doc["versions"]["plugpull_commit"] == "one" and doc["framework"] == "six"
    assert {"kernel_start", "cells", "nbconvert", "scenario", "total"} <= set(doc["pipeline"]["phases"])


def test_a_failing_notebook_still_yields_an_html_with_the_error_and_a_json_with_an_error_field(
    tmp_path, current_kernel, private_tmp
):
    root = make_repo(tmp_path / "repo", ("raise RuntimeError('the scenario broke')",))
    outcome = pipeline.run(job_for(root), commit=None, make_env=lambda job: current_kernel)
    assert outcome.error == "In [3] raised RuntimeError: the scenario broke"
    assert "the scenario broke" in outcome.files[".html"].read_text()
    doc = json.loads(outcome.files[".json"].read_text())
    assert doc["error"] == outcome.error and doc["results"] == []
    assert record.problems(outcome.files[".json"], outcome.files[".json"].parent.parent) == []
    assert "notebook failed: In [3] raised RuntimeError" in pages.lines_csv(root)


def test_an_environment_that_cannot_be_built_still_yields_an_html_and_a_json_with_an_error_field(tmp_path, private_tmp):
    root = make_repo(tmp_path / "repo", (WRITES_A_RECORD,))

    def broken(job):
        raise RuntimeError("uv pip sync p1.txt failed (exit 1): no space left")

    outcome = pipeline.run(job_for(root), commit=None, make_env=broken)
    assert outcome.error.startswith("environment: uv pip sync p1.txt failed")
    assert "no space left" in outcome.files[".html"].read_text()
    assert json.loads(outcome.files[".json"].read_text())["error"] == outcome.error


def test_no_secret_env_value_reaches_the_notebook_html_or_json_even_when_a_cell_prints_it(
    tmp_path, current_kernel, private_tmp, monkeypatch
):
    monkeypatch.setenv("PLUGPULL_TEST_API_KEY", SECRET)
    leaks = """
    import os
    print("kernel sees:", os.environ.get("PLUGPULL_TEST_API_KEY"))
    print("parameter says:", note)
    """
    root = make_repo(
        tmp_path / "repo",
        (leaks, WRITES_A_RECORD),
        parameters="pin = 'x'\nplugpull_commit = None\nresults_path = 'r.json'\nnote = ''",
    )
    outcome = pipeline.run(job_for(root, note=f"key={SECRET}"), commit=None, make_env=lambda job: current_kernel)
    assert outcome.error is None
    for path in outcome.files.values():
        assert SECRET not in path.read_text(), path.name
    executed = outcome.files[".ipynb"].read_text()
    assert "kernel sees: None" in executed  # the kernel never had it
    assert "parameter says: key=[redacted]" in executed  # and what came another way is blanked
    pages.write(root)
    assert SECRET not in (root / "docs" / "results.md").read_text()


def test_a_run_leaves_no_temp_files_and_no_kernel_process(two_runs):
    _, _, left = two_runs
    assert left == {"temp files": [], "children": set()}


def test_a_rerun_never_replaces_a_record_and_its_html_lists_the_earlier_run(two_runs):
    first, second, _ = two_runs
    assert first.files[".json"] != second.files[".json"]
    assert json.loads(first.files[".json"].read_text())["versions"]["plugpull_commit"] == "one"
    assert json.loads(second.files[".json"].read_text())["versions"]["plugpull_commit"] == "two"
    html = second.files[".html"].read_text()
    assert "Earlier runs of this pin set" in html and first.files[".html"].name in html
    assert "Earlier runs" not in first.files[".html"].read_text()
    folder = first.files[".json"].parent
    assert sorted(p.suffix for p in folder.iterdir()) == [".html", ".html", ".ipynb", ".ipynb", ".json", ".json"]


def test_two_runs_started_in_the_same_second_get_different_run_ids(tmp_path, private_tmp):
    root = make_repo(tmp_path / "repo", (WRITES_A_RECORD,))

    def broken(job):
        raise RuntimeError("no environment")

    ids = {
        json.loads(pipeline.run(job_for(root), commit=None, make_env=broken).files[".json"].read_text())["run_id"]
        for _ in range(3)
    }
    assert len(ids) == 3


def test_the_html_opens_with_the_judgement_against_the_findings_claims(two_runs):
    outcome, _, _ = two_runs  # its finding claims a FAIL (with_a_fail_claim); the line PASSes
    html = outcome.files[".html"].read_text()
    assert outcome.status == "does not reproduce", html[html.find("<h2") : html.find("<h2") + 1500]
    assert "The finding does not reproduce on six 1.17.0" in html
    assert "1 of 1 run(s) PASS, claimed FAIL" in html


WRITES_AN_UPGRADE_RECORD = """
from plugpull.report.kernel import notebook as nb
env = nb.upgrade_environment(["six"], from_python, plugpull_commit)
nb.write_record(results_path, finding="demo", pin=pin, env=env, parameters={}, results=[], scenario_seconds=0.0)
"""


def test_an_upgrade_pair_gives_the_notebook_the_start_releases_python_and_records_both_releases(
    tmp_path, current_kernel, private_tmp
):
    import sys
    from dataclasses import replace

    root = make_repo(
        tmp_path / "repo",
        (WRITES_AN_UPGRADE_RECORD,),
        parameters="pin = 'x'\nplugpull_commit = None\nresults_path = 'r.json'\nfrom_python = None",
    )
    toml = root / "findings" / "demo" / "finding.toml"
    toml.write_text(
        toml.read_text().replace('requirements = "pins/p1.txt"', 'from = "pins/p1.txt"\nrequirements = "pins/p1.txt"')
    )
    job = job_for(root)
    assert job.pin.start == job.pin.requirements and job.pin.locks() == [job.pin.start, job.pin.requirements]
    both = replace(current_kernel, start_python=Path(sys.executable), start_lock_sha256="a" * 64)
    outcome = pipeline.run(job, commit="abc", make_env=lambda job: both)
    assert outcome.error is None, outcome.error
    doc = json.loads(outcome.files[".json"].read_text())
    # A's versions are read inside A's interpreter (here the same one), never copied from a pin file.
    assert doc["upgrade"] == {"framework": "six", "from": doc["versions"]["six"], "to": doc["versions"]["six"]}
    assert doc["versions_from"]["six"] == doc["versions"]["six"]
    assert doc["pipeline"]["from_lock"] == "findings/demo/pins/p1.txt"
    assert doc["pipeline"]["from_lock_sha256"] == "a" * 64
    assert "from_python" not in doc["parameters"]
