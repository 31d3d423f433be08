"""Markdown for an upstream issue, generated from the records: ``--issue-body`` and a bundle's ISSUE.md.

``plugpull report --issue-body FINDING`` (:func:`render`): the claim (finding.toml), the kind of each FAIL
line with its quote or upstream issue, the versions x lines matrix of the newest record per release with the
flips (report/summary.py), the environment the newest run had, the command that reproduces it from a checkout
of this repository, and which HTML reports to attach.

A bundle's ISSUE.md (:func:`render_bundle`, ``plugpull report --bundle``, report/bundle.py): the same claim and
kind blocks for the bundle's bug lines, what the failing release's newest record measured, a versions table
with the harness and the witness per release, the witness inline, the one command that runs it from the bundle
folder, and the environment. Nothing is run; nothing is written.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugpull.report import claims, summary
from plugpull.report.finding import FINDINGS_DIR, Finding

if TYPE_CHECKING:
    from plugpull.report.bundle import Bundle


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def kind_block(support: claims.Support) -> list[str]:
    """The kind of a FAIL line and what supports it (finding.toml's kind, because, quote, issue, searched,
    alternative; an expect entry's over its claim's), as Markdown lines."""
    if not support.kind:
        return []
    out = [f"Kind: **{support.kind}**" + (f" — {support.because}" if support.because else ""), ""]
    if support.quote is not None:
        out += [f"> {_one_line(support.quote.text)}", f"> — {support.quote.url}", ""]
    if support.issue:
        out += [f"Upstream: {support.issue}", ""]
    elif support.kind == "bug" and support.searched:
        out += [f"No upstream issue found: {_one_line(support.searched)}", ""]
    if support.alternative:
        out += [f"The other design is measured as `{support.alternative}`.", ""]
    return out


def _one_line(text: Any) -> str:
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
            f"| {column.version} | " + " | ".join(_md(c) for c in cells) + f" | {column.date} `{column.run_id}` |"
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
        f"`uv run plugpull report --sweep {finding.id} --bisect` finds the flips again.",
        "",
        "### Attach",
        "",
    ]
    attach = [c for c in m.columns if c.pin in pins] or [newest]
    out += [f"- `findings/{finding.id}/{c.record}` ({m.framework} {c.version})" for c in attach]
    out += [f"- `findings/{finding.id}/{summary.SUMMARY}` (every release: heatmap and flips)", ""]
    return "\n".join(out)


def _counts(counts: Any) -> str:
    if not isinstance(counts, dict) or not counts:
        return ""
    return ", ".join(f"{name}={n}" for name, n in counts.items())


def measured_line(b: Bundle, label: str) -> str:
    """What the failing release's newest record measured on one line: verdicts, the counts and message of
    its first FAIL run."""
    line = next(x for x in b.lines if x.label == label)
    failed = [r for r in b.row.doc.get("results") or [] if line.claim.matches_result(r) and r.get("verdict") == "FAIL"]
    text = line.judgement.cell()
    if failed:
        counts = _counts((failed[0].get("evidence") or {}).get("counts"))
        text += (f"; {counts}" if counts else "") + f": {_one_line(failed[0].get('message', ''))}"
    return text


def witness_line(b: Bundle, label: str) -> str:
    """The witness's own result on the failing release's record: verdicts with counts, and exit codes."""
    outputs = b.row.witness_outputs(label)
    if not outputs:
        text = b.row.witness_text(label)
        return "not run by the report on this record (it predates witnesses)" if text == "–" else text
    seen = dict.fromkeys(f"{o.get('verdict')} {_counts(o.get('counts'))} (exit {code})" for code, o in outputs)
    return (f"{len(outputs)} runs: " if len(outputs) > 1 else "") + "; ".join(" ".join(x.split()) for x in seen)


def versions_table(b: Bundle) -> list[str]:
    """Every release (or upgrade pair) with a record: per bundle line the harness's cell and the witness's,
    then the first failing and first fixed release the records show."""
    labels = [line.label for line in b.lines]
    head = ["release" if not b.upgrade else "saved by → resumed by"]
    for label in labels:
        prefix = f"`{label}` " if len(labels) > 1 else ""
        head += [f"{prefix}harness", f"{prefix}witness"]
    head.append("plugpull run")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in b.table:
        if not any(label in row.judged for label in labels):
            continue
        cells = []
        for label in labels:
            judged = row.judged.get(label)
            cells += [judged.cell() if judged else "–", row.witness_text(label) if judged else "–"]
        name = f"**{row.label}**" if row.pin == b.pin.name else row.label
        out.append(f"| {name} | " + " | ".join(_md(c) for c in cells) + f" | {row.doc['date']} `{row.path.stem}` |")
    out += [
        "",
        "harness: plugpull's run of the line (each run's verdict; on a timing line FAIL runs / finished runs and "
        "the 95 % Wilson interval); witness: the standalone script's verdicts in the same environment "
        "(– : the record predates witnesses).",
        "",
    ]
    if b.first_failing is not None:
        before = [r for r in b.table if r.sort < b.first_failing.sort and any(x in r.judged for x in labels)]
        first = f"- first release measured to fail: **{b.first_failing.label}**"
        if not before:
            out.append(f"{first} (the oldest release measured)")
        else:
            shown = "; ".join(f"`{x}` {before[-1].judged[x].cell()}" for x in labels if x in before[-1].judged)
            out.append(f"{first} (the release measured before it, {before[-1].label}: {shown})")
    if b.first_fixed is not None:
        out.append(f"- first release measured to pass after {b.version}: **{b.first_fixed.label}**")
    elif not b.upgrade:
        out.append(f"- no measured release after {b.version} passes")
    return [*out, ""]


def render_bundle(b: Bundle) -> str:
    """A bundle's ISSUE.md (report/bundle.py): everything from finding.toml, the records and the witness."""
    from plugpull.report import bundle as bundles

    f = b.finding
    what = f"{b.dist} {b.version}" if not b.upgrade else f"{b.dist} {b.start_version} → {b.version}"
    out = [f"# {f.title} ({what})", "", f.claim, "", "## What happens", ""]
    for line in b.lines:
        why = f" — {line.expectation.why}" if line.expectation.why else ""
        args = " ".join(shlex.quote(a) for a in line.args)
        out += [
            f"- `{line.label}`: claimed {line.expectation.describe()}{why}.",
            f"  - measured on {what} (plugpull run `{b.record_stem}`): {_md(measured_line(b, line.label))}",
            f"  - witness (`python {bundles.WITNESS}{' ' + args if args else ''}`): {_md(witness_line(b, line.label))}",
        ]
    out.append("")
    blocks: list[list[str]] = []
    for line in b.lines:
        block = kind_block(line.expectation.support)
        if block and block not in blocks:
            blocks.append(block)
    out += ["## Why this is a bug", ""]
    for block in blocks:
        out += block
    shown = {line.expectation.support.issue for line in b.lines}
    links = [x for x in [*(f.links.get("issues") or []), *(f.links.get("prs") or [])] if x not in shown]
    if links:
        out += ["Related: " + ", ".join(links), ""]
    out += ["## Releases", "", *versions_table(b)]
    out += [
        "## Reproduce",
        "",
        f"`{bundles.WITNESS}` needs only the standard library and {b.dist}"
        + (f" ({', '.join(b.requires)})" if b.requires else "")
        + ":",
        "",
        "```python",
        b.witness.read_text().rstrip("\n"),
        "```",
        "",
        f"From the bundle folder (`{bundles.REQUIREMENTS}` pins {b.dist} {b.version} and its dependencies with hashes):",
        "",
    ]
    for args, _ in b.arg_sets():
        uv, pip = bundles.commands(b, args)
        out += ["```sh", uv, "# or, hash-checked:", pip, "```", ""]
    out += ["Exit code 0 PASS, 1 FAIL (this report), 2 ERROR (did not run as designed); the last line is JSON.", ""]
    out += ["## Environment", "", *environment_lines(b.row.doc, b.dist, b.version)]
    out += [
        f"- attached: the executed notebook of plugpull's run (`{b.record_stem}.ipynb`, `.html`), which runs the "
        "same scenario through plugpull's harness",
        "",
    ]
    return "\n".join(out)
