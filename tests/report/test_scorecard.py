"""The scorecard from hand-built findings and records: rows and columns come from scorecard.toml and the claims'
``property`` and ``store``, a cell shows the newest release that ran its line, and check keeps both pages true."""

from __future__ import annotations

import base64
import re
import textwrap
from pathlib import Path

import pytest
from builders import make_repo, one_line, put_record, record, report

from plugpull.report.harness import pages, scorecard
from plugpull.report.harness.finding import FindingError, load_all

LAYOUT = """
[[columns]]
property = "killed-after-effect"
title = "killed after an effect, no key"
means = "SIGKILL after the effect."

[[columns]]
property = "power-loss"
title = "power loss"
means = "The power is cut."

[[columns]]
property = "racing-approvals"
title = "racing approvals"
means = "Five approvers at once."

[frameworks]
six = "Six"
"""

CLAIMS = """
[[claims]]
point = "after-effect"
options = { mode = "a" }
property = "killed-after-effect"
store = "SqliteSaver"
kind = "documented"
because = "the docs put idempotency on the user"
quote = { url = "https://docs.example.org/durable", text = "make your tools idempotent" }
expect = [{ versions = "<2", verdict = "FAIL", counts = { refund = 2 } }, { versions = ">=2", verdict = "PASS" }]

[[claims]]
point = "after-effect"
options = { mode = "b" }
property = "killed-after-effect"
store = "SqliteSaver"
expect = [{ versions = ">=1", verdict = "PASS" }]

[[claims]]
point = "racing-resumers"
property = "racing-approvals"
store = "PostgreSQL"
timing = true
kind = "bug"
because = "two approvers pass the check"
issue = "https://github.com/example/six/issues/1"
expect = [{ versions = ">=1", fail_rate = [0.05, 1.0] }]

[[claims]]
point = "before-effect"
options = { mode = "a" }
expect = [{ versions = ">=1", verdict = "PASS" }]
"""


def demo(root: Path, claims: str = CLAIMS, layout: str | None = LAYOUT) -> Path:
    make_repo(root)
    toml = root / "findings" / "demo" / "finding.toml"
    toml.write_text(toml.read_text().replace("[[pins]]", claims.strip() + "\n\n[[pins]]", 1))
    if layout is not None:
        (root / "findings" / "scorecard.toml").write_text(textwrap.dedent(layout))
    return root


def with_mode_b(doc: dict, verdict: str = "PASS") -> dict:
    """``doc`` with one run of the mode=b line beside mode=a's."""
    first = doc["results"][0]
    count = 1 if verdict == "PASS" else 2
    run = {**first, "verdict": verdict, "options": {"mode": "b"}, "evidence": {"counts": {"refund": count}}}
    doc["results"].append(run)
    return doc


def card(root: Path) -> scorecard.Board:
    layout = scorecard.load_layout(root)
    assert layout is not None
    from plugpull.report.harness import history

    return scorecard.board(layout, load_all(root), history.latest(root))


def test_rows_are_framework_and_store_and_columns_appear_only_with_a_record(tmp_path):
    root = demo(tmp_path)
    put_record(root, with_mode_b(record(verdicts=("FAIL",), version="1.0")))
    board = card(root)
    assert [(r.name, r.store) for r in board.rows] == [("Six", "SqliteSaver")]
    # power-loss is declared but nothing measured it; the racing line has no record: neither column shows.
    assert [c.title for c in board.columns] == ["killed after an effect, no key"]
    assert [f"{e.finding.id}: {e.claim.label}" for e in board.waiting] == ["demo: racing-resumers"]
    page = scorecard.render_markdown(root, board)
    assert "| framework · store | killed after an effect, no key |" in page
    assert "| power loss" not in page and "power loss |" not in page
    assert "No record measures these yet, so they are not columns:\n\n- **power loss**: The power is cut.\n" in page
    assert [c.property for c in board.unmeasured] == ["power-loss", "racing-approvals"]
    assert "- demo: `racing-resumers` → Six · PostgreSQL, racing approvals" in page


def test_a_cell_lists_each_line_with_its_verdict_mark_kind_release_and_record(tmp_path):
    root = demo(tmp_path)
    path = put_record(root, with_mode_b(record(verdicts=("FAIL",), version="1.0")))
    (row,) = card(root).rows
    md = scorecard.render_markdown(root, card(root))
    line = next(text for text in md.splitlines() if text.startswith("| **Six** · SqliteSaver"))
    link = f"../findings/demo/{path.parent.name}/{path.with_suffix('.html').name}"
    assert f"**FAIL** (as claimed) documented [1.0]({link} " in line and "<br>`mode=a`" in line  # what tells it apart
    assert f"**PASS** (as claimed) [1.0]({link} " in line and "<br>`mode=b`" in line
    html = scorecard.render_html(root, card(root))
    assert f'<a class="line fail" href="{link}"' in html and '<span class="kind documented">documented</span>' in html
    assert "<script" not in html and "src=" not in html and "http" not in html.split("<body>")[1].split("href")[0]


