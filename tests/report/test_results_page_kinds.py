"""Kinds and the inconclusive mark on the generated pages, from hand-built findings and records: the matrix,
a finding page's kinds section, docs/findings.md's "what it shows" table, the summary's cells and the issue body."""

from pathlib import Path

from builders import make_repo, put_record, record

from plugpull.report.harness import issue_body, pages, summary
from plugpull.report.harness.finding import load_all

CLAIMS = """
[[claims]]
point = "after-effect"
options = { mode = "a" }
kind = "documented"
because = "the docs put idempotency on the user"
quote = { url = "https://docs.example.org/durable", text = "make | your tools idempotent" }
witness = { script = "witness/kill.py", args = ["--key", "none"] }
expect = [{ versions = "<2", verdict = "FAIL", counts = { refund = 2 } }, { versions = ">=2", verdict = "PASS" }]

[[claims]]
point = "after-effect"
options = { mode = "b" }
timing = true
repeats = 20
kind = "app"
because = "the demo app saves after the tool"
alternative = "after-effect mode=a"
expect = [{ versions = ">=1", fail_rate = [0.05, 1.0] }]

[[claims]]
point = "before-effect"
expect = [{ versions = ">=1", verdict = "FAIL" }]
"""


def demo(root: Path) -> Path:
    make_repo(root)
    toml = root / "findings" / "demo" / "finding.toml"
    toml.write_text(toml.read_text().replace("[[pins]]", CLAIMS.strip() + "\n\n[[pins]]", 1))
    return root


def b_runs(doc: dict, fails: int, passes: int) -> dict:
    """``doc`` with 20 runs of the timing line mode=b (its results beside mode=a's)."""
    template = doc["results"][0]
    for verdict in ["FAIL"] * fails + ["PASS"] * passes:
        run = {**template, "verdict": verdict, "options": {"mode": "b"}, "target": "six 1.0 mode=b"}
        doc["results"].append({**run, "evidence": {"counts": {"refund": 2 if verdict == "FAIL" else 1}}})
    return doc


def test_a_matrix_names_each_lines_kinds_and_marks_an_inconclusive_rate_with_a_tilde(tmp_path):
    root = demo(tmp_path)
    put_record(root, b_runs(record(verdicts=("FAIL",)), 0, 20))
    page = pages.render(root)
    rows = {line.split(" | ")[0]: line for line in page.splitlines() if line.startswith("| after") or "before" in line}
    assert rows["| after-effect mode=a · documented"].endswith("| FAIL ✓ |")
    assert rows["| after-effect mode=b (timing, 20 runs) · app"].endswith("| 0/20 FAIL [0.00, 0.16] ~ |")
    assert "| before-effect · no kind |" in page
    assert "~ inconclusive" in page


def test_a_finding_pages_kinds_section_has_one_row_per_fail_claim_with_its_source_and_witness(tmp_path):
    root = demo(tmp_path)
    section = pages.kinds_section(load_all(root)["demo"])
    assert section.splitlines() == [
        "| line | for | kind | because | source | witness |",
        "|---|---|---|---|---|---|",
        "| `after-effect mode=a` | <2 | documented | the docs put idempotency on the user | "
        "[“make \\| your tools idempotent”](https://docs.example.org/durable) | "
        "[witness/kill.py](../findings/demo/witness/kill.py) `--key none` |",
        "| `after-effect mode=b` | >=1 | app | the demo app saves after the tool | — | — |",
        "| `before-effect` | >=1 | **no kind** | — | — | — |",
    ]


def test_the_kinds_section_of_a_page_is_regenerated_and_checked_like_the_matrix(tmp_path):
    root = demo(tmp_path)
    page = root / "docs" / "finding-demo.md"
    page.parent.mkdir()
    page.write_text("# Demo\n\n<!-- plugpull:generated kinds demo -->\nstale\n<!-- /plugpull:generated -->\n")
    assert any("docs/finding-demo.md is stale" in p for p in pages.check(root))
    pages.write(root)
    assert "| `after-effect mode=a` | <2 | documented |" in page.read_text()
    assert not any("finding-demo.md" in p for p in pages.check(root))


def test_readmes_shows_table_groups_the_fail_lines_by_kind_with_their_releases_and_marks(tmp_path):
    root = demo(tmp_path)
    put_record(root, b_runs(record(verdicts=("FAIL",), version="1.0"), 0, 20))
    put_record(root, b_runs(record(pin="p2", verdicts=("PASS",), version="2.0", counts={"refund": 1}), 5, 15))
    (readme := root / "README.md").write_text("<!-- plugpull:generated shows -->\n<!-- /plugpull:generated -->\n")
    pages.write(root)
    row = next(line for line in readme.read_text().splitlines() if line.startswith("| `langgraph`"))
    assert row == (
        "| `langgraph` | kill-mid-tool | A demo finding. **documented**: `after-effect mode=a` on 1.0 ✓. "
        "**app**: `after-effect mode=b` on 1.0 ~, 2.0 ✓. **no kind**: `before-effect` on 1.0 ?, 2.0 ?. "
        "| [docs/results.md](docs/results.md#demo) |"
    )  # mode=a on 2.0 expects PASS: not a FAIL line there; before-effect is claimed but was not run


def test_the_summary_and_the_issue_body_show_marks_and_kinds(tmp_path):
    root = demo(tmp_path)
    put_record(root, b_runs(record(verdicts=("FAIL",), version="1.0"), 0, 20))
    m = summary.matrix(root, "demo")
    (column,) = m.columns
    assert m.shown("after-effect mode=b") == "after-effect mode=b · app"
    assert column.shown("after-effect mode=b") == "FAIL 0/20 ~" and column.shown("after-effect mode=a") == "FAIL ✓"
    body = issue_body.render(root, load_all(root)["demo"])
    assert "| `after-effect mode=a` (documented) | `after-effect mode=b` (app) |" in body
    assert "| FAIL ✓ | FAIL 0/20 ~ |" in body


def test_two_pin_sets_of_one_release_are_listed_by_mark_so_the_shows_table_is_the_same_every_run(tmp_path):
    # A set of (release, mark) pairs tied on the release came out in hash-seed order, so --check saw a
    # different README row from one process to the next (dbos 3.4.0 in two pin sets).
    root = demo(tmp_path)
    put_record(root, record(verdicts=("FAIL",), version="1.0"))
    put_record(root, record(pin="p2", verdicts=("PASS",), version="1.0", counts={"refund": 1}))
    (readme := root / "README.md").write_text("<!-- plugpull:generated shows -->\n<!-- /plugpull:generated -->\n")
    pages.write(root)
    row = next(line for line in readme.read_text().splitlines() if line.startswith("| `langgraph`"))
    assert "`after-effect mode=a` on 1.0 ✓, 1.0 ✗" in row


def test_a_witness_shared_with_another_finding_is_linked_by_its_own_folder():
    assert pages.witness_link("demo", "witness/kill.py") == "[witness/kill.py](../findings/demo/witness/kill.py)"
    assert (
        pages.witness_link("demo", "../other/witness/kill.py")
        == "[findings/other/witness/kill.py](../findings/other/witness/kill.py)"
    )
