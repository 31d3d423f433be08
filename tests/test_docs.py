"""Citations of docs/DECISIONS.md still lead somewhere: a `DECISIONS.md, "Heading"` names a heading the file has.
The file is organised by topic, and a heading renamed or cut there must not leave a comment, page or test pointing
at nothing. A citation by a tracker number (`DECISIONS.md, issue N`) leads nowhere a reader of the repository can
follow, so it is reported too."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DECISIONS = ROOT / "docs" / "DECISIONS.md"
THIS = Path(__file__).resolve()  # its hand-built citations are examples

#: Where the repository cites DECISIONS.md: code, docs, tests, findings and their witnesses, CI, notebooks.
CITING = ("src/**/*.py", "docs/*.md", "README.md", "tests/**/*.py", "tests/*.xsd", "findings/*/finding.toml",
          "findings/*/witness/*.py", ".ci/*", ".github/**/*.yml", "notebooks/*.ipynb")  # fmt: skip

# A line break plus the next line's indentation and comment marker (`#`, `#:`) reads as one space, so a
# citation wrapped in a comment or docstring is still found whole.
WRAP = re.compile(r"\s*\n\s*(?:#:?\s*)?")
HEADING_CITATION = re.compile(r'DECISIONS\.md,\s*"([^"]+)"')
ISSUE_CITATION = re.compile(r"DECISIONS\.md,\s*issue (\d+)")


def headings(text: str) -> list[str]:
    return [line.lstrip("#").strip() for line in text.splitlines() if re.match(r"#{2,3} ", line)]


def names_heading(cited: str, known: list[str]) -> bool:
    return cited in known


def text_of(path: Path) -> str:
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text())["cells"]
        return "\n".join("".join(cell["source"]) for cell in cells)
    return path.read_text(errors="replace")


def citations(text: str) -> tuple[list[str], list[int]]:
    flat = WRAP.sub(" ", text)
    return HEADING_CITATION.findall(flat), [int(n) for n in ISSUE_CITATION.findall(flat)]


def problems(files: dict[str, str], decisions: str) -> list[str]:
    known = headings(decisions)
    found = []
    for name, text in files.items():
        cited_headings, cited_numbers = citations(text)
        found += [
            f'{name}: no heading "{c}" in docs/DECISIONS.md' for c in cited_headings if not names_heading(c, known)
        ]
        found += [f"{name}: cites docs/DECISIONS.md by a tracker number ({n}): cite a heading" for n in cited_numbers]
    return found


def repository_files() -> dict[str, str]:
    paths = {p for pattern in CITING for p in ROOT.glob(pattern) if p.is_file() and p not in (DECISIONS, THIS)}
    return {str(p.relative_to(ROOT)): text_of(p) for p in sorted(paths)}


def test_every_citation_of_decisions_names_a_heading_or_an_issue_it_has():
    files = repository_files()
    cited = [c for text in files.values() for c in citations(text)[0]]
    assert "Findings, records, pin sets and pages" in cited  # ipynb.py's, wrapped: the search reads wrapped comments
    assert problems(files, DECISIONS.read_text()) == []


def test_a_citation_wrapped_across_comment_lines_is_read_whole():
    text = '# records stay small (docs/DECISIONS.md,\n# "Findings, records, pin sets and\n# pages"). No'
    assert citations(text)[0] == ["Findings, records, pin sets and pages"]


def test_a_heading_that_is_gone_and_a_citation_by_number_are_reported():
    decisions = "# Decisions\n\n## Harness core\n\n## One shape\n"
    number = 21  # a tracker's number: what a reader of the repository cannot follow
    files = {
        "a.py": '# (docs/DECISIONS.md, "Harness core"), (docs/DECISIONS.md, "One shape")',
        "c.md": f'(docs/DECISIONS.md, "Findings reports") and (docs/DECISIONS.md, issue {number})',
    }
    assert problems(files, decisions) == [
        'c.md: no heading "Findings reports" in docs/DECISIONS.md',
        f"c.md: cites docs/DECISIONS.md by a tracker number ({number}): cite a heading",
    ]
