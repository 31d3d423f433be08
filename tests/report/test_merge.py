"""`plugpull report merge`: records of split runs (one job per pin set, as the CI matrix runs them) merged into
a checkout equal one whole run; records are never replaced, and a conflicting run id is one line, exit 2."""

import json
import shutil
from pathlib import Path

import pytest
from builders import make_repo, one_line, put_record, record, report
from tiny import page, records, tiny_repo

from plugpull.report.harness import pipeline
from plugpull.report.harness.finding import load_all


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PLUGPULL_CACHE_DIR", str(tmp_path / "cache"))


def split_run(root: Path, pin: str, kernel) -> Path:
    """One CI matrix job: a fresh checkout running one pin set; its findings/demo/<date>/ folder."""
    finding = load_all(root)["demo"]
    outcome = pipeline.run(pipeline.Job(finding, finding.pin(pin), {}), commit=None, make_env=lambda job: kernel)
    assert outcome.error is None, outcome.error
    return outcome.files[".json"].parent


def test_merging_split_runs_equals_one_whole_run(whole_run, tmp_path, forked_kernel, capsys):
    p1_folder = split_run(tiny_repo(tmp_path / "job-p1"), "p1", forked_kernel)
    p2_folder = split_run(tiny_repo(tmp_path / "job-p2"), "p2", forked_kernel)
    artifact = tmp_path / "artifacts" / "records-demo-p2"  # as upload-artifact lays it out: the files alone
    shutil.copytree(p2_folder, artifact)
    merged = tiny_repo(tmp_path / "merged")

    code, out, err = report(capsys, "merge", str(p1_folder), str(artifact.parent), root=merged)
    assert code == 0, err
    assert "2 new record(s)" in out
    assert records(merged) == records(whole_run)
    assert page(merged) == page(whole_run)
    assert report(capsys, "check", root=merged)[0] == 0

    code, out, _ = report(capsys, "merge", str(p1_folder), str(artifact.parent), root=merged)
    assert code == 0 and "0 new record(s)" in out  # the same runs again: nothing to add


def incoming(folder: Path, doc: dict) -> Path:
    path = put_record(folder, doc)
    for suffix in (".html", ".ipynb"):
        path.with_name(path.stem + suffix).write_text(f"{doc['pin']} {suffix}")
    return path.parents[3]


def merge_exit_2(capsys, root: Path, *folders: str) -> str:
    code, _, err = report(capsys, "merge", *folders, root=root)
    assert code == 2, err
    return one_line(err)


def test_a_run_id_already_there_with_other_content_is_one_line_exit_2_and_nothing_is_copied(tmp_path, capsys):
    root = make_repo(tmp_path / "repo")
    incoming(root, record(verdicts=("PASS",)))
    before = sorted(p.name for p in (root / "findings" / "demo").rglob("*"))
    other = tmp_path / "other"
    incoming(other, record(verdicts=("FAIL",)))  # the same pin and run id, other verdicts
    incoming(other, record(started="T11:00:00+00:00"))  # a new run: must not be copied either
    line = merge_exit_2(capsys, root, str(other))
    assert line.startswith(
        "plugpull report merge: conflict: findings/demo/2026-11-01/p1-20261101T100000Z.* is already there"
    )
    assert sorted(p.name for p in (root / "findings" / "demo").rglob("*")) == before
    assert not (root / "docs" / "results.md").exists()


def test_an_invalid_or_unknown_record_and_a_missing_folder_are_one_line_exit_2(tmp_path, capsys):
    root = make_repo(tmp_path / "repo")
    unknown = tmp_path / "unknown"
    incoming(unknown, record(finding="nope"))
    assert "finding 'nope' is not in this repository" in merge_exit_2(capsys, root, str(unknown))
    bad_pin = tmp_path / "bad-pin"
    incoming(bad_pin, record(pin="p9"))
    assert "has no pin set 'p9'" in merge_exit_2(capsys, root, str(bad_pin))
    no_html = tmp_path / "no-html"
    path = incoming(no_html, record())
    next(path.rglob("*.html")).unlink()
    assert "no .html beside it" in merge_exit_2(capsys, root, str(no_html))
    renamed = tmp_path / "renamed"
    json_path = next(incoming(renamed, record()).rglob("*.json"))
    json_path.rename(json_path.with_name("p1-20261101T120000Z.json"))
    assert "but the file is p1-20261101T120000Z.json" in merge_exit_2(capsys, root, str(renamed))
    assert "is not a folder" in merge_exit_2(capsys, root, str(tmp_path / "absent"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no run record" in merge_exit_2(capsys, root, str(empty))
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "x.json").write_text(json.dumps([1]))
    assert "not a run record" in merge_exit_2(capsys, root, str(garbage))
    assert sorted(p.name for p in (root / "findings" / "demo").iterdir()) == ["finding.toml", "pins"]


def test_merge_takes_no_finding_or_pin(tmp_path, capsys):
    root = make_repo(tmp_path / "repo")
    code, _, err = report(capsys, "merge", "x", "--finding", "demo", root=root)
    assert code == 2 and one_line(err) == "plugpull report merge: unrecognized arguments: --finding demo"
