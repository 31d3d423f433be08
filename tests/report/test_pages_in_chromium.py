"""The generated pages as a reader sees them: laid out by headless Chromium in a 1280 px window, nothing may run
off the right edge (the page, a table, a figure), figures are not shrunk (their text with them) and table text
stays readable. The scorecard, every finding's summary.html and one record's HTML rendered by today's nbconvert
page. Marked ``chromium`` (deselect with -m 'not chromium'); skipped, saying why, only where Chromium cannot start.
"""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

import pytest
from repository import FINDINGS, ROOT

from plugpull.report.harness import browser, history, ipynb, scorecard

pytestmark = pytest.mark.chromium
# 12 px is the smallest text the pages use on purpose (a release's run id, a cell's options).
SMALLEST_FONT = 12


def wide_table_page(folder: Path) -> Path:
    # A table of 40 long unbreakable words runs off a 1280 px window.
    page = folder / "wide.html"
    cells = "".join(f"<td>{'x' * 60}{i}</td>" for i in range(40))
    page.write_text(f"<!DOCTYPE html><html><head></head><body><table><tr>{cells}</tr></table></body></html>")
    return page


def shrunk_image_page(folder: Path) -> Path:
    # A 3000 px wide SVG in a page whose CSS caps images at the text's width: its text shrinks to a third.
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="3000" height="100"><rect width="3000" height="100"/></svg>'
    data = base64.b64encode(svg.encode()).decode()
    page = folder / "shrunk.html"
    page.write_text(
        "<!DOCTYPE html><html><head><style>body{max-width:1000px} img{max-width:100%}</style></head><body>"
        f'<img alt="wide" src="data:image/svg+xml;base64,{data}"></body></html>'
    )
    return page


def record_page(folder: Path) -> Path:
    # The newest langgraph-kill-mid-tool record on 1.2.24: its tables are the widest of the committed records
    # (the result lines with options and effect counts). Records are append-only, so the page is rendered again
    # from its notebook: what today's nbconvert page gives.
    path = next(
        p
        for p, d in history.latest(ROOT)
        if (d["finding"], d["pin"]) == ("langgraph-kill-mid-tool", "langgraph-1.2.24")
    )
    notebook = folder / path.with_suffix(".ipynb").name
    shutil.copyfile(path.with_suffix(".ipynb"), notebook)
    ipynb.render_html(notebook, page := folder / "record.html")
    return page


@pytest.fixture(scope="module")
def layouts(tmp_path_factory) -> dict[str, browser.Layout | browser.BrowserError]:
    """Every page of this module laid out by one Chromium (browser.measure_all: a frame a page, each the window's
    size; a launch costs about a CPU-second, 18 launches were a third of this module). Keyed by the tests' names
    for the pages. Skip only when Chromium is missing or cannot lay out an empty page, and say which (a page of
    ours that it cannot measure is a failure of that page's test, not a skip)."""
    if browser.find() is None:
        chosen = os.environ.get("PLUGPULL_CHROMIUM")
        where = (
            f"$PLUGPULL_CHROMIUM={chosen!r} is no program" if chosen else f"none of {', '.join(browser.NAMES)} on PATH"
        )
        pytest.skip(f"no Chromium: {where} (.ci/run installs Debian's chromium)")
    folder = tmp_path_factory.mktemp("pages")
    (empty := folder / "empty.html").write_text("<!DOCTYPE html><html><head></head><body>ok</body></html>")
    pages = {
        "empty": empty,
        "scorecard": ROOT / scorecard.HTML_PAGE,
        **{finding: FINDINGS[finding].directory / "summary.html" for finding in sorted(FINDINGS)},
        "record": record_page(folder),
        "wide table": wide_table_page(folder),
        "shrunk image": shrunk_image_page(folder),
    }
    measured = dict(zip(pages, browser.measure_all(list(pages.values())), strict=True))
    if isinstance(measured["empty"], browser.BrowserError):
        pytest.skip(f"Chromium does not start here: {measured['empty']}")
    return measured


def layout_of(layouts: dict[str, browser.Layout | browser.BrowserError], page: str) -> browser.Layout:
    found = layouts[page]
    if isinstance(found, browser.BrowserError):
        raise found
    return found


def fits(layout: browser.Layout) -> list[str]:
    return layout.overflows() + layout.shrunk()


def test_every_finding_has_a_summary_page():
    assert [f for f in FINDINGS if not (FINDINGS[f].directory / "summary.html").is_file()] == []


def test_the_scorecard_fits_a_laptop_window(layouts):
    layout = layout_of(layouts, "scorecard")
    assert fits(layout) == []
    assert len([i for i in layout.items if i.tag == "table"]) == 1
    assert layout.smallest_table_font >= SMALLEST_FONT


@pytest.mark.parametrize("finding", sorted(FINDINGS))
def test_a_summary_page_fits_a_laptop_window_with_its_figures_at_their_own_size(layouts, finding):
    layout = layout_of(layouts, finding)
    assert fits(layout) == []
    assert [i for i in layout.items if i.tag == "img"], "no heatmap"
    assert layout.smallest_table_font >= SMALLEST_FONT


def test_a_record_rendered_today_fits_a_laptop_window(layouts):
    # Its plot was drawn before the plot grew downwards (tests/report/test_notebook.py), so only overflow is
    # judged here, not the plot's scale.
    layout = layout_of(layouts, "record")
    assert layout.overflows() == []
    assert len([i for i in layout.items if i.tag == "table"]) >= 2, "not a record page"


def test_a_table_wider_than_the_window_is_caught(layouts):
    # The check itself can fail.
    problems = layout_of(layouts, "wide table").overflows()
    assert problems[0].startswith("the page scrolls sideways") and "<table>" in problems[1]


def test_an_image_drawn_smaller_than_it_is_is_caught(layouts):
    (problem,) = layout_of(layouts, "shrunk image").shrunk()
    assert problem.startswith("<img> 'wide' is drawn at 1000 of its 3000 px")


def test_a_page_alone_in_the_window_is_laid_out_as_in_its_frame(layouts):
    # What measure (the CLI, the screenshots) gives for a page is what the frames above gave: the same viewport,
    # scroll width, boxes and fonts. Not the height: a page shorter than the window is as high as its viewport,
    # and a headless window's inside is lower than its --window-size (757 of 900 px with Chromium 156: room kept
    # for a browser's bars) where a frame's is its height.
    page = FINDINGS["langgraph-kill-mid-tool"].directory / "summary.html"
    alone, framed = browser.measure(page), layout_of(layouts, "langgraph-kill-mid-tool")
    assert (alone.viewport, alone.scroll_width, alone.items, alone.smallest_table_font) == (
        framed.viewport,
        framed.scroll_width,
        framed.items,
        framed.smallest_table_font,
    )
    assert [i for i in alone.items if i.tag == "img"] and [i for i in alone.items if i.tag == "table"]