def test_a_cell_shows_the_newest_release_and_an_earlier_one_that_measured_another_outcome(tmp_path):
    root = demo(tmp_path)
    put_record(root, with_mode_b(record(verdicts=("FAIL",), version="1.0")))
    newer = put_record(root, with_mode_b(record(pin="p2", date="2026-10-01", verdicts=("PASS",), version="2.0")))
    cell = card(root).cells[("six", "SqliteSaver", "killed-after-effect")]
    mode_a = next(e for e in cell if e.claim.options == {"mode": "a"})
    # 2.0 is the newer release although its record is older: a cell is about releases, not run dates.
    assert (mode_a.newest.release, mode_a.newest.path) == ("2.0", newer)
    assert [(m.release, m.verdict()) for m in mode_a.earlier] == [("1.0", "FAIL")]
    mode_b = next(e for e in cell if e.claim.options == {"mode": "b"})
    assert mode_b.earlier == []  # PASS on both: nothing to add
    md = scorecard.render_markdown(root, card(root))
    assert "<br>FAIL on [1.0](../findings/demo/" in md


def test_a_newer_release_that_could_not_run_the_line_is_named_and_does_not_hide_the_last_verdict(tmp_path):
    root = demo(tmp_path)
    put_record(root, with_mode_b(record(verdicts=("FAIL",), version="1.0")))
    put_record(root, record(pin="p2", verdicts=("ERROR",), version="2.0"))
    mode_a = next(e for e in card(root).cells[("six", "SqliteSaver", "killed-after-effect")] if "mode=a" in e.variant)
    assert mode_a.newest.release == "1.0" and [m.release for m in mode_a.unfinished] == ["2.0"]
    assert "<br>? on [2.0](" in scorecard.render_markdown(root, card(root))


def test_a_timing_line_shows_its_fail_runs_of_the_finished_runs(tmp_path):
    root = demo(tmp_path)
    doc = record(verdicts=("PASS",) * 17 + ("FAIL",) * 3, version="1.0")
    for result in doc["results"]:
        result["point"] = "racing-resumers"
        result["options"] = {}
    put_record(root, doc)
    board = card(root)
    assert [c.property for c in board.columns] == ["racing-approvals"]
    (entry,) = board.cells[("six", "PostgreSQL", "racing-approvals")]
    assert entry.newest.verdict() == "3/20 FAIL" and entry.kind == "bug" and entry.newest.outcome == scorecard.FAIL
    assert "**3/20 FAIL** (as claimed) bug [1.0](" in scorecard.render_markdown(root, board)


def test_a_timing_line_with_no_fail_reads_as_its_pass_runs_and_an_inconclusive_claim_is_amber_not_green(tmp_path):
    # 0 of 20 against "at least 0.05": "0/20 FAIL ✓" on green read as a failure that was fine.
    root = demo(tmp_path)
    doc = record(verdicts=("PASS",) * 20, version="1.0")
    for result in doc["results"]:
        result["point"] = "racing-resumers"
        result["options"] = {}
    put_record(root, doc)
    (entry,) = card(root).cells[("six", "PostgreSQL", "racing-approvals")]
    assert entry.newest.verdict() == "20/20 PASS" and entry.newest.claim_words() == "inconclusive"
    assert entry.newest.shade == scorecard.UNSURE
    html = scorecard.render_html(root, card(root))
    assert '<a class="line unsure"' in html and '(<span class="w">inconclusive</span>)' in html
    assert "✓" not in html.split("<tbody>")[1] and "~" not in html.split("<tbody>")[1]


def test_a_bug_claim_of_a_finding_on_the_scorecard_must_have_its_cell(tmp_path):
    unplaced = (
        CLAIMS
        + """
[[claims]]
point = "before-effect"
options = { mode = "b" }
kind = "bug"
because = "the swap"
issue = "https://github.com/example/six/issues/2"
expect = [{ versions = ">=1", verdict = "FAIL" }]
"""
    )
    root = demo(tmp_path, unplaced)
    problems = scorecard.placement_problems(scorecard.load_layout(root), load_all(root))
    assert problems == [
        "findings/demo/finding.toml: `before-effect mode=b` claims a bug but is not on the scorecard "
        "(give it `property` and `store`)"
    ]


