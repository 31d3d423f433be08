"""The sweep: releases picked from the index's answer, a pin set per release, records per release, flips.

The index's answer is served on loopback (tests/report/fake_index.py); the end-to-end test sweeps two tiny pin sets
(six 1.16.0 and 1.17.0, compiled by uv against the real index as of their release dates: marked network) plus
a release that does not exist, in this Python's kernel: the machinery, not a framework.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
from pathlib import Path

import pytest
from builders import make_repo
from fake_index import served

from plugpull.report.harness import environment, flips, issue_body, package_index, pages, pipeline, summary, sweep
from plugpull.report.harness.finding import load_all, read_once


def six_page(upload_times: bool = True) -> dict:
    """six's page as the JSON simple API gives it: a wheel per release, 1.16.0rc1 among them."""
    files = []
    for version, day in (("1.10.0", "2015-10-07"), ("1.15.0", "2020-05-21"), ("1.16.0rc1", "2021-05-01"),
                         ("1.16.0", "2021-05-05"), ("1.17.0", "2024-12-04")):  # fmt: skip
        entry = {"filename": f"six-{version}-py2.py3-none-any.whl", "url": f"six-{version}.whl", "hashes": {}}
        if upload_times:
            entry["upload-time"] = f"{day}T12:00:00.000000Z"
        files.append(entry)
    return {
        "meta": {"api-version": "1.1"},
        "name": "six",
        "files": files,
        "versions": [f["filename"].split("-")[1] for f in files],
    }


def test_the_index_lists_the_final_releases_in_a_pep_440_range_oldest_first_with_their_upload_days():
    with served({"six": six_page()}) as url:
        project, chosen = sweep.listed("six", ">=1.15", package_index.Index(url))
    assert chosen == ["1.15.0", "1.16.0", "1.17.0"]  # no 1.16.0rc1
    assert project.upload_time("1.16.0") == dt.datetime(2021, 5, 5, 12, tzinfo=dt.timezone.utc)
    assert sweep.select(project.versions, "") == ["1.10.0", "1.15.0", "1.16.0", "1.17.0"]


def test_an_index_without_upload_times_is_one_line_of_bad_input_before_anything_runs():
    with served({"six": six_page(upload_times=False)}) as url, pytest.raises(sweep.SweepError) as raised:
        sweep.listed("six", ">=1.15", package_index.Index(url))
    assert str(raised.value) == (
        f"{url} gives no upload time (PEP 700 upload-time) for six's releases: a sweep resolves each release as of "
        "its upload day; use an index that serves them (https://pypi.org/simple/ does)"
    )


def test_a_range_with_no_release_and_a_project_the_index_lacks_are_one_line_each():
    with served({"six": six_page()}) as url:
        with pytest.raises(sweep.SweepError, match=r"no release of six in '>=2' on .* \(its newest: 1.10.0, 1.15.0, "):
            sweep.listed("six", ">=2", package_index.Index(url))
        with pytest.raises(sweep.SweepError, match=r"/simple/nope/ \(default\): no such project$"):
            sweep.listed("nope", "", package_index.Index(url))


def test_a_range_that_is_not_pep_440_is_one_line_of_bad_input():
    with pytest.raises(sweep.SweepError, match="not a PEP 440 range"):
        sweep.select(["1.0"], "from 1.0")
    with pytest.raises(sweep.SweepError, match="not a PEP 440 range"):  # before the index is asked
        sweep.listed("six", "from 1.0", package_index.Index("http://127.0.0.1:9/simple/"))


def test_a_generated_in_pins_the_release_under_a_generated_header_and_frees_its_siblings_bounds():
    source = (
        "# hand-written\nlanggraph==1.2.24\nlanggraph-checkpoint-sqlite>=3.1,<3.2\nipykernel\n"
        "pydantic-ai-slim[dbos]>=1 ; python_version >= '3.11'\n"
    )
    released = dt.datetime(2025, 10, 1, 12, tzinfo=dt.timezone.utc)
    text = sweep.in_text(source, "langgraph", "1.0.0", released + sweep.RELEASE_SLACK, released)
    assert text.startswith(sweep.GENERATED)
    assert "--exclude-newer 2025-10-02T12:00:00+00:00" in text.splitlines()[0]
    assert text.splitlines()[2:] == [
        "langgraph==1.0.0",
        "langgraph-checkpoint-sqlite",
        "ipykernel",
        "pydantic-ai-slim[dbos] ; python_version >= '3.11'",
    ]


def test_a_record_that_failed_makes_every_swept_line_cannot_run_with_its_reason(tmp_path):
    root = demo(tmp_path)
    finding = load_all(root)["demo"]
    doc = {"pin": "six-1.0.0", "error": "environment: cannot resolve six==1.0.0", "results": []}
    [cell] = sweep.cells(finding, "six", doc).values()
    assert not cell.runnable and cell.reason == "environment: cannot resolve six==1.0.0"


