"""docs/twins.md's tables: a finding and its twin in another language, line by line, from their newest records.

A finding with ``[twin]`` in its finding.toml (finding.Twin) mirrors lines of another finding: LangGraph.js's
kill-mid-tool lines mirror LangGraph's, the Agents SDK for JS's approval lines the Python SDK's. Each of its claims
is matched with the twin's claim of the same point whose options include all of its own (and the twin's chosen
``options`` where that claim has them); each side is every newest record of its finding, judged against its own
claims (report/kernel/claims.py), so a cell says what the record measured and whether its claim held there.

Whether the twins keep the same promise is read from the records, never written by hand: a side's outcome on a
release is PASS (every finished run passed), FAIL (every one failed) or "both" (a rate); the line is "same" when
both sides had the same outcomes on every release measured, "differs" when not, and "no record" while a side has
none. The page is a pure function of the records and the finding.toml files, like docs/results.md, and
``report check`` fails when the committed page is not what they give.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from plugpull.report.harness import markdown
from plugpull.report.harness.finding import Finding
from plugpull.report.kernel import claims, versions
from plugpull.report.kernel.claims import Claim

Newest = list[tuple[Path, dict[str, Any]]]


def twin_claim(finding: Finding, claim: Claim, twin: Finding) -> Claim | None:
    """The twin's claim that mirrors ``claim``: same point, the twin's framework, every option of ``claim``; among
    several, the one that agrees with ``[twin] options`` where it has them and has the fewest options of its own."""
    assert finding.twin is not None
    chosen = finding.twin.options
    found = [
        c
        for c in twin.claims
        if c.point == claim.point
        and (c.framework or twin.framework) == finding.twin.framework
        and all(c.options.get(k) == v for k, v in claim.options.items())
        and all(c.options.get(k, v) == v for k, v in chosen.items())
    ]
    return min(found, key=lambda c: len(c.options)) if found else None


def outcome(line: claims.LineJudgement) -> str | None:
    """PASS, FAIL or "both" for a judged line's finished runs; None when none finished."""
    if line.finished == 0:
        return None
    return "PASS" if line.failed == 0 else "FAIL" if line.passed == 0 else "both"


def sides(finding: Finding, newest: Newest) -> dict[int, list[tuple[str, claims.LineJudgement]]]:
    """By ``id(claim)``: (release, judged line) of each claim of ``finding`` in each newest record that has it, in
    release order; every record judged once."""
    found: dict[int, list[tuple[str, claims.LineJudgement]]] = {}
    for _, doc in newest:
        if doc["finding"] != finding.id:
            continue
        for line in claims.judge(finding.claims, doc):
            found.setdefault(id(line.claim), []).append((str(line.version or doc["pin"]), line))
    return {k: sorted(v, key=lambda pair: versions.sort_key(pair[0])) for k, v in found.items()}


def cell(lines: list[tuple[str, claims.LineJudgement]]) -> str:
    if not lines:
        return "no record"
    return "; ".join(f"{release}: {line.measured()} {claims.MARKS[line.status]}" for release, line in lines)


def agreement(mine: list[tuple[str, claims.LineJudgement]], theirs: list[tuple[str, claims.LineJudgement]]) -> str:
    ours, others = {outcome(line) for _, line in mine} - {None}, {outcome(line) for _, line in theirs} - {None}
    if not ours or not others:
        return "no record"
    return "same" if ours == others else "differs"


def table(finding: Finding, twin: Finding, newest: Newest) -> str:
    """One finding beside its twin: a row per claim of the finding, with the twin's line and both kinds."""
    assert finding.twin is not None
    head = ["line", f"{finding.framework} ({finding.id})", f"{finding.twin.framework} ({twin.id})", "same outcome"]
    head.append("kinds (this / twin)")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    tally: dict[str, int] = {}
    ours, twins = sides(finding, newest), sides(twin, newest)
    for claim in finding.claims:
        other = twin_claim(finding, claim, twin)
        mine = ours.get(id(claim), [])
        theirs = twins.get(id(other), []) if other is not None else []
        same = agreement(mine, theirs) if other is not None else "no twin line"
        tally[same] = tally.get(same, 0) + 1
        kinds = f"{', '.join(claim.kinds()) or '—'} / {', '.join(other.kinds()) or '—' if other else '—'}"
        # The twin's label only where it is not this line's (an extra option, another framework's prefix).
        twin_text = (
            "—" if other is None else cell(theirs) if other.label == claim.label else f"`{other.label}`: {cell(theirs)}"
        )
        row = [f"`{claim.label}`", cell(mine), twin_text, same, kinds]
        out.append("| " + " | ".join(markdown.cell(c) for c in row) + " |")
    counted = ", ".join(f"{n} {what}" for what, n in sorted(tally.items()))
    return "\n".join(out) + f"\n\n{len(finding.claims)} lines: {counted}.\n"


def section(findings: dict[str, Finding], newest: Newest) -> str:
    """Every finding with a ``[twin]``, in id order: a heading, then :func:`table`."""
    out = []
    for finding in findings.values():
        if finding.twin is None:
            continue
        twin = findings.get(finding.twin.finding)
        out.append(f"### `{finding.id}` and `{finding.twin.finding}`\n")
        if twin is None:
            out.append(f"`{finding.twin.finding}` is not a finding here.\n")
            continue
        out.append(table(finding, twin, newest))
    return "\n".join(out) if out else "No finding has a twin yet.\n"
