"""One finding across releases, from its records only: the versions x lines matrix, the flips, the upgrades.

``notebooks/summary.ipynb`` (parameter ``finding``) draws what :func:`matrix` returns as a heatmap, and
:func:`write` runs it with papermill into ``findings/<id>/summary.html``. Everything here is read from the
newest record per pin set, finding.toml and the sweep's list of releases (findings/<id>/sweep.json); nothing
is run and no index is asked, so the page is the same wherever it is rebuilt from the same files.

Upgrade runs (a run saved by one release and resumed by another) are read from any record whose results
carry ``from`` and ``to`` options (the resume-after-upgrade scenario), shown as a from x to matrix.
"""

from __future__ import annotations

import html
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from plugpull.report.harness import flips as flip_logic
from plugpull.report.harness import history, markdown, sweep
from plugpull.report.harness.finding import FINDINGS_DIR, Finding, load_all
from plugpull.report.kernel import claims as claim_logic
from plugpull.report.kernel import record, versions

SUMMARY = "summary.html"
NOTEBOOK = Path("notebooks") / "summary.ipynb"


@dataclass
class Column:
    """One release: its cells per line and the record they come from."""

    version: str
    pin: str
    date: str
    run_id: str
    record: str  # path of the record's HTML, relative to the finding's folder
    cells: dict[str, flip_logic.Cell]
    error: str | None = None
    # Line -> the record's judgement of it against its claim (claims.REPRODUCES, ...); absent: no claim
    # covers this release.
    statuses: dict[str, str] = field(default_factory=dict)

    def shown(self, line: str) -> str:
        """The cell as tables show it: the outcome and the judgement's mark (``FAIL ✓``, ``FAIL 0/20 ~``)."""
        cell = self.cells.get(line)
        if cell is None:
            return ""
        return f"{cell.text()} {claim_logic.MARKS.get(self.statuses.get(line, ''), claim_logic.NO_CLAIM_MARK)}"


@dataclass
class Matrix:
    finding: str
    framework: str
    lines: list[str]
    timing: dict[str, bool]
    columns: list[Column]
    releases: list[str]  # every release the sweep listed (or the measured ones without a sweep)
    flips: list[flip_logic.Flip] = field(default_factory=list)
    availability: flip_logic.Availability = field(default_factory=flip_logic.Availability)
    kinds: dict[str, str] = field(default_factory=dict)  # line -> its FAIL claims' kinds ("" for none)

    def shown(self, line: str) -> str:
        """The line with its kinds, as tables name it: ``after-effect key=none · documented``."""
        return f"{line} · {self.kinds[line]}" if self.kinds.get(line) else line

    @property
    def unmeasured(self) -> list[str]:
        seen = {c.version for c in self.columns}
        return [v for v in self.releases if v not in seen]


def matrix(root: Path, finding_id: str, package: str | None = None) -> Matrix:
    """The versions x lines matrix of ``finding_id`` for ``package`` (default: the finding's framework)."""
    finding = load_all(root)[finding_id]
    package = package or finding.framework
    claims = sweep.swept_claims(finding, package)
    lines = [c.label for c in claims]
    columns = []
    for version, (cells, doc) in sweep.measured(finding, package).items():
        date = doc["date"]
        html = f"{date}/{record.stem(doc)}.html"
        statuses = {j.claim.label: j.status for j in claim_logic.judge(claims, doc)}
        columns.append(
            Column(version, doc["pin"], date, record.run_id(doc), html, cells, doc.get("error"), statuses),
        )
    columns.sort(key=lambda c: versions.sort_key(c.version))
    listed = sweep.read_sweep(finding)
    releases = [c.version for c in columns]
    if listed and listed.get("framework") == package:
        releases = sorted(set(listed["releases"]) | set(releases), key=versions.sort_key)
    measured = {c.version: c.cells for c in columns}
    return Matrix(
        finding=finding.id,
        framework=package,
        lines=lines,
        timing={c.label: c.timing for c in claims},
        columns=columns,
        releases=releases,
        flips=flip_logic.flips(releases, measured),
        availability=flip_logic.availability(releases, measured),
        kinds={c.label: ", ".join(c.kinds()) for c in claims},
    )


