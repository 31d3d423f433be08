"""Which lines of a recall run flipped: pure functions over the lines a record keeps (``{"line", "verdict",
"message"}``), shared by ``plugpull report recall`` and the page it writes (which judges every record again)."""

from __future__ import annotations

from collections import Counter
from typing import Any


def _by_line(lines: list[dict[str, Any]]) -> dict[str, str]:
    seen: Counter[str] = Counter()
    table = {}
    for line in lines:
        seen[line["line"]] += 1
        key = line["line"] if seen[line["line"]] == 1 else f"{line['line']} #{seen[line['line']]}"
        table[key] = line["verdict"]
    return table


def _group(key: str) -> str:
    """A line's target and options without its point or held call: what a clean run's FAIL makes moot as a whole."""
    tokens = key.split(" #")[0].split()
    return " ".join([tokens[0], *sorted(t for t in tokens[1:] if "=" in t)]) if tokens else ""


def _whole_target_fails(line: dict[str, Any]) -> bool:
    """A FAIL of the clean run itself (``without any fault``) or a line it made moot: plugpull runs no fault then,
    so the line's held call, and with it its name, is missing (docs/json-schema.md, ``without_fault``)."""
    return line["verdict"] == "FAIL" and line.get("message", "").startswith(("without any fault:", "moot:"))


def flips(clean: list[dict[str, Any]], patched: list[dict[str, Any]]) -> list[str]:
    """The lines that PASS on ``clean`` and FAIL on ``patched`` (a catch); an ERROR is never one.

    A line the patched run has not (the clean run failed without any fault, so no line holds a call) flips when a
    without-fault or moot FAIL of the patched run has its target and options."""
    before, after = _by_line(clean), _by_line(patched)
    failed = {_group(line["line"]) for line in patched if _whole_target_fails(line)}
    return [
        key
        for key, verdict in before.items()
        if verdict == "PASS" and (after.get(key) == "FAIL" or (key not in after and _group(key) in failed))
    ]


def caught(unpatched: list[list[dict[str, Any]]], patched: list[dict[str, Any]]) -> list[str]:
    """The lines that flip to FAIL against every unpatched run (a line that flips between them is timing)."""
    found = [flips(run, patched) for run in unpatched]
    return [key for key in found[0] if all(key in other for other in found[1:])]


def errors_of(clean: list[dict[str, Any]], patched: list[dict[str, Any]]) -> list[str]:
    before, after = _by_line(clean), _by_line(patched)
    return [key for key, verdict in before.items() if verdict == "PASS" and after.get(key) == "ERROR"]


#: How a cancel-mid-stream line reads when its clean run's next turn (nothing cancelled) was refused
#: (checks.cancel_mid_stream.refused_next_turn): the first line of the target, the others moot.
REFUSED_NEXT_TURN = "without any fault: next turn rejected: "


def before_refused_next_turn_check(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``lines`` as plugpull read them before a refused clean next turn was a FAIL: that FAIL, and every line of its
    target and options it made moot, was ERROR ("the clean run's resume (no cancel) ended"), since each line judged
    the same clean run. Exact, because the check changed nothing else (docs/DECISIONS.md, "cancel-mid-stream")."""
    refused = {
        _group(line["line"])
        for line in lines
        if line["verdict"] == "FAIL" and line.get("message", "").startswith(REFUSED_NEXT_TURN)
    }

    def earlier(line: dict[str, Any]) -> dict[str, Any]:
        message = line.get("message", "")
        judged_by_it = message.startswith((REFUSED_NEXT_TURN, "moot:")) and _group(line["line"]) in refused
        return {**line, "verdict": "ERROR"} if line["verdict"] == "FAIL" and judged_by_it else line

    return [earlier(line) for line in lines]


def false_alarms(unpatched: list[list[dict[str, Any]]]) -> tuple[int, int]:
    """(lines that PASS in one unpatched run and FAIL in another, lines that PASS in at least one): the specificity
    is 1 - the first over the second (a catch on such a line could be timing, so none is counted)."""
    passing = {key for run in unpatched for key, verdict in _by_line(run).items() if verdict == "PASS"}
    flipped = {key for a in unpatched for b in unpatched if a is not b for key in flips(a, b)}
    return len(flipped), len(passing)
