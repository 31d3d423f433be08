"""`plugpull report --merge`: records of split runs (one job per pin set, as the CI matrix runs them) merged into
a checkout equal one whole run; records are never replaced, and a conflicting run id is one line, exit 2."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from builders import make_repo, put_record, record
from tiny import page, records, tiny_repo

from plugpull.report import pipeline
from plugpull.report.finding import load_all


def report(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PLUGPULL_CACHE_DIR": str(cwd.parent / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "plugpull.cli", "report", *args], capture_output=True, text=True, cwd=cwd, env=env
    )


def split_run(root: Path, pin: str, kernel) -> Path:
    """One CI matrix job: a fresh checkout running one pin set; its findings/demo/<date>/ folder."""
    finding = load_all(root)["demo"]
    outcome = pipeline.run(pipeline.Job(finding, finding.pin(pin), {}), commit=None, make_env=lambda job: kernel)
    assert outcome.error is None, outcome.error
    return outcome.files[".json"].parent


def test_merging_split_runs_equals_one_whole_run(whole_run, tmp_path, current_kernel):
    p1_folder = split_run(tiny_repo(tmp_path / "job-p1"), "p1", current_kernel)
    p2_folder = split_run(tiny_repo(tmp_path / "job-p2"), "p2", current_kernel)
    artifact = tmp_path / "artifacts" / "records-demo-p2"  # as upload-artifact lays it out: the files alone
    shutil.copytree(p2_folder, artifact)
    merged = tiny_repo(tmp_path / "merged")

    run = report("--merge", str(p1_folder), str(artifact.parent), cwd=merged)
    assert run.returncode == 0, run.stderr
    assert "2 new record(s)" in run.stdout
    assert records(merged) == records(whole_run)
    assert page(merged) == page(whole_run)
    assert report("--check", cwd=merged).returncode == 0

    again = report("--merge", str(p1_folder), str(artifact.parent), cwd=merged)
    assert again.returncode == 0 and "0 new record(s)" in again.stdout  # the same runs again: nothing to add


def incoming(folder: Path, doc: dict) -> Path:
    path = put_record(folder, doc)
    for suffix in (".html", ".ipynb"):
        path.with_name(path.stem + suffix).write_text(f"{doc['pin']} {suffix}")
    return path.parents[3]


def one_line_exit_2(run: subprocess.CompletedProcess) -> str:
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    return lines[0]


def test_a_run_id_already_there_with_other_content_is_one_line_exit_2_and_nothing_is_copied(tmp_path):
    root = make_repo(tmp_path / "repo")
    incoming(root, record(verdicts=("PASS",)))
    before = sorted(p.name for p in (root / "findings" / "demo").rglob("*"))
    other = tmp_path / "other"
    incoming(other, record(verdicts=("FAIL",)))  # the same pin and run id, other verdicts
    incoming(other, record(started="T11:00:00+00:00"))  # a new run: must not be copied either
    line = one_line_exit_2(report("--merge", str(other), cwd=root))
    assert line.startswith("plugpull report: conflict: findings/demo/2026-11-01/p1-20261101T100000Z.* is already there")
    assert sorted(p.name for p in (root / "findings" / "demo").rglob("*")) == before
    assert not (root / "docs" / "results.md").exists()


def test_an_invalid_or_unknown_record_and_a_missing_folder_are_one_line_exit_2(tmp_path):
    root = make_repo(tmp_path / "repo")
    unknown = tmp_path / "unknown"
    incoming(unknown, record(finding="nope"))
    assert "finding 'nope' is not in this repository" in one_line_exit_2(report("--merge", str(unknown), cwd=root))
    bad_pin = tmp_path / "bad-pin"
    incoming(bad_pin, record(pin="p9"))
    assert "has no pin set 'p9'" in one_line_exit_2(report("--merge", str(bad_pin), cwd=root))
    no_html = tmp_path / "no-html"
    path = incoming(no_html, record())
    next(path.rglob("*.html")).unlink()
    assert "no .html beside it" in one_line_exit_2(report("--merge", str(no_html), cwd=root))
    renamed = tmp_path / "renamed"
    json_path = next(incoming(renamed, record()).rglob("*.json"))
    json_path.rename(json_path.with_name("p1-20261101T120000Z.json"))
    assert "but the file is p1-20261101T120000Z.json" in one_line_exit_2(report("--merge", str(renamed), cwd=root))
    assert "is not a folder" in one_line_exit_2(report("--merge", str(tmp_path / "absent"), cwd=root))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no run record" in one_line_exit_2(report("--merge", str(empty), cwd=root))
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "x.json").write_text(json.dumps([1]))
    assert "not a run record" in one_line_exit_2(report("--merge", str(garbage), cwd=root))
    assert sorted(p.name for p in (root / "findings" / "demo").iterdir()) == ["finding.toml", "pins"]


def test_merge_takes_no_finding_or_pin_and_goes_alone(tmp_path):
    root = make_repo(tmp_path / "repo")
    assert "takes no --finding" in one_line_exit_2(report("--merge", "x", "--finding", "demo", cwd=root))
    assert "go one at a time" in one_line_exit_2(report("--merge", "x", "--check", cwd=root))