NOTEBOOK = """
from plugpull.report.kernel import notebook as nb
from plugpull.results import Result, Verdict
env = nb.environment("six", plugpull_commit)
version = "1.17.0" if pin == "p1" else pin.rsplit("-", 1)[1]
env["versions"]["six"] = version  # the kernel here is the test's Python: the pin set names the release
verdict = Verdict.FAIL if version == "1.16.0" else Verdict.PASS
r = Result(verdict, "kill-mid-tool", "after-effect", "six x", "synthetic", framework="six", version=version,
           evidence={"counts": {}})
nb.write_record(results_path, finding="demo", pin=pin, env=env, parameters={}, results=[r], scenario_seconds=0.1)
"""

CLAIM = """
[[claims]]
point = "after-effect"
kind = "app"
because = "the demo notebook writes a FAIL on 1.16.0 itself"
expect = [{ versions = "<1.17", verdict = "FAIL" }, { versions = ">=1.17", verdict = "PASS" }]
"""


def demo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo", (NOTEBOOK,))
    toml = root / "findings" / "demo" / "finding.toml"
    toml.write_text(toml.read_text() + CLAIM)
    (root / "findings" / "demo" / "pins" / "p1.in").write_text("six==1.17.0\n")
    return root


@pytest.mark.network  # uv pip compile resolves six against the index (uv's cache may answer)
def test_a_bisecting_sweep_generates_locked_pin_sets_records_cannot_run_and_names_the_verified_flip(
    tmp_path, forked_kernel, monkeypatch
):
    monkeypatch.setenv("PLUGPULL_CACHE_DIR", str(tmp_path / "cache"))
    root = demo(tmp_path)
    finding = load_all(root)["demo"]

    def run_pin(pin, error):
        def make_env(job):
            if error is not None:
                raise RuntimeError(error)
            job.pin.check_locked()  # the generated lock is hash-locked
            return forked_kernel

        pipeline.run(pipeline.Job(finding, pin, {}), commit="abc", make_env=make_env)

    said = []
    # The days six's releases were uploaded (https://pypi.org/simple/six/); 1.99.0 was never released.
    days = {
        "1.16.0": dt.datetime(2021, 5, 5, 14, 18, tzinfo=dt.timezone.utc),
        "1.17.0": dt.datetime(2024, 12, 4, 17, 35, tzinfo=dt.timezone.utc),
    }
    project = package_index.Project("six", package_index.configured(start=root), ["1.16.0", "1.17.0", "1.99.0"], days)
    found = sweep.run(
        finding,
        spec=">=1.16",
        bisect=True,
        run_pin=run_pin,
        project=project,
        versions=["1.16.0", "1.17.0", "1.99.0"],
        say=said.append,
    )
    pins = root / "findings" / "demo" / "pins"
    # 1.17.0 keeps the hand-written pin set p1; 1.16.0 gets a generated one; 1.99.0 does not exist.
    assert sorted(p.name for p in pins.iterdir()) == ["p1.in", "p1.txt", "six-1.16.0.in", "six-1.16.0.txt"]
    assert (pins / "six-1.16.0.in").read_text().startswith(sweep.GENERATED)
    assert "six==1.16.0 \\" in (pins / "six-1.16.0.txt").read_text()
    assert "six-1.16.0" in [p.name for p in load_all(root)["demo"].pins]

    m = summary.matrix(root, "demo")
    cells = {c.version: c.cells["after-effect"] for c in m.columns}
    assert cells["1.16.0"].verdict == "FAIL" and cells["1.17.0"].verdict == "PASS"
    assert not cells["1.99.0"].runnable and "gives no upload time for six 1.99.0" in cells["1.99.0"].reason
    assert [(f.before, f.after, f.verified) for f in found] == [("1.16.0", "1.17.0", True)]
    assert any("verified: both sides run" in line for line in said)
    assert json.loads((root / "findings" / "demo" / "sweep.json").read_text())["releases"] == [
        "1.16.0",
        "1.17.0",
        "1.99.0",
    ]

    body = issue_body.render(root, load_all(root)["demo"])
    assert "from **1.17.0**" in body and "uv run plugpull report --finding demo --pin six-1.16.0 --pin p1" in body
    pages.write(root)  # what the CLI does after a sweep
    assert pages.check(root) == []