def flip_lines(m: Matrix) -> list[str]:
    """One Markdown line per flip, or the sentence saying there is none."""
    if not m.columns:
        return [f"No record of {m.finding} on {m.framework} yet."]
    out = []
    if m.availability.cannot_run:
        reasons = sorted(
            {
                cell.reason
                for column in m.columns
                if column.version in m.availability.cannot_run
                for cell in column.cells.values()
                if cell.reason
            }
        )
        out.append(
            f"- cannot run on {len(m.availability.cannot_run)} release(s): {', '.join(m.availability.cannot_run)}"
            + (f" ({'; '.join(r[:160] for r in reasons[:3])})" if reasons else "")
        )
        first = m.availability.first_runnable
        if first is not None:
            before = [v for v in m.releases[: m.releases.index(first)]]
            last_cannot = max((m.releases.index(v) for v in m.availability.cannot_run if v in before), default=-1)
            gap = [v for v in before[last_cannot + 1 :] if v in m.unmeasured]
            out.append(
                f"- the first release that runs the target: **{first}**"
                + (f" (verified: {before[last_cannot]} cannot run)" if not gap and last_cannot >= 0 else "")
                + (f" at the latest ({len(gap)} release(s) before it not run)" if gap else "")
            )
    for flip in m.flips:
        out.append(
            f"- `{flip.line}`: {flip.was.text()} on {flip.before} → {flip.becomes.text()} from **{flip.after}**"
            + (f" ({', '.join(flip.cannot_run_between)} between cannot run)" if flip.cannot_run_between else "")
            + (
                " — verified: both sides run"
                if flip.verified
                else f" — not verified: {len(flip.unmeasured_between)} release(s) between not run"
            )
        )
    if not m.flips:
        runnable = [c.version for c in m.columns if any(x.runnable for x in c.cells.values())]
        if len(runnable) > 1:
            out.append(
                "- no flip: every claimed line has the same outcome on every measured release that runs "
                f"({runnable[0]} … {runnable[-1]})"
            )
        elif runnable:  # "no flip (1.2.24 … 1.2.24)" read as a range measured
            out.append(f"- one release runs the lines ({runnable[0]}): no flip can be seen across releases yet")
        else:
            out.append("- no measured release runs the lines")
    if m.unmeasured:
        out.append(
            f"- not run: {len(m.unmeasured)} of {len(m.releases)} listed release(s) "
            f"(bisection: their neighbours agree): {', '.join(m.unmeasured)}"
        )
    return out


def title(finding: Finding) -> str:
    """The summary's title: the finding's own (``A tool killed ... runs again``), with its id, not "A finding across
    releases" on every page."""
    return f"{finding.title} ({finding.id}, across releases)"


def heading(finding: Finding) -> str:
    """The page's heading, as HTML: the finding's title, then its id, each word kept whole (markdown.words: a
    Markdown heading let Chromium break ``kill-mid-tool-more-frameworks`` at its hyphens)."""
    return (
        f"<h1>{markdown.words(finding.title)}</h1>"
        f"<p>Finding {markdown.words(finding.id)} across releases, from its records.</p>"
    )


def flips_section(root: Path, finding: Finding) -> str:
    """The generated ``flips FINDING`` section of a finding page: the releases measured and the flips."""
    m = matrix(root, finding.id)
    measured = ", ".join(c.version for c in m.columns) or "none"
    head = [
        f"Releases of {m.framework} with a record: {measured}.",
        f"Summary with the versions x lines heatmap: [findings/{finding.id}/{SUMMARY}](../findings/{finding.id}/{SUMMARY}).",
        "",
    ]
    return "\n".join(head + flip_lines(m)) + "\n"


@dataclass
class Upgrade:
    framework: str
    line: str  # the point with the line's options (variant=swap), so variants do not share a cell
    point: str
    source: str
    target: str
    verdict: str
    run_id: str
    date: str
    message: str
    record: str = ""  # the record's HTML, relative to findings/
    reason: str = ""  # an ERROR's message with the last line of the target's stderr (sweep.error_reason)


def upgrades(root: Path, package: str, finding_id: str | None = None) -> list[Upgrade]:
    """Upgrade runs of ``package`` in the newest records (results with ``from``/``to`` options): of ``finding_id``,
    or of any finding when it is None. A finding's summary passes its id: without it the power-loss page showed
    resume-after-upgrade's runs of the same frameworks."""
    out = []
    for path, doc in history.latest(root):
        if finding_id is not None and doc["finding"] != finding_id:
            continue
        for r in doc.get("results") or []:
            options = r.get("options") or {}
            # The resume-after-upgrade scenario writes the two releases in each result's evidence and
            # the record's top-level "upgrade" (docs/json-schema.md); options are the other spelling.
            evidence = r.get("evidence") if isinstance(r.get("evidence"), dict) else {}
            pair = doc.get("upgrade") if isinstance(doc.get("upgrade"), dict) else {}
            source = options.get("from") or evidence.get("from_version") or pair.get("from")
            target = options.get("to") or evidence.get("to_version") or pair.get("to")
            framework = r.get("framework") or doc.get("framework")
            if source and target and framework == package:
                shown = " ".join(f"{k}={v}" for k, v in sorted(options.items()) if k not in ("from", "to"))
                out.append(
                    Upgrade(
                        framework,
                        f"{r.get('point', '')} {shown}".strip(),
                        r.get("point", ""),
                        str(source),
                        str(target),
                        r.get("verdict", ""),
                        record.run_id(doc),
                        doc["date"],
                        r.get("message", ""),
                        path.with_suffix(".html").relative_to(root / FINDINGS_DIR).as_posix(),
                        sweep.error_reason(r) if r.get("verdict") == "ERROR" else str(r.get("message", "")),
                    )
                )
    return sorted(out, key=lambda u: (u.line, versions.sort_key(u.source), versions.sort_key(u.target)))


