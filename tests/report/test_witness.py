"""Witnesses run for real: a stdlib script that forks, SIGKILLs its child and counts in sqlite, run by the
witness runner alone and by the report pipeline after the notebook; its output lands in the record and the HTML."""

import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest
from builders import make_repo

from plugpull.report.harness import machine_paths, pipeline, witness
from plugpull.report.harness.finding import load_all
from plugpull.report.kernel import record

SCRIPT = Path(__file__).with_name("fixtures") / "witness_kill.py"

WRITES_A_FAIL = """
from plugpull.report.kernel import notebook as nb
from plugpull.results import Result, Verdict
env = nb.environment("six", plugpull_commit)
r = Result(Verdict.FAIL, "kill-mid-tool", "after-effect", "six x", "refund duplicated", framework="six",
           version="1.17.0", options={"key": "none"}, evidence={"counts": {"refund": 2}})
nb.write_record(results_path, finding="demo", pin=pin, env=env, parameters={}, results=[r], scenario_seconds=0.1)
"""

CLAIM = """
[[claims]]
point = "after-effect"
options = { key = "none" }
kind = "documented"
because = "the docs put idempotency of side effects on the user"
quote = { url = "https://docs.example.org/durable", text = "ensure that your workflow is idempotent" }
witness = { script = "witness/kill.py", args = ["--key", "none"], repeats = 2, timeout = 60 }
expect = [{ versions = ">=1", verdict = "FAIL", counts = { refund = 2 } }]

[[pins]]"""


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return scratch


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_run_keeps_the_last_json_line_the_exit_code_and_a_bounded_stderr_tail(private_tmp):
    run = witness.run_once([sys.executable, str(SCRIPT), "--key", "none"], timeout=60)
    assert run["exit_code"] == 1 and not run["timed_out"]
    assert run["output"]["verdict"] == "FAIL" and run["output"]["counts"] == {"refund": 2}
    assert 0 < len(run["stderr_tail"]) <= witness.STDERR_TAIL
    keyed = witness.run_once([sys.executable, str(SCRIPT), "--key", "order-1"], timeout=60)
    assert keyed["exit_code"] == 0 and keyed["output"]["counts"] == {"refund": 1}


def test_a_run_is_in_a_fresh_cwd_that_is_removed_and_sees_no_plugpull_or_secret_variables(private_tmp, monkeypatch):
    monkeypatch.setenv("PLUGPULL_CACHE_DIR", "/somewhere")
    monkeypatch.setenv("SERVICE_API_KEY", "sk-abcdef")
    monkeypatch.setenv("PYTHONPATH", "/work/src")
    run = witness.run_once([sys.executable, str(SCRIPT)], timeout=60)
    detail = run["output"]["detail"]
    assert detail["env_seen"] == []
    assert Path(detail["cwd"]).parent == Path(detail["tmpdir"]).parent
    assert Path(detail["cwd"]).is_relative_to(private_tmp) and not Path(detail["cwd"]).exists()
    assert list(private_tmp.iterdir()) == []


