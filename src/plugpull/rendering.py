"""Result lines as text: what ``plugpull`` prints and what the findings notebooks show, one rendering.

How a scenario's lines look beyond the common columns (the point as shown, the call summary under a
FAIL) is the scenario's own rendering hint (``Scenario.shown_point``, ``Scenario.call_summary``).
"""

from __future__ import annotations

import textwrap
from itertools import groupby

from plugpull.hints import call_summary, duplicate_causes, held_call, times
from plugpull.notes import describe
from plugpull.results import Result, Verdict, tally
from plugpull.results import lines as grouped_lines
from plugpull.scenarios.registry import REGISTRY

__all__ = [
    "STDERR_TAIL_LINES",
    "call_summary",
    "closing_line",
    "duplicate_causes",
    "format_coverage",
    "format_line",
    "format_tally",
    "format_text",
    "held_call",
    "setup_groups",
    "shown_point",
    "shown_target",
    "summary_of",
    "tail",
    "times",
    "tour_line",
]

#: Lines of the target's stderr shown under a line (the JSON keeps the whole captured tail).
STDERR_TAIL_LINES = 20


def summary_of(result: Result) -> str | None:
    """The call summary for a FAIL line, or None where the scenario makes no effect calls."""
    return REGISTRY.hints(result.scenario).call_summary(result)


def shown_point(result: Result) -> str:
    """The point as the line's scenario shows it: ``after-effect charge_card#1``, ``boundary 7/12 after ...``."""
    return REGISTRY.hints(result.scenario).shown_point(result)


def shown_target(result: Result) -> str:
    """The target label, with the framework and version an --agent announced from inside its process."""
    if result.framework and result.version and result.version not in result.target:
        return f"{result.target} [{result.framework} {result.version}]"
    return result.target


def format_line(result: Result, widths: dict[str, int], point: str | None = None) -> str:
    return "  ".join(
        [
            f"{result.verdict.value:<5}",
            f"{result.scenario:<{widths['scenario']}}",
            f"{point or shown_point(result):<{widths['point']}}",
            f"{shown_target(result):<{widths['target']}}",
            result.message,
        ]
    )


def tail(text: str, lines: int = STDERR_TAIL_LINES) -> str:
    kept = text.rstrip().splitlines()
    if len(kept) <= lines:
        return "\n".join(kept)
    return "\n".join([f"... ({len(kept) - lines} earlier lines in --json)", *kept[-lines:]])


def setup_groups(results: list[Result]) -> list[tuple[list[Result], str | None]]:
    """Consecutive lines of one target that failed alike before any fault: shown once.

    A setup ERROR (the command cannot start, the clean run fails) stops every point with the same
    message and output; one line with "every point" says so without repeating it.
    """

    def key(r: Result) -> tuple:
        if r.verdict is not Verdict.ERROR:
            return (id(r),)
        return (r.scenario, r.target, r.message, r.stderr)

    groups = []
    for _, run in groupby(results, key=key):
        members = list(run)
        points = list(dict.fromkeys(r.point for r in members))
        groups.append((members, None if len(points) < 2 else "every point"))
    return groups


