"""The one escape of a value for a Markdown table cell (docs/results.md, the pages' generated sections, the
report's top cell, issue bodies): a ``|`` would end the cell and a newline the row; and :func:`words`, the one
escape of text for an HTML page's table (the scorecard, summary.html) that keeps its words whole."""

from __future__ import annotations

import html
import re
from typing import Any


def cell(text: Any) -> str:
    """``text`` as one table cell: ``|`` escaped as ``\\|``, newlines as spaces."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def words(text: Any) -> str:
    """``text`` HTML-escaped, each word kept whole: a line may break at white space or right after ``=`` or ``,``,
    never inside a word (``api=functional``, ``claim-and-key``, a uuid; Chromium otherwise breaks after a hyphen,
    and ``overflow-wrap: anywhere`` anywhere). Each piece is a ``<span class="w">`` that the page's CSS keeps on
    one line (``white-space: nowrap``), with ``<wbr>`` after ``=`` and ``,``. tests/report/test_pages_in_chromium.py
    measures what Chromium makes of it."""
    out = []
    for word in str(text).split():
        pieces = [p for p in re.split(r"(?<=[=,])", word) if p]
        out.append("<wbr>".join(f'<span class="w">{html.escape(p, quote=True)}</span>' for p in pieces))
    return " ".join(out)
