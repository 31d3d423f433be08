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
