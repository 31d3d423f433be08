"""The generated pages as a reader sees them: laid out by headless Chromium in a 1280 px window, nothing may run
off the right edge (the page, a table, a figure), figures are not shrunk (their text with them) and table text
stays readable. The scorecard, every finding's summary.html and one record's HTML rendered by today's nbconvert
page. At 1024 and 1280 px no word of the scorecard, a summary or the record is broken inside (a line break other
than at a space, right after ``=`` or ``,`` or at a ``<wbr>``), nor runs past its table cell. Marked ``chromium``
(deselect with -m 'not chromium'); skipped, saying why, only where Chromium cannot start.
"""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

import pytest
from repository import FINDINGS, ROOT

from plugpull.report.harness import browser, history, ipynb, scorecard, summary

pytestmark = pytest.mark.chromium
# 12 px is the smallest text the pages use on purpose (a release's run id, a cell's options).
SMALLEST_FONT = 12
# A laptop's browser window and a small one: the widths the word test lays pages out at.
WIDTHS = (1024, browser.WIDTH)
# The summary the word test reads: the one with the most frameworks (six), so the most tables and labels.
WORDS_SUMMARY = "kill-mid-tool-more-frameworks"


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


def broken_word_page(folder: Path) -> Path:
    # The scorecard's old CSS: a fixed table whose cells break anywhere, too narrow for "documented".
    page = folder / "broken.html"
    page.write_text(
        "<!DOCTYPE html><html><head><style>td{width:40px;overflow-wrap:anywhere;font:13px sans-serif}</style></head>"
        '<body><table style="table-layout:fixed;width:40px"><tr><td>documented api=functional</td></tr></table>'
        "</body></html>"
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
        "broken words": broken_word_page(folder),
        "wide table": wide_table_page(folder),
        "shrunk image": shrunk_image_page(folder),
    }
    measured = dict(zip(pages, browser.measure_all(list(pages.values())), strict=True))
    if isinstance(measured["empty"], browser.BrowserError):
        pytest.skip(f"Chromium does not start here: {measured['empty']}")
    return measured


@pytest.fixture(scope="module")
def narrow(layouts, tmp_path_factory) -> dict[str, browser.Layout | browser.BrowserError]:
    """The pages the word test reads, laid out in a 1024 px window (one more Chromium launch; the 1280 px ones are
    ``layouts``'), with a page whose words do break."""
    folder = tmp_path_factory.mktemp("narrow")
    pages = {
        "scorecard": ROOT / scorecard.HTML_PAGE,
        WORDS_SUMMARY: FINDINGS[WORDS_SUMMARY].directory / "summary.html",
        "record": record_page(folder),
        "broken words": broken_word_page(folder),
    }
    return dict(zip(pages, browser.measure_all(list(pages.values()), width=1024), strict=True))


def at_width(layouts, narrow, width: int, page: str) -> browser.Layout:
    layout = layout_of(narrow if width == 1024 else layouts, page)
    assert layout.viewport == width
    return layout


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
    # A heatmap for a framework with two measured releases or more; one release has only its table.
    several = any(len(summary.matrix(ROOT, finding, f).columns) > 1 for f in FINDINGS[finding].frameworks)
    heatmaps = [i for i in layout.items if i.tag == "img"]
    assert bool(heatmaps) == several, "a heatmap for one release" if heatmaps else "no heatmap"
    assert layout.smallest_table_font >= SMALLEST_FONT


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", ["scorecard", WORDS_SUMMARY, "record"])
def test_no_word_is_broken_inside_at_1024_or_1280_px(layouts, narrow, page, width):
    # Range.getClientRects per word (browser.SCRIPT's brokenWords): 'api=functiona' | 'l', 'documen' | 'ted' and
    # 'mid-' | 'stream' on the scorecard before its words were kept whole.
    layout = at_width(layouts, narrow, width, page)
    assert layout.broken_words() == []
    if page == "scorecard":
        assert fits(layout) == []  # and kept whole, the nine columns still fit the window


@pytest.mark.parametrize("width", WIDTHS)
def test_a_word_broken_inside_is_caught(layouts, narrow, width):
    # The check itself can fail: a 40 px cell that breaks anywhere.
    problems = at_width(layouts, narrow, width, "broken words").broken_words()
    assert any(p.startswith("'doc") and p.endswith("a word broken inside") for p in problems), problems


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