def test_html_words_break_only_at_spaces_or_after_an_equals_sign_or_comma():
    from plugpull.report.harness import markdown

    assert markdown.words("api=functional claim-and-key") == (
        '<span class="w">api=</span><wbr><span class="w">functional</span> <span class="w">claim-and-key</span>'
    )
    assert markdown.words("a<b") == '<span class="w">a&lt;b</span>'


def test_an_upgrade_pair_is_ranked_by_the_release_it_resumed_on(tmp_path):
    root = demo(tmp_path)
    for pin, start, target in (("a-1-to-2", "1.0", "2.0"), ("a-2-to-3", "2.0", "3.0"), ("a-0-to-3", "0.9", "3.0")):
        doc = with_mode_b(record(pin=pin, verdicts=("PASS",), version=target))
        doc["upgrade"] = {"framework": "six", "from": start, "to": target}
        put_record(root, doc)
    mode_b = next(e for e in card(root).cells[("six", "SqliteSaver", "killed-after-effect")] if "mode=b" in e.variant)
    assert mode_b.newest.release == "2.0 → 3.0"  # the same target: the later start


def scorecard_problems(root: Path) -> list[str]:
    """check's lines about the scorecard (the demo's claims owe witnesses; those lines are not this file's)."""
    return [p for p in pages.check(root) if "scorecard" in p]


def test_check_keeps_both_pages_true_and_regenerate_writes_them(tmp_path, capsys):
    root = demo(tmp_path)
    put_record(root, with_mode_b(record(verdicts=("FAIL",), version="1.0")))
    problems = scorecard_problems(root)
    assert [p.split(" is stale")[0] for p in problems] == ["docs/scorecard.md", "findings/scorecard.html"]
    code, out, _ = report(capsys, "regenerate", root=root)
    assert code == 0 and "the scorecard" in out
    assert scorecard_problems(root) == []
    # A new record changes the page: check fails until it is regenerated.
    put_record(root, with_mode_b(record(pin="p2", verdicts=("PASS",), version="2.0")))
    (problem, _) = scorecard_problems(root)
    assert (
        problem.startswith("docs/scorecard.md is stale")
        and "+| **Six** · SqliteSaver | **PASS** (as claimed) [2.0]" in problem
    )
    pages.write(root)
    assert scorecard_problems(root) == []


# A claim that expects PASS owes no kind and no witness, so `report check` on the demo is about its pages alone.
PLAIN_CLAIMS = """
[[claims]]
point = "after-effect"
options = { mode = "a" }
property = "killed-after-effect"
store = "SqliteSaver"
expect = [{ versions = ">=1", verdict = "PASS" }]
"""


def test_report_check_exits_1_on_a_stale_scorecard_and_0_once_it_is_regenerated(tmp_path, capsys):
    root = demo(tmp_path, PLAIN_CLAIMS)
    put_record(root, record(verdicts=("PASS",), version="1.0"))
    assert report(capsys, "regenerate", root=root)[0] == 0
    code, out, _ = report(capsys, "check", root=root)
    assert code == 0 and "the scorecard" in out
    # A record of a newer release: the scorecard (and docs/results.md) no longer say what the records say.
    put_record(root, record(pin="p2", date="2026-11-02", verdicts=("PASS",), version="2.0"))
    code, out, err = report(capsys, "check", root=root)
    stale = [line for line in out.splitlines() if "scorecard" in line and "is stale" in line]
    assert code == 1 and "problem(s)" in err
    assert [line.split(" is stale")[0] for line in stale] == ["docs/scorecard.md", "findings/scorecard.html"]
    assert report(capsys, "regenerate", root=root)[0] == 0
    assert report(capsys, "check", root=root)[0] == 0
    assert "**PASS** (as claimed) [2.0](" in (root / "docs" / "scorecard.md").read_text()


def test_a_column_declared_later_appears_with_its_first_record_without_code(tmp_path):
    root = demo(tmp_path)
    toml = root / "findings" / "demo" / "finding.toml"
    toml.write_text(
        toml.read_text().replace(
            '[[claims]]\npoint = "before-effect"',
            '[[claims]]\npoint = "power-cut"\nproperty = "power-loss"\nstore = "SqliteSaver"\n'
            'expect = [{ versions = ">=1", verdict = "PASS" }]\n\n[[claims]]\npoint = "before-effect"',
        )
    )
    put_record(root, with_mode_b(record(verdicts=("FAIL",), version="1.0")))
    assert "power-loss" not in [c.property for c in card(root).columns]
    doc = record(pin="p2", verdicts=("PASS",), version="1.0")
    doc["results"][0]["point"] = "power-cut"
    doc["results"][0]["options"] = {}
    put_record(root, doc)
    assert [c.property for c in card(root).columns] == ["killed-after-effect", "power-loss"]  # scorecard.toml's order


