"""The generated pages as a reader sees them: laid out by headless Chromium in a 1280 px window, nothing may run
off the right edge (the page, a table, a figure), figures are not shrunk (their text with them) and table text
stays readable. The scorecard, every finding's summary.html and one record's HTML rendered by today's nbconvert
page. Marked ``chromium`` (deselect with -m 'not chromium'); skipped, saying why, only where Chromium cannot start.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from plugpull.report.harness import browser, history, ipynb, scorecard
from plugpull.report.harness.finding import load_all

ROOT = Path(__file__).parents[2]
FINDINGS = load_all(ROOT)
pytestmark = pytest.mark.chromium
# 12 px is the smallest text the pages use on purpose (a release's run id, a cell's options).
SMALLEST_FONT = 12


@pytest.fixture(scope="module")
def chromium(tmp_path_factory):
    """Skip only when Chromium is missing or cannot lay out an empty page, and say which (a page of ours that it
    cannot measure is a failure of that page's test, not a skip)."""
    if browser.find() is None:
        chosen = os.environ.get("PLUGPULL_CHROMIUM")
        where = (
            f"$PLUGPULL_CHROMIUM={chosen!r} is no program" if chosen else f"none of {', '.join(browser.NAMES)} on PATH"
        )
        pytest.skip(f"no Chromium: {where} (.ci/run installs Debian's chromium)")
    empty = tmp_path_factory.mktemp("chromium") / "empty.html"
    empty.write_text("<!DOCTYPE html><html><head></head><body>ok</body></html>")
    try:
        browser.measure(empty)
    except browser.BrowserError as exc:
        pytest.skip(f"Chromium does not start here: {exc}")


def fits(layout: browser.Layout) -> list[str]:
    return layout.overflows() + layout.shrunk()


def test_every_finding_has_a_summary_page():
    assert [f for f in FINDINGS if not (FINDINGS[f].directory / "summary.html").is_file()] == []


def test_the_scorecard_fits_a_laptop_window(chromium):
    layout = browser.measure(ROOT / scorecard.HTML_PAGE)
    assert fits(layout) == []
    assert len([i for i in layout.items if i.tag == "table"]) == 1
    assert layout.smallest_table_font >= SMALLEST_FONT


@pytest.mark.parametrize("finding", sorted(FINDINGS))
def test_a_summary_page_fits_a_laptop_window_with_its_figures_at_their_own_size(chromium, finding):
    layout = browser.measure(FINDINGS[finding].directory / "summary.html")
    assert fits(layout) == []
    assert [i for i in layout.items if i.tag == "img"], "no heatmap"
    assert layout.smallest_table_font >= SMALLEST_FONT


def test_a_record_rendered_today_fits_a_laptop_window(chromium, tmp_path):
    # The newest langgraph-kill-mid-tool record on 1.2.24: its tables are the widest of the committed records
    # (the result lines with options and effect counts). Records are append-only, so the page is rendered again
    # from its notebook: what today's nbconvert page gives. Its plot was drawn before the plot grew downwards
    # (tests/report/test_notebook.py), so only overflow is judged here, not the plot's scale.
    path = next(
        p
        for p, d in history.latest(ROOT)
        if (d["finding"], d["pin"]) == ("langgraph-kill-mid-tool", "langgraph-1.2.24")
    )
    notebook = tmp_path / path.with_suffix(".ipynb").name
    shutil.copyfile(path.with_suffix(".ipynb"), notebook)
    ipynb.render_html(notebook, page := tmp_path / "record.html")
    layout = browser.measure(page)
    assert layout.overflows() == []
    assert len([i for i in layout.items if i.tag == "table"]) >= 2, "not a record page"


def test_a_table_wider_than_the_window_is_caught(chromium, tmp_path):
    # The check itself can fail: a table of 40 long unbreakable words runs off a 1280 px window.
    page = tmp_path / "wide.html"
    cells = "".join(f"<td>{'x' * 60}{i}</td>" for i in range(40))
    page.write_text(f"<!DOCTYPE html><html><head></head><body><table><tr>{cells}</tr></table></body></html>")
    layout = browser.measure(page)
    problems = layout.overflows()
    assert problems[0].startswith("the page scrolls sideways") and "<table>" in problems[1]


def test_an_image_drawn_smaller_than_it_is_is_caught(chromium, tmp_path):
    # A 3000 px wide SVG in a page whose CSS caps images at the text's width: its text shrinks to a third.
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="3000" height="100"><rect width="3000" height="100"/></svg>'
    import base64

    data = base64.b64encode(svg.encode()).decode()
    page = tmp_path / "shrunk.html"
    page.write_text(
        "<!DOCTYPE html><html><head><style>body{max-width:1000px} img{max-width:100%}</style></head><body>"
        f'<img alt="wide" src="data:image/svg+xml;base64,{data}"></body></html>'
    )
    (problem,) = browser.measure(page).shrunk()
    assert problem.startswith("<img> 'wide' is drawn at 1000 of its 3000 px")