def test_a_witness_that_outlives_its_timeout_is_killed_with_what_it_forked_and_leaves_nothing(private_tmp):
    began = time.monotonic()
    run = witness.run_once([sys.executable, str(SCRIPT), "--sleep", "30"], timeout=2)
    assert run["timed_out"] and run["exit_code"] is None and run["output"] is None
    assert run["problem"] == "timed out after 2 s" and time.monotonic() - began < 20
    sleeper = int(run["stderr_tail"].split("sleeper ")[1].split()[0])
    deadline = time.monotonic() + 5
    while alive(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(sleeper)
    assert list(private_tmp.iterdir()) == []


def test_a_script_without_a_json_line_or_that_cannot_start_is_stored_with_why(tmp_path, private_tmp):
    quiet = tmp_path / "quiet.py"
    quiet.write_text("import sys\nprint('done')\nsys.exit(1)\n")
    run = witness.run_once([sys.executable, str(quiet)], timeout=30)
    assert run["output"] is None and run["problem"] == "its last stdout line is not JSON: 'done'"
    missing = witness.run_once([str(tmp_path / "no-python")], timeout=30)
    assert missing["problem"].startswith("could not start:")


def demo_repo(root: Path, notebook: str = WRITES_A_FAIL) -> Path:
    make_repo(root, (notebook,))
    toml = root / "findings" / "demo" / "finding.toml"
    toml.write_text(toml.read_text().replace("[[pins]]", CLAIM.strip(), 1))
    (root / "findings" / "demo" / "witness").mkdir()
    shutil.copy(SCRIPT, root / "findings" / "demo" / "witness" / "kill.py")
    return root


def test_the_report_runs_the_witness_after_the_notebook_and_stores_it_in_a_schema_3_record(
    tmp_path, forked_kernel, private_tmp
):
    root = demo_repo(tmp_path / "repo")
    finding = load_all(root)["demo"]
    outcome = pipeline.run(pipeline.Job(finding, finding.pins[0], {}), commit="abc", make_env=lambda j: forked_kernel)
    assert outcome.error is None, outcome.error
    doc = json.loads(outcome.files[".json"].read_text())
    assert doc["schema"] == 3 and record.problems(outcome.files[".json"], outcome.files[".json"].parents[1]) == []
    (entry,) = doc["witnesses"]
    assert (entry["claim"], entry["script"], entry["args"], entry["error"]) == (
        "after-effect key=none",
        "witness/kill.py",
        ["--key", "none"],
        None,
    )
    assert [r["exit_code"] for r in entry["runs"]] == [1, 1]
    assert all(r["output"]["counts"] == {"refund": 2} for r in entry["runs"])
    assert all(r["output"]["detail"]["start_python"] is None for r in entry["runs"])  # not a pin pair
    assert doc["load"]["cores"] == os.cpu_count() and len(doc["load"]["start"]) == len(doc["load"]["end"]) == 3
    assert "witnesses" in doc["pipeline"]["phases"]
    html = outcome.files[".html"].read_text()
    assert "harness: FAIL refund=2 · witness: FAIL ×2 refund=2 (agrees)" in html
    assert outcome.status == "reproduces"
    assert list(private_tmp.iterdir()) == []


def test_a_pin_pair_gives_its_witness_the_start_releases_python(tmp_path, forked_kernel, private_tmp):
    root = demo_repo(tmp_path / "repo")
    toml = root / "findings" / "demo" / "finding.toml"
    toml.write_text(
        toml.read_text().replace('requirements = "pins/p1.txt"', 'from = "pins/p1.txt"\nrequirements = "pins/p1.txt"')
    )
    finding = load_all(root)["demo"]
    both = replace(forked_kernel, start_python=Path(sys.executable), start_lock_sha256="a" * 64)
    outcome = pipeline.run(pipeline.Job(finding, finding.pins[0], {}), commit=None, make_env=lambda j: both)
    (entry,) = json.loads(outcome.files[".json"].read_text())["witnesses"]
    # The record names the interpreter by its role, never its path (one path here: the pin set's python first).
    assert [r["output"]["detail"]["start_python"] for r in entry["runs"]] == [machine_paths.PIN_PYTHON] * 2


def test_a_witness_that_disagrees_shows_why_in_the_html_and_a_missing_script_is_stored_as_an_error(
    tmp_path, forked_kernel, private_tmp
):
    root = demo_repo(tmp_path / "repo")
    toml = root / "findings" / "demo" / "finding.toml"
    toml.write_text(toml.read_text().replace('args = ["--key", "none"], repeats = 2', 'args = ["--key", "order-1"]'))
    finding = load_all(root)["demo"]
    outcome = pipeline.run(pipeline.Job(finding, finding.pins[0], {}), commit=None, make_env=lambda j: forked_kernel)
    html = outcome.files[".html"].read_text()
    assert "witness: PASS refund=1 (disagrees: witness PASS refund=1, claimed FAIL, refund=2)" in html
    assert "witness disagrees:" in html  # beside the headline too, not only in the table

    (root / "findings" / "demo" / "witness" / "kill.py").unlink()
    outcome = pipeline.run(pipeline.Job(finding, finding.pins[0], {}), commit=None, make_env=lambda j: forked_kernel)
    (entry,) = json.loads(outcome.files[".json"].read_text())["witnesses"]
    assert entry["runs"] == [] and entry["error"] == "findings/demo/witness/kill.py does not exist"
    page = re.sub(r"<[^>]+>", "", outcome.files[".html"].read_text())  # a path is kept whole in a span
    assert "could not run: findings/demo/witness/kill.py does not exist" in page


def test_a_finding_can_run_another_findings_witness_but_nothing_outside_findings(tmp_path, private_tmp):
    root = demo_repo(tmp_path / "repo")
    shared = root / "findings" / "other" / "witness"
    shared.mkdir(parents=True)
    shutil.move(root / "findings" / "demo" / "witness" / "kill.py", shared / "kill.py")
    toml = root / "findings" / "demo" / "finding.toml"
    toml.write_text(toml.read_text().replace('script = "witness/kill.py"', 'script = "../other/witness/kill.py"'))
    doc = {"pin": "p1", "framework": "six", "versions": {"six": "1.17.0"}, "results": [], "error": None}
    (entry,) = witness.run_all(load_all(root)["demo"], doc, Path(sys.executable))
    assert entry["error"] is None and [r["exit_code"] for r in entry["runs"]] == [1, 1]
    (tmp_path / "outside.py").write_text("print('{}')\n")
    toml.write_text(toml.read_text().replace("../other/witness/kill.py", "../../../outside.py"))
    (entry,) = witness.run_all(load_all(root)["demo"], doc, Path(sys.executable))
    assert entry["error"] == "../../../outside.py is outside findings/" and entry["runs"] == []
