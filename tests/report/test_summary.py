"""A finding's summary.html against its records: `report check` names a page that misses a newer record."""

from builders import make_repo, put_record, record

from plugpull.report.harness import pages, summary
from plugpull.report.harness.finding import load_all
from plugpull.report.kernel.record import run_id

CLAIM = """
[[claims]]
point = "after-effect"
options = { mode = "a" }
expect = [{ versions = ">=1", verdict = "PASS" }]
"""


def demo(root):
    make_repo(root)
    toml = root / "findings" / "demo" / "finding.toml"
    toml.write_text(toml.read_text().replace("[[pins]]", CLAIM.strip() + "\n\n[[pins]]", 1))
    return root


def test_a_summary_that_shows_the_newest_record_of_each_release_is_up_to_date(tmp_path):
    root = demo(tmp_path / "repo")
    doc = record(version="1.0")
    put_record(root, doc)
    (root / "findings" / "demo" / "summary.html").write_text(f"<html>1.0 run {run_id(doc)}</html>")
    assert [c.run_id for c in summary.matrix(root, "demo").columns] == [run_id(doc)]
    assert summary.problems(root, load_all(root)["demo"]) == []


def test_a_record_newer_than_the_summary_makes_it_stale_with_the_command_that_redraws_it(tmp_path):
    root = demo(tmp_path / "repo")
    old = record(version="1.0", date="2026-11-01")
    put_record(root, old)
    (root / "findings" / "demo" / "summary.html").write_text(f"<html>1.0 run {run_id(old)}</html>")
    new = record(version="1.0", date="2026-11-02")
    put_record(root, new)
    assert summary.problems(root, load_all(root)["demo"]) == [
        f"findings/demo/summary.html does not show the newest record of 1.0 (p1, run {run_id(new)}): "
        "run `plugpull report summary demo`"
    ]
    pages.write(root)
    assert any("summary.html does not show" in p for p in pages.check(root))


def test_a_finding_without_a_summary_has_no_summary_problem(tmp_path):
    root = demo(tmp_path / "repo")
    put_record(root, record(version="1.0"))
    assert summary.problems(root, load_all(root)["demo"]) == []
