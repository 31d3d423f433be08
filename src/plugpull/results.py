"""Results: the data every rendering (text, JSON, notebooks, docs/results.md) is made from.

docs/json-schema.md documents every field. ``SCHEMA`` goes into every file written.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from plugpull.evidence import asdict

# 2: notes moved out of `message` into their own list (docs/json-schema.md, "Changes from schema 1").
# 3: run records hold the load average (`load`) and the witnesses' output (`witnesses`); the results
#    themselves are as in 2 (docs/json-schema.md, "Changes from schema 2").
SCHEMA = 3

#: Environment variable names that are never written into a report or JSON.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)


class Verdict(str, enum.Enum):
    """PASS: ran as designed, expectation held. FAIL: ran as designed, expectation broke.
    ERROR: could not run as designed; never evidence either way (Jepsen's ``:info``)."""

    PASS = "PASS"
    FAIL = "FAIL"
    ERROR = "ERROR"

    def __str__(self) -> str:
        return self.value


@dataclass
class Result:
    """One result line: a scenario at one point against one target."""

    verdict: Verdict
    scenario: str
    point: str
    target: str
    message: str  # only what was measured
    # Notes whose condition over the evidence held (plugpull.notes): {"text", "url", "condition"} each.
    notes: list[dict[str, Any]] = field(default_factory=list)
    framework: str | None = None
    version: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)
    # The target's stderr shown under the line (the recovering phase's for a FAIL, the named phase's for an ERROR).
    stderr: str = ""
    seconds: float = 0.0
    # The --target name of a built-in ("langgraph", "langgraph-siblings"), "agent" for --agent; "" in records
    # written before lines named their target. Names JUnit classes (plugpull.junit), where the label's version and dots must not.
    target_name: str = ""

    def target_label(self) -> str:
        return self.target

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data. Its ``evidence`` is this result's own dict, not a copy: it is plain data
        already (each scenario's ``ev.to_dict()``, made for this result alone), and copying it again was half of
        what writing a LangGraph every-boundary line cost the harness. Read it; do not change it."""
        data = {f.name: self.evidence if f.name == "evidence" else asdict(getattr(self, f.name)) for f in fields(self)}
        data["verdict"] = self.verdict.value
        return redact(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        data = dict(data)
        data["verdict"] = Verdict(data["verdict"])
        return cls(**data)


def redact(value: Any) -> Any:
    """Replace the value of any environment variable whose name looks secret, wherever it occurs.

    Evidence carries target output; a target may print its environment. Values shorter
    than 4 characters are left alone (they would blank out common words).
    """
    secrets = [v for k, v in os.environ.items() if SECRET_NAME.search(k) and len(v) >= 4]
    if not secrets:
        return value
    return _redact(value, secrets)


def _redact(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, "[redacted]")
        return value
    if isinstance(value, dict):
        return {k: _redact(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact(v, secrets) for v in value]
    return value


class Line(NamedTuple):
    """What one result line is about: a scenario at one point against one target (variant)."""

    scenario: str
    point: str
    target: str


def line_of(result: Result) -> Line:
    """The line a result belongs to; a line that held a call named by --hold or by kill-mid-tool's
    expansion is one line per held call: "after-effect charge_card:1". A target's own hold
    (the siblings targets, ``hold=`` among its options) is part of the target already."""
    point = result.point
    hold = result.evidence.get("hold") if isinstance(result.evidence, dict) else None
    if hold and "hold" not in result.options:
        point = f"{point} {hold}"
    return Line(result.scenario, point, result.target)


def lines(results: Iterable[Result]) -> dict[Line, list[Result]]:
    """Results grouped per line, in first-seen order: every repeat of a line together.

    The one grouping the text tally, the JUnit testcases and the findings notebooks count by.
    """
    grouped: dict[Line, list[Result]] = {}
    for result in results:
        grouped.setdefault(line_of(result), []).append(result)
    return grouped


def tally(results: list[Result]) -> list[dict[str, Any]]:
    """Verdict counts per line (scenario, point, target), in first-seen order, for repeated runs."""
    rows = []
    for line, runs in lines(results).items():
        row: dict[str, Any] = {**line._asdict(), "runs": len(runs)}
        row.update({v.value: sum(1 for r in runs if r.verdict is v) for v in Verdict})
        rows.append(row)
    return rows


def to_document(results: list[Result], **extra: Any) -> dict[str, Any]:
    """The top-level JSON document: ``{"schema": SCHEMA, "results": [...], ...extra}``."""
    return {"schema": SCHEMA, **redact(extra), "results": [r.to_dict() for r in results]}


def scrub_env(env: dict[str, str]) -> dict[str, str]:
    """A copy of ``env`` without variables whose name looks secret (for reports that list env)."""
    return {k: v for k, v in env.items() if not SECRET_NAME.search(k)}
