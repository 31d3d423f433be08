"""Result lines as text: what ``plugpull`` prints and what the findings notebooks show, one rendering."""

from __future__ import annotations

import textwrap

from plugpull.notes import describe
from plugpull.results import Result, Verdict, tally


def format_line(result: Result, widths: dict[str, int]) -> str:
    return "  ".join(
        [
            f"{result.verdict.value:<5}",
            f"{result.scenario:<{widths['scenario']}}",
            f"{result.point:<{widths['point']}}",
            f"{result.target:<{widths['target']}}",
            result.message,
        ]
    )


def format_text(results: list[Result]) -> str:
    widths = {k: max([len(getattr(r, k)) for r in results] + [1]) for k in ("scenario", "point", "target")}
    lines = []
    for result in results:
        lines.append(format_line(result, widths))
        # Notes are asserted, not measured: on their own lines under the measured message.
        lines.extend(f"    note: {describe(note)}" for note in result.notes)
        if result.stderr.strip() and result.verdict is not Verdict.PASS:
            lines.append(textwrap.indent(result.stderr.rstrip(), "    | "))
        if "workdir" in result.evidence:
            lines.append(f"    workdir kept: {result.evidence['workdir']}")
    return "\n".join(lines)


def format_tally(results: list[Result]) -> str:
    rows = tally(results)
    widths = {k: max(len(str(r[k])) for r in rows) for k in ("scenario", "point", "target")}
    lines = [f"{'runs':>4}  {'PASS':>4}  {'FAIL':>4}  {'ERROR':>5}  line"]
    for r in rows:
        lines.append(
            f"{r['runs']:>4}  {r['PASS']:>4}  {r['FAIL']:>4}  {r['ERROR']:>5}  "
            f"{r['scenario']:<{widths['scenario']}}  {r['point']:<{widths['point']}}  {r['target']}"
        )
    return "\n".join(lines)
