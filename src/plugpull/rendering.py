"""Result lines as text: what ``plugpull`` prints and what the findings notebooks show, one rendering."""

from __future__ import annotations

import textwrap
from itertools import groupby

from plugpull.notes import describe
from plugpull.results import Result, Verdict, tally

#: Lines of the target's stderr shown under a line (the JSON keeps the whole captured tail).
STDERR_TAIL_LINES = 20

#: Which phase's record_effect calls a FAIL line summarises, per scenario and point.
RECOVERY_PHASE = {
    "kill-mid-tool": {"*": ("resume", "resume")},
    "every-boundary": {"*": ("resume", "resume")},
    "resume-after-approval": {
        "approve-elsewhere": ("approve", "approve"),
        "double-resume": ("approve-2", "the second approve"),
        "racing-resumers": ("race", "the racing approvers"),
        "*": ("recover", "recover"),
    },
}


def times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def call_summary(calls: list[dict], phase: str, who: str) -> str:
    """One line on what ``phase`` asked the provider for, e.g. "resume called refund twice".

    Says "made 0 record_effect calls" when it asked for nothing (the agent thought the run was
    done, or never reached the tool), and which calls a key already recorded kept from counting,
    so "the provider saw exactly 1 refund" under a FAIL is not read as a contradiction.
    """
    mine = [c for c in calls if c.get("phase") == phase]
    if not mine:
        return f"{who} made 0 record_effect calls"
    parts = []
    for name in dict.fromkeys(c["name"] for c in mine):
        of_name = [c for c in mine if c["name"] == name]
        kept = sum(1 for c in of_name if c.get("key") is not None and not c.get("recorded"))
        part = f"{name} {times(len(of_name))}"
        if kept:
            part += f" ({kept} with a key already recorded, so not counted again)"
        parts.append(part)
    return f"{who} called " + ", ".join(parts)


def summary_of(result: Result) -> str | None:
    """The call summary for a FAIL line, or None where the scenario makes no effect calls."""
    phases = RECOVERY_PHASE.get(result.scenario)
    calls = result.evidence.get("calls")
    if phases is None or calls is None:
        return None
    phase, who = phases.get(result.point, phases["*"])
    return call_summary(calls, phase, who)


def held_call(calls: list[dict], name: str | None = None) -> str | None:
    """The held call as NAME#N (the N-th call of NAME in its phase), or None if none was held.

    ``name``: the call the kill was aimed at, when another call was held beside it (a sibling held
    with --sibling NAME:running may arrive first).
    """
    held = next((c for c in calls if c.get("held_at") and name in (None, c["name"])), None)
    if held is None:
        return None
    n = sum(1 for c in calls if c["phase"] == held["phase"] and c["name"] == held["name"] and c["seq"] <= held["seq"])
    return f"{held['name']}#{n}"


def shown_point(result: Result) -> str:
    """The point, with the held call when one was held: ``after-effect charge_card#1``.

    every-boundary lines carry their place in the clean run's boundaries (``boundary 7/12 after
    model-call 2``), and a random kill where it landed (``random 3: between ... and ...``).
    """
    if result.scenario == "every-boundary":
        place = result.evidence.get("boundary") or {}
        if "index" in place:
            # A step marked from a background thread was held while the run went on (a checkpoint writer).
            background = " [background thread]" if place.get("main_thread") is False else ""
            return f"boundary {place['index']}/{place['of']} {result.point}{background}"
        landed = result.evidence.get("landed")
        return f"{result.point}: {landed}" if landed else result.point
    held = held_call(result.evidence.get("calls") or [], result.evidence.get("held_name"))
    shown = result.point if held is None else f"{result.point} {held}"
    # --save: the saves the kill was aimed at ("after-effect refund#1 [checkpoint-save 2 withheld]").
    saves = [spec.split(":") for spec in result.evidence.get("save_specs") or []]
    return shown + (" [" + ", ".join(" ".join(parts) for parts in saves) + "]" if saves else "")


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
    """Consecutive lines of one target that failed alike before any fault: shown once (issue 12).

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
        if result.verdict is Verdict.FAIL:
            summary = summary_of(result)
            if summary:
                lines.append(f"    {summary}")
        # Notes are asserted, not measured: on their own lines under the measured message.
        lines.extend(f"    note: {describe(note)}" for note in result.notes)
        if result.stderr.strip() and result.verdict is not Verdict.PASS:
            lines.append(textwrap.indent(tail(result.stderr), "    | "))
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