def test_the_summary_notebook_writes_an_html_with_the_heatmap_as_svg_text_and_the_cells_as_a_table(
    tmp_path, forked_kernel, monkeypatch
):
    root = demo(tmp_path)
    finding = load_all(root)["demo"]
    run = pipeline.run(pipeline.Job(finding, finding.pins[0], {}), commit="abc", make_env=lambda job: forked_kernel)
    assert run.error is None
    (root / "notebooks" / "summary.ipynb").write_bytes(
        (Path(__file__).parents[2] / "notebooks" / "summary.ipynb").read_bytes()
    )
    monkeypatch.setattr(environment, "current", lambda prefix: forked_kernel)
    html = summary.write(root, "demo").read_text()
    assert "1.17.0" in html and "no flip" in html
    encoded = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', html)
    figure = base64.b64decode(encoded.group(1)).decode()
    assert "PASS ✓" in figure and "dc:date" not in figure  # the heatmap's text is text; no date in it
    assert "data:image/png" not in html and '<table class="cells">' in html and "dataframe" not in html


def test_an_error_run_gives_its_reason_from_the_last_line_of_the_targets_stderr_without_paths():
    result = {
        "verdict": "ERROR",
        "message": "a clean run (no kill) ended (exit code 1)",
        "stderr": "Traceback ...\nImportError: cannot import name 'step' from 'agent_framework' (/venv/x/__init__.py)\n",
    }
    assert sweep.error_reason(result) == (
        "a clean run (no kill) ended (exit code 1): ImportError: cannot import name 'step' from 'agent_framework'"
    )


def test_the_committed_upgrade_records_reach_the_summary_of_their_framework_one_cell_per_variant():
    root = Path(__file__).parents[2]
    # The committed records, read and validated once for both frameworks (as `report check` reads them).
    with read_once():
        ups = summary.upgrades(root, "agent-framework-core")
        openai_agents = summary.upgrades(root, "openai-agents")
    refused = [u for u in ups if (u.source, u.target) == ("1.19.0", "1.20.0")]
    assert {u.line for u in refused} >= {"before-effect variant=swap", "after-effect variant=control"}
    assert all(u.verdict == "FAIL" and u.message.startswith("refused the saved run") for u in refused)
    assert {(u.source, u.target) for u in openai_agents} >= {("0.22.2", "0.24.0")}


def test_a_record_of_another_framework_that_installs_the_package_is_no_measurement_of_it():
    # Pydantic AI's pin sets install DBOS without running a DBOS line: its DBOS version is no release measured.
    assert sweep.is_about({"framework": "dbos", "results": []}, "dbos")
    assert sweep.is_about({"results": [{"framework": "pydantic-ai-slim"}]}, "dbos")  # a record naming none
    assert sweep.is_about({"framework": "pydantic-ai-slim", "results": [{"framework": "dbos"}]}, "dbos")
    assert not sweep.is_about({"framework": "pydantic-ai-slim", "results": [{"framework": "pydantic-ai-slim"}]}, "dbos")


def column(version: str, cells: dict) -> summary.Column:
    return summary.Column(version, f"six-{version}", "2026-11-30", f"20261130T00000{version[0]}Z", "r.html", cells)


def test_the_cells_table_has_no_index_column_and_lists_each_reason_a_release_cannot_run_once():
    reason = "a clean run ended (exit code 1): ImportError: cannot import name 'step'"
    m = summary.Matrix(
        "demo",
        "six",
        ["after-effect", "before-effect"],
        {},
        [
            column("1.0", {"after-effect": flips.cannot_run(reason), "before-effect": flips.cannot_run(reason)}),
            column(
                "2.0",
                {
                    "after-effect": flips.cell_of(["FAIL"], False, ""),
                    "before-effect": flips.cell_of(["PASS"], False, ""),
                },
            ),
        ],
        ["1.0", "2.0"],
    )
    table = summary.cells_table(m, m.columns)
    assert table.startswith('<table class="cells"><thead><tr><th>line</th><th><a href="r.html">1.0</a>')
    assert table.count("cannot run – <sup>1</sup>") == 2 and table.count(reason.replace("'", "&#x27;")) == 1
    assert "<td>FAIL –</td>" in table and "<td>PASS –</td>" in table


def test_every_error_row_of_the_upgrades_table_says_why():
    up = summary.Upgrade(
        "six", "after-effect", "after-effect", "1.0", "2.0", "ERROR", "20261130T000000Z", "2026-11-30", "ended",
        "demo/2026-11-30/r.html", "ended: RuntimeError: checkpoint refused",
    )  # fmt: skip
    table = summary.upgrades_table([up])
    assert "<td>ERROR</td><td>ended: RuntimeError: checkpoint refused</td>" in table
    assert '<a href="../demo/2026-11-30/r.html">20261130T000000Z</a>' in table


@pytest.mark.parametrize(("releases", "sizes"), [(1, [1]), (7, [7]), (8, [4, 4]), (10, [5, 5]), (15, [5, 5, 5])])
def test_releases_are_split_into_even_groups_of_at_most_seven(releases, sizes):
    m = summary.Matrix("demo", "six", [], {}, [column(f"{i}.0", {}) for i in range(releases)], [])
    assert [len(group) for group in summary.chunks(m)] == sizes
