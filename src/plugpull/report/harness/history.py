"""The run records on disk, per (finding, pin set), judged against the finding's claims.

Records are append-only (``findings/<id>/<date>/<pin>-<run id>.json``): every earlier run stays, the
newest per (finding, pin) is the one with the latest (date, run id), and each is judged line by line
against finding.toml's ``[[claims]]`` (report/kernel/claims.py). Standard library and packaging only: ``report check``
and ``report regenerate`` run it in the default environment and run nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plugpull.report.harness import markdown
from plugpull.report.harness.finding import FINDINGS_DIR, Finding, once
from plugpull.report.kernel import claims, record

#: What findings/ may hold in all (records, pin sets, bundles, pages): every record is kept, so a clone grows with
#: each run; ``report check`` fails past it (docs/DECISIONS.md, "Findings, records, pin sets and pages").
FINDINGS_BUDGET = 100 * 10**6


def footprint(root: Path) -> tuple[int, dict[str, int]]:
    """Bytes of every file under findings/, in all and per top-level folder (a finding, or '.' for loose files)."""
    total, per = 0, {}
    top = root / FINDINGS_DIR
    for path in top.rglob("*") if top.is_dir() else ():
        if path.is_file() and not path.is_symlink():
            size = path.stat().st_size
            parts = path.relative_to(top).parts
            folder = parts[0] if len(parts) > 1 else "."
            total += size
            per[folder] = per.get(folder, 0) + size
    return total, per


def budget_problems(root: Path, budget: int | None = None) -> list[str]:
    """One line when findings/ holds more than ``budget`` bytes (default :data:`FINDINGS_BUDGET`), naming the three
    largest folders; else none."""
    budget = FINDINGS_BUDGET if budget is None else budget
    total, per = footprint(root)
    if total <= budget:
        return []
    largest = ", ".join(f"{name} {size / 1e6:.1f} MB" for name, size in sorted(per.items(), key=lambda kv: -kv[1])[:3])
    return [
        f"findings/ holds {total / 1e6:.1f} MB, over its {budget / 1e6:.0f} MB budget (largest: {largest}): "
        "slim or move out old records before adding more"
    ]


@dataclass
class Judged:
    status: str  # claims.overall of the lines
    lines: list[claims.LineJudgement]
    unclaimed: list[dict[str, Any]] = field(default_factory=list)
    witnesses: list[claims.WitnessJudgement] = field(default_factory=list)

    def witness_of(self, line: claims.LineJudgement) -> claims.WitnessJudgement | None:
        return next((w for w in self.witnesses if w.line is line), None)


def judge(finding: Finding, doc: dict[str, Any]) -> Judged:
    lines = claims.judge(finding.claims, doc)
    return Judged(
        claims.overall(lines),
        lines,
        list(claims.unclaimed(finding.claims, doc)),
        claims.judge_witnesses(lines, doc),
    )


def record_paths(root: Path) -> list[Path]:
    """Every ``findings/<id>/<date>/*.json``."""
    return sorted((root / FINDINGS_DIR).glob("*/*/*.json"))


def _rank(doc: dict[str, Any]) -> tuple[str, str]:
    return (doc["date"], record.run_id(doc))


def valid_records(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every record without problems (a record with problems is reported by ``check``), oldest first."""

    def read() -> list[tuple[Path, dict[str, Any]]]:
        found = []
        for path in record_paths(root):
            if record.problems(path, path.parent.parent):
                continue
            found.append((path, json.loads(path.read_text())))
        return sorted(found, key=lambda pd: (pd[1]["finding"], pd[1]["pin"], _rank(pd[1])))

    return list(once("records", root, read))


def latest(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The newest valid record per (finding, pin), ordered by finding then pin."""
    best: dict[tuple[str, str], tuple[Path, dict[str, Any]]] = {}
    for path, doc in valid_records(root):
        best[(doc["finding"], doc["pin"])] = (path, doc)  # oldest first: the last one wins
    return [best[k] for k in sorted(best)]


def runs(root: Path, finding: Finding, pin: str) -> list[tuple[Path, dict[str, Any]]]:
    """Every valid record of (finding, pin), oldest first."""
    base = root / FINDINGS_DIR / finding.id
    found = []
    for path in sorted(base.glob("*/*.json")):
        if record.problems(path, base):
            continue
        doc = json.loads(path.read_text())
        if doc["pin"] == pin:
            found.append((path, doc))
    return sorted(found, key=lambda pd: _rank(pd[1]))


