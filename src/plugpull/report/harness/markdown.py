"""The one escape of a value for a Markdown table cell (docs/results.md, the pages' generated sections, the
report's top cell, issue bodies): a ``|`` would end the cell and a newline the row."""

from __future__ import annotations

from typing import Any


def cell(text: Any) -> str:
    """``text`` as one table cell: ``|`` escaped as ``\\|``, newlines as spaces."""
    return str(text).replace("|", "\\|").replace("\n", " ")