# --- the page's tables, as HTML (no pandas index, links to the records, text that wraps) ------------------

#: Releases per heatmap and per table, so a sweep of 30 releases is several that fit the page, not one too wide.
CHUNK = 7


def chunks(m: Matrix, size: int = CHUNK) -> list[list[Column]]:
    """The measured releases, oldest first, in as few groups of at most ``size`` as there must be, of even sizes
    (10 releases: 5 and 5, not 7 and 3)."""
    if not m.columns:
        return [[]]
    groups = -(-len(m.columns) // size)
    each = -(-len(m.columns) // groups)
    return [m.columns[i : i + each] for i in range(0, len(m.columns), each)]


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def cells_table(m: Matrix, columns: list[Column]) -> str:
    """Lines x ``columns``: each cell the outcome with the judgement's mark, or "cannot run" with the number of
    its reason, listed once under the table (a release that cannot run usually fails every line the same way).
    Each release's head links its record and gives its run id."""
    if not columns or not m.lines:
        return "<p>no record yet</p>"
    head = "".join(
        f'<th><a href="{_e(c.record)}">{_e(c.version)}</a><br><small>{_e(c.run_id).replace("T", "T<wbr>", 1)}</small></th>'
        for c in columns
    )
    reasons: list[str] = []
    rows = []
    for line in m.lines:
        cells = []
        for c in columns:
            cell = c.cells.get(line)
            if cell is None:
                cells.append("<td></td>")
            elif not cell.runnable:
                reason = cell.reason[:300] or "no reason recorded"
                if reason not in reasons:
                    reasons.append(reason)
                mark = claim_logic.MARKS.get(c.statuses.get(line, ""), claim_logic.NO_CLAIM_MARK)
                cells.append(f'<td class="cannot">cannot run {mark} <sup>{reasons.index(reason) + 1}</sup></td>')
            else:
                cells.append(f"<td>{markdown.words(c.shown(line))}</td>")
        rows.append(f"<tr><th>{markdown.words(m.shown(line))}</th>{''.join(cells)}</tr>")
    table = f'<table class="cells"><thead><tr><th>line</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    if reasons:
        table += (
            '<ol class="reasons">' + "".join(f"<li>cannot run: {markdown.words(r)}</li>" for r in reasons) + "</ol>"
        )
    return table


def upgrades_table(ups: list[Upgrade]) -> str:
    """One row per upgrade run: the line, the two releases, the verdict and why (an ERROR's reason included)."""
    if not ups:
        return ""
    rows = "".join(
        f"<tr><td>{markdown.words(u.line)}</td><td>{_e(u.source)}</td><td>{_e(u.target)}</td><td>{_e(u.verdict)}</td>"
        f'<td>{markdown.words(u.reason or u.message)}</td><td><a href="../{_e(u.record)}">{_e(u.run_id)}</a></td></tr>'
        for u in ups
    )
    return (
        '<table class="upgrades"><thead><tr><th>line</th><th>saved on</th><th>resumed on</th><th>verdict</th>'
        f"<th>why</th><th>record</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def problems(root: Path, finding: Finding) -> list[str]:
    """Why findings/<id>/summary.html is out of date, or nothing: it shows the run of every column the
    records give it today (a record newer than the page is a stale page). A finding without one has nothing to
    check here (that every finding has one is tests/report/test_pages_in_chromium.py's).
    """
    page = finding.directory / SUMMARY
    if not page.is_file():
        return []
    regenerate = f"run `plugpull report summary {finding.id}`"
    text = page.read_text()
    missing = [c for c in matrix(root, finding.id).columns if c.run_id not in text]
    return [
        f"findings/{finding.id}/{SUMMARY} does not show the newest record of {c.version} ({c.pin}, run "
        f"{c.run_id}): {regenerate}"
        for c in missing
    ]


def write(root: Path, finding_id: str) -> Path:
    """Run notebooks/summary.ipynb for ``finding_id`` in this Python and write findings/<id>/summary.html."""
    from plugpull.report.harness import environment, ipynb

    out = root / FINDINGS_DIR / finding_id / SUMMARY
    scratch = Path(tempfile.mkdtemp(prefix="plugpull-summary-"))
    try:
        env = environment.current(scratch / "kernel")
        executed = scratch / "summary.ipynb"
        run = ipynb.execute(root / NOTEBOOK, executed, env, {"finding": finding_id, "root": str(root)}, scratch)
        if run.error:
            raise RuntimeError(f"summary notebook failed: {run.error}")
        html = scratch / SUMMARY
        ipynb.render_html(executed, html, exclude_input=True, title=title(load_all(root)[finding_id]))
        shutil.copyfile(html, out)
        return out
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
