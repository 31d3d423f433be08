"""Markdown for an upstream issue, generated from the records: ``plugpull report issue-body`` and a bundle's ISSUE.md.

``plugpull report issue-body FINDING`` (:func:`render`): the claim (finding.toml), the kind of each FAIL
line with its quote or upstream issue, the versions x lines matrix of the newest record per release with the
flips (report/harness/summary.py), the environment the newest run had, the command that reproduces it from a checkout
of this repository, and which HTML reports to attach.

A bundle's ISSUE.md (``plugpull report bundle``, report/harness/bundle.py, ``render_issue``) shares
:func:`environment_lines` and :func:`one_line`; it speaks a maintainer's words, without this page's kinds
and matrix. Nothing is run; nothing is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from plugpull.report.harness import markdown, summary
from plugpull.report.harness.finding import FINDINGS_DIR, Finding
from plugpull.report.kernel import claims


def kind_block(support: claims.Support) -> list[str]:
    """The kind of a FAIL line and what supports it (finding.toml's kind, because, quote, issue, searched,
    alternative; an expect entry's over its claim's), as Markdown lines."""
    if not support.kind:
        return []
    out = [f"Kind: **{support.kind}**" + (f" — {support.because}" if support.because else ""), ""]
    if support.quote is not None:
        out += [f"> {one_line(support.quote.text)}", f"> — {support.quote.url}", ""]
    if support.issue:
        out += [f"Upstream: {support.issue}", ""]
    elif support.kind == "bug" and support.searched:
        out += [f"No upstream issue found: {one_line(support.searched)}", ""]
    if support.alternative:
        out += [f"The other design is measured as `{support.alternative}`.", ""]
    return out


def one_line(text: Any) -> str:
    return " ".join(str(text).split())


def kinds_section(finding: Finding) -> list[str]:
    """One block per claim line that expects a FAIL somewhere, with its kind (empty when no line has one)."""
    out = []
    for claim in finding.claims:
        for expectation in claim.expect:
            if not expectation.expects_fail:
                continue
            block = kind_block(expectation.support)
            if block:
                out += [f"- `{claim.label}` ({expectation.scope()}):", "", *(f"  {x}" if x else "" for x in block)]
    return ["### Kinds", "", *out] if out else []


def environment_lines(doc: dict[str, Any], framework: str, version: str) -> list[str]:
    """The run's environment: the framework, Python, OS, and (schema 3) the cores and load average."""
    versions = doc.get("versions") or {}
    out = [f"- {framework} {version}, Python {versions.get('python', '?')}, {versions.get('os', '?')}"]
    load = doc.get("load")
    if isinstance(load, dict):
        start, end = load.get("start") or [], load.get("end") or []
        out.append(
            f"- {load.get('cores', '?')} cores; load average (1, 5, 15 min) "
            f"{' '.join(f'{x:.2f}' for x in start) or '?'} at the start of the run, "
            f"{' '.join(f'{x:.2f}' for x in end) or '?'} at its end"
        )
    return out


def render(root: Path, finding: Finding) -> str:
    m = summary.matrix(root, finding.id)
    out = [f"## {finding.title}", "", finding.claim, ""]
    out += kinds_section(finding)
    for key, label in (("issues", "Related issues"), ("prs", "Related pull requests")):
        links = finding.links.get(key) or []
        if links:
            out += [f"{label}: " + ", ".join(links), ""]
    docs = finding.links.get("docs") or []
    for doc in docs if isinstance(docs, list) else []:
        if isinstance(doc, dict) and doc.get("quote"):
            out += [f"> {doc['quote']}", f"> — {doc.get('url', '')}", ""]
    if not m.columns:
        return "\n".join(
            [*out, f"No run record of {finding.id} yet: run `plugpull report --finding {finding.id}`.", ""]
        )

    out += ["### Where it changes", "", *summary.flip_lines(m), ""]
    out += [f"### {m.framework} releases × lines", ""]
    head = ["release", *[f"`{line}`" + (f" ({m.kinds[line]})" if m.kinds.get(line) else "") for line in m.lines], "run"]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    after = {(f.after, f.line) for f in m.flips}
    for column in m.columns:
        cells = []
        for line in m.lines:
            text = column.shown(line)
            cells.append(f"**{text}** (flip)" if (column.version, line) in after else text)
        out.append(
            f"| {column.version} | "
            + " | ".join(markdown.cell(c) for c in cells)
            + f" | {column.date} `{column.run_id}` |"
        )
    out += [
        "",
        "PASS: the line's check held; FAIL: it did not (each report says what was counted); a timing line shows "
        "FAIL runs / finished runs; cannot run: the release does not install or cannot run the scenario. "
        "Then whether the finding's claim for that release holds: ✓ reproduces, ✗ does not reproduce, "
        "~ inconclusive (more runs needed), ? could not run, – no claim. In parentheses after a line: the kind of "
        "its FAIL claims (bug: breaks what the docs or API promise; documented: a limit the docs state; app: "
        "follows from the target app's design; expected: nothing durable existed yet).",
        "",
    ]

    runnable = [c for c in m.columns if any(cell.runnable for cell in c.cells.values())] or m.columns
    newest = max(runnable, key=lambda c: (c.date, c.run_id))
    data = json.loads((root / FINDINGS_DIR / finding.id / newest.record).with_suffix(".json").read_text())
    versions = data.get("versions") or {}
    out += ["### Environment", ""]
    out += environment_lines(data, m.framework, f"{newest.version} (newest run)")
    lock = (data.get("pipeline") or {}).get("lock")
    if lock:
        out.append(
            f"- every package pinned with hashes: `{lock}` (one lock per release, `findings/{finding.id}/pins/`)"
        )
    out.append(
        f"- plugpull commit `{versions.get('plugpull_commit') or '?'}`; offline: a scripted model, real processes, real SIGKILL"
    )
    out.append("")

    flip = m.flips[0] if m.flips else None
    pins = [c.pin for c in m.columns if flip and c.version in (flip.before, flip.after)] or [newest.pin]
    out += [
        "### Reproduce",
        "",
        "From a checkout of plugpull (https://docs.astral.sh/uv/ installed):",
        "",
        "```sh",
        "uv sync --locked --group more-frameworks",
        f"uv run plugpull report --finding {finding.id} " + " ".join(f"--pin {p}" for p in pins),
        "```",
        "",
        f"It writes `findings/{finding.id}/<date>/<pin>-<run id>.html` per pin set; "
        f"`uv run plugpull report sweep {finding.id} --bisect` finds the flips again.",
        "",
        "### Attach",
        "",
    ]
    attach = [c for c in m.columns if c.pin in pins] or [newest]
    out += [f"- `findings/{finding.id}/{c.record}` ({m.framework} {c.version})" for c in attach]
    out += [f"- `findings/{finding.id}/{summary.SUMMARY}` (every release: heatmap and flips)", ""]
    return "\n".join(out)