def version_text(doc: dict[str, Any]) -> str:
    """``agent-framework-core 1.20.0`` (every framework the record ran, for a finding about several)."""
    named = sorted({(r.get("framework"), r.get("version")) for r in doc.get("results") or [] if r.get("framework")})
    if named:
        return ", ".join(f"{f} {v}" for f, v in named)
    framework = doc.get("framework") or "?"
    return f"{framework} {(doc.get('versions') or {}).get(framework) or '?'} (pin set {doc.get('pin')})"


def verdict_counts(doc: dict[str, Any]) -> str:
    if doc.get("error") is not None:
        return f"notebook failed: {doc['error']}"
    counted: dict[str, int] = {}
    for r in doc.get("results") or []:
        counted[r["verdict"]] = counted.get(r["verdict"], 0) + 1
    return ", ".join(f"{v} {n}" for v, n in sorted(counted.items())) or "no results"


def top_cell(finding: Finding, doc: dict[str, Any], judged: Judged, earlier: list[tuple[Path, dict[str, Any]]]) -> str:
    """Markdown for the top of a report: the judgement of this run, then the earlier runs of its pin set.

    Generated from the record and finding.toml only, never written by hand.
    """
    out = ["## Judgement", ""]
    out += claims.summary(judged.lines, version_text(doc))
    # A witness that disagrees or could not run is said beside the headline, not only in the table.
    out += [
        f"- witness {'disagrees' if w.status == claims.DISAGREES else 'could not run'}: `{w.claim.label}` "
        f"(`{w.witness.script}`): {w.reason}"
        for w in judged.witnesses
        if w.status != claims.AGREES
    ]
    out += [
        "",
        f"Run `{record.run_id(doc)}` of pin set `{doc['pin']}`; each line is judged against the claim in "
        f"`findings/{finding.id}/finding.toml`:",
        "",
        "| line | kind | claimed | measured | judgement |",
        "|---|---|---|---|---|",
    ]
    for j in judged.lines:
        witnessed = judged.witness_of(j)
        measured = j.measured() if witnessed is None else f"harness: {j.measured()} · witness: {witnessed.text()}"
        out.append(
            f"| `{j.claim.label}` | {j.expectation.kind or '–'} | {markdown.cell(j.expectation.describe())} | {markdown.cell(measured)} | "
            f"{'**' + j.status + '**' if j.status != claims.REPRODUCES else j.status} |"
        )
    if judged.witnesses:
        out += [
            "",
            "A witness is a framework-only script in the finding's folder (no plugpull), run in the same environment "
            "after the notebook: "
            + "; ".join(f"`{w.claim.label}`: `{w.witness.script}`" for w in judged.witnesses)
            + ".",
        ]
    if judged.unclaimed:
        lines = sorted({f"{r['point']} {r.get('target', '')}" for r in judged.unclaimed})
        out += ["", "Lines no claim is about (not judged): " + "; ".join(f"`{line}`" for line in lines)]
    if earlier:
        out += [
            "",
            "### Earlier runs of this pin set",
            "",
            "| run | verdicts | judgement | report |",
            "|---|---|---|---|",
        ]
        for path, old in reversed(earlier):
            status = judge(finding, old).status
            out.append(
                f"| `{record.run_id(old)}` | {markdown.cell(verdict_counts(old))} | {status} | "
                f"[{path.with_suffix('.html').name}](../{old['date']}/{path.with_suffix('.html').name}) |"
            )
    return "\n".join(out) + "\n"
