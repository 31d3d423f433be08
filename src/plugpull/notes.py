"""Notes: an upstream issue, doc quote or cause, attached to a result line only when its evidence says so.

A note is a sentence someone will paste into an upstream bug report, so it must follow from what was
measured: each carries a condition over the result (a pure predicate on the same data ``--json``
writes) and a short description of it. A note is matched only on a FAIL line whose condition holds;
the JSON lists it apart from ``message``, which keeps only what was measured (docs/json-schema.md).

Pure: no processes, no sockets, no clock. The helpers read the JSON form of the evidence
(``Result.evidence``) and treat a missing field as "not observed", so an ERROR line's partial
evidence never matches by accident.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from plugpull.results import Result, Verdict


@dataclass(frozen=True)
class Note:
    """Words for a FAIL line, and the condition over its evidence under which they are true."""

    text: str
    condition: str  # the predicate in words, e.g. "charge_card:A recorded 2 times and charge_card:B 0 times"
    holds: Callable[[Result], bool] = field(repr=False, compare=False)
    url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "url": self.url, "condition": self.condition}


def matched(notes: Iterable[Note], result: Result) -> list[dict[str, Any]]:
    """The notes whose condition holds for ``result``, as JSON objects; none unless it is a FAIL.

    A note explains a measured failure: PASS has nothing to explain and ERROR is never evidence
    either way (docs/architecture.md), so neither gets one even if its counts look the part.
    """
    if result.verdict is not Verdict.FAIL:
        return []
    return [note.to_dict() for note in notes if note.holds(result)]


def describe(note: dict[str, Any]) -> str:
    """One note as text: its words, then its link."""
    url = note.get("url")
    return f"{note['text']} ({url})" if url else str(note["text"])


# Readers of the evidence, shared by the built-in targets' conditions (plugpull.targets).


def counts(result: Result) -> dict[str, int]:
    """Effects per name at the end of the run (kill-mid-tool, resume-after-approval); {} if none."""
    value = result.evidence.get("counts")
    return value if isinstance(value, dict) else {}


def count(result: Result, name: str) -> int:
    """How many ``name`` effects the provider recorded; 0 when the evidence has no count for it."""
    value = counts(result).get(name, 0)
    return value if isinstance(value, int) else 0


def recorded_calls(result: Result, name: str, phase: str) -> int:
    """``record_effect(name)`` calls from ``phase`` that the provider recorded as a new effect.

    A call whose key the provider already held is answered without a new effect (``recorded``
    false), so this counts the effects ``phase`` itself added.
    """
    calls = result.evidence.get("calls")
    if not isinstance(calls, list):
        return 0
    return sum(
        1
        for c in calls
        if isinstance(c, dict) and c.get("phase") == phase and c.get("name") == name and c.get("recorded") is True
    )


def approvers_that_ran_the_tool(result: Result) -> int:
    """resume-after-approval: ``approve`` processes whose process group called ``record_effect``."""
    approvals = result.evidence.get("approvals")
    if not isinstance(approvals, list):
        return 0
    return sum(1 for a in approvals if isinstance(a, dict) and (a.get("effect_calls") or 0) > 0)


def recover_ran_the_tool(result: Result) -> bool:
    """resume-after-approval, killed-*: the ``recover`` process's group called ``record_effect``."""
    recover = result.evidence.get("recover")
    return isinstance(recover, dict) and (recover.get("effect_calls") or 0) > 0


def recover_exit(result: Result) -> int | None:
    """resume-after-approval, killed-*: recover's exit code; None when it was not run, hung or never started."""
    recover = result.evidence.get("recover")
    if not isinstance(recover, dict) or not isinstance(recover.get("outcome"), dict):
        return None
    outcome = recover["outcome"]
    if outcome.get("timed_out") or outcome.get("spawn_error"):
        return None
    code = outcome.get("returncode")
    return code if isinstance(code, int) else None


def resume_exit(result: Result) -> int | None:
    """kill-mid-tool: resume's exit code; None when it was not run, hung or never started."""
    resume = result.evidence.get("resume")
    if not isinstance(resume, dict) or resume.get("timed_out") or resume.get("spawn_error"):
        return None
    code = resume.get("returncode")
    return code if isinstance(code, int) else None


def resume_reported_result(result: Result) -> bool:
    """kill-mid-tool: resume called ``record_result`` (the evidence's ``resumed`` list is not empty)."""
    resumed = result.evidence.get("resumed")
    return isinstance(resumed, list) and len(resumed) > 0


def upgrade_crosses(result: Result, release: str) -> bool:
    """resume-after-upgrade: the run started before ``release`` and was resumed on it or a later one."""
    start, end = result.evidence.get("from_version"), result.evidence.get("to_version")
    if not isinstance(start, str) or not isinstance(end, str):
        return False
    return _release(start) < _release(release) <= _release(end)


def _release(version: str) -> tuple[int, ...]:
    """``"1.20.0"`` -> ``(1, 20)``: the leading numbers, trailing zeros dropped (1.20 == 1.20.0)."""
    parts: list[int] = []
    for part in version.split("."):
        if not part.isdigit():
            break
        parts.append(int(part))
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)