def format_text(results: list[Result]) -> str:
    groups = setup_groups(results)
    firsts = [(g[0], label) for g, label in groups]
    widths = {
        "scenario": max([len(r.scenario) for r, _ in firsts] + [1]),
        "point": max([len(label or shown_point(r)) for r, label in firsts] + [1]),
        "target": max([len(shown_target(r)) for r, _ in firsts] + [1]),
    }
    lines = []
    for result, label in firsts:
        lines.append(format_line(result, widths, label))
        # A moot line, or one failed by the clean run, ran no recovering phase: no calls of it to sum up
        # (docs/agent-protocol.md, "A bug that shows without any fault").
        ran = not result.evidence.get("moot") and not result.message.startswith("without any fault: ")
        if result.verdict is Verdict.FAIL and ran:
            summary = summary_of(result)
            if summary:
                lines.append(f"    {summary}")
                # Why a count went past 1: each counted call's key, phase and thread.
                lines.extend(f"    {why}" for why in duplicate_causes(result.evidence.get("calls") or []))

            if result.evidence.get("aimed"):  # a random kill's FAIL: the aimed kill that replays it alone
                lines.append(f"    reproduce alone: {result.evidence['aimed']}")
        # Notes are asserted, not measured: on their own lines under the measured message.
        lines.extend(f"    note: {describe(note)}" for note in result.notes)
        if result.stderr.strip() and result.verdict is not Verdict.PASS:
            lines.append(textwrap.indent(tail(result.stderr), "    | "))
        if "workdir" in result.evidence:
            lines.append(f"    workdir kept: {result.evidence['workdir']}")
    return "\n".join(lines)


def format_coverage(results: list[Result]) -> str:
    """Per kill-mid-tool target, which effect calls of the clean run were killed at.

    "kill-mid-tool, python agent.py: killed at 3 of 3 effect calls, 6 lines"; when some were not
    (--first-effect, --hold), which, so two PASS lines at the first call do not read as "the whole
    run is safe". Only for a clean run with more than one effect call, and not for a target that holds
    its own call (``hold=`` among its options).
    """
    lines = []
    for target, group in groupby([r for r in results if r.scenario == "kill-mid-tool"], key=shown_target):
        members = list(group)
        owed = next((r.evidence.get("effect_calls") for r in members if r.evidence.get("effect_calls")), None)
        if not owed or len(owed) < 2 or any("hold" in r.options for r in members):
            # One effect call: the lines' own points say it all. A target aimed at one call by design
            # (the siblings targets' own hold) covers that call on purpose.
            continue
        killed = {
            held_call(r.evidence.get("calls") or [], r.evidence.get("held_name"))
            for r in members
            if r.evidence.get("proof")
        }
        killed = [c for c in owed if c in killed]
        line = f"kill-mid-tool, {target}: killed at {len(killed)} of {len(owed)} effect calls, {len(members)} line{'s' if len(members) != 1 else ''}"
        missed = [c for c in owed if c not in killed]
        if missed:
            line += f"; not killed at {', '.join(missed)}"
        lines.append(line)
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


def closing_line(results: list[Result], strict: bool = False) -> str:
    """The last line of the text output: counts by verdict, and what the exit code is and why.

    ``2 FAIL, 22 PASS of 24 lines; exit code 0: a FAIL fails the command only with --strict (exit 1)``.
    """
    if not results:
        return "no line ran"
    counted = {v: sum(1 for r in results if r.verdict is v) for v in (Verdict.ERROR, Verdict.FAIL, Verdict.PASS)}
    said = ", ".join(f"{n} {v.value}" for v, n in counted.items() if n)
    total, distinct = len(results), len(grouped_lines(results))
    line = f"{said} of {total} line{'s' if total != 1 else ''}"
    if distinct < total:  # --repeat: every line ran more than once
        line = f"{said} of {total} runs of {distinct} line{'s' if distinct != 1 else ''}"
    if counted[Verdict.ERROR]:
        return f'{line}; exit code 2: an ERROR proves nothing either way (docs/cli.md, "Exit codes")'
    if counted[Verdict.FAIL] and strict:
        return f"{line}; exit code 1 (--strict)"
    if counted[Verdict.FAIL]:
        return f"{line}; exit code 0: a FAIL fails the command only with --strict (exit 1)"
    return line


def tour_line(results: list[Result]) -> str:
    """The last line of plain ``plugpull``: that it ran a tour, and how to run every line."""
    lines = len(grouped_lines(results))
    return (
        f"a tour of the default run: {lines} line{'s' if lines != 1 else ''}, per framework and scenario one its "
        "finding claims FAILs and one it claims PASSes, none of them timing-dependent; every line: plugpull --all"
    )