def test_a_property_that_is_no_column_is_a_problem_for_check_and_bad_input_for_regenerate(tmp_path, capsys):
    root = demo(tmp_path, CLAIMS.replace('property = "racing-approvals"', 'property = "racing"'))
    (problem,) = [p for p in pages.check(root) if "property" in p]
    assert problem == (
        "findings/demo/finding.toml: `racing-resumers`: property 'racing' is not a column of findings/scorecard.toml "
        "(killed-after-effect, power-loss, racing-approvals)"
    )
    code, _, err = report(capsys, "regenerate", root=root)
    assert code == 2 and one_line(err).endswith("(killed-after-effect, power-loss, racing-approvals)")
    assert not (root / "docs" / "scorecard.md").exists()


def test_without_scorecard_toml_there_is_no_scorecard_and_a_placed_claim_says_why(tmp_path):
    root = demo(tmp_path, layout=None)
    assert scorecard.pages(root, load_all(root)) == {}
    problems = pages.check(root)
    assert "findings/demo/finding.toml: `racing-resumers`: property 'racing-approvals' but there is no " in "".join(
        problems
    )


def test_property_and_store_go_together(tmp_path):
    root = demo(tmp_path, CLAIMS.replace('store = "PostgreSQL"\n', ""))
    with pytest.raises(FindingError, match=r"claims\[2\]: property and store go together"):
        load_all(root)


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        ("[[columns]]\nproperty = 'x'\ntitle = 'X'\n", "a column is property, title and means"),
        ("columns = []\n", "needs [[columns]] tables"),
        (
            "[[columns]]\nproperty = 'x'\ntitle = 'X'\nmeans = 'm'\n[[columns]]\nproperty = 'x'\ntitle = 'Y'\nmeans = 'm'\n",
            "two columns with the same property",
        ),
        ("rows = 1\n", "unknown key 'rows'"),
    ],
)
def test_a_scorecard_toml_that_cannot_be_used_is_one_line(tmp_path, layout, message):
    root = demo(tmp_path, layout=layout)
    with pytest.raises(FindingError, match=re.escape(message)):
        scorecard.load_layout(root)
    assert any(message in p for p in pages.check(root))


def test_every_link_of_the_committed_scorecard_reaches_a_file():
    root = Path(__file__).parents[2]
    page = root / scorecard.HTML_PAGE
    links = [h.split("#")[0] for h in re.findall(r'href="([^"]+)"', page.read_text()) if not h.startswith("http")]
    records = [h for h in links if h.endswith(".html") and "/20" in h]
    assert len(records) >= 20  # the cells link records, not only the docs
    assert [h for h in links if not (page.parent / h).resolve().is_file()] == []
    md = root / scorecard.PAGE
    md_links = [h.split("#")[0] for h in re.findall(r"\]\(([^) ]+)", md.read_text()) if not h.startswith("http")]
    assert len([h for h in md_links if "/20" in h]) >= 20
    assert [h for h in md_links if not (md.parent / h).resolve().is_file()] == []


def test_check_fails_while_the_scorecards_screenshot_shows_another_page(tmp_path):
    from plugpull.report.harness import browser

    root = demo(tmp_path)
    put_record(root, with_mode_b(record(verdicts=("FAIL",), version="1.0")))
    pages.write(root)
    assert pages.screenshot_problems(root) == []  # no screenshot in this repository: nothing to keep
    # A 1x1 PNG standing for Chromium's, recording the page's digest as browser.screenshot does.
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    )
    shot = root / pages.SCREENSHOT
    page = root / scorecard.HTML_PAGE
    shot.write_bytes(browser._with_text(png, browser.SOURCE_KEY, browser.source_digest(page)))
    assert browser.png_text(shot) == {browser.SOURCE_KEY: browser.source_digest(page)}
    assert pages.screenshot_problems(root) == []
    put_record(root, with_mode_b(record(pin="p2", verdicts=("PASS",), version="2.0")))
    page.write_text(page.read_text() + "<!-- a newer page -->")
    (problem,) = pages.screenshot_problems(root)
    assert problem.startswith("docs/scorecard-screenshot.png shows another findings/scorecard.html (")
    assert problem in pages.check(root)
    shot.write_bytes(png)  # a screenshot taken by hand, recording nothing
    assert pages.screenshot_problems(root)[0].startswith("docs/scorecard-screenshot.png records no page digest")


def test_readmes_picture_caption_is_generated_from_the_records_it_shows():
    from plugpull.report.harness import history

    root = Path(__file__).resolve().parents[2]
    text = (root / "README.md").read_text()
    assert "<!-- plugpull:generated scorecard-picture -->" in text
    caption = pages.section(root, "scorecard-picture", load_all(root), history.latest(root))
    assert caption.startswith("From ") and " records of " in caption and caption in text
