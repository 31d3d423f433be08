"""Did the resumed run finish, with the outcome it has without a crash? The golden-result check.

An agent reports its run's final outcome with ``plugpull.record_result(value)``. The clean
(fault-free) run's result is the *golden result*; after a crash a PASS also needs the phase that
finished the run to report a result equal to it (JSON equality, minus the fields the target names
as made up per run). Effects counted exactly once say nothing about a resume that exits 0 and does
nothing: the Lab 13 crash/resume study compared every resumed run with a golden run for this reason.
Pure functions: no processes, no sockets, no clock.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from plugpull.checks.judgement import Judgement, error
from plugpull.results import Verdict

NOT_CHECKED = (
    "completion not checked: the clean run reported no result "
    "(call plugpull.record_result(value) where a run ends to check it)"
)
EQUAL = "the result equals the clean run's"


def check_golden(golden: Sequence[Any], where: str, show: str = "clean") -> Judgement | None:
    """None when the clean run reported at most one result; two or more make the golden result ambiguous."""
    if len(golden) > 1:
        return error(
            f"{where} reported {len(golden)} results (record_result is called once per finished run), "
            "so the golden result is ambiguous",
            show=show,
        )
    return None


def without_fields(value: Any, ignore: Sequence[str]) -> Any:
    """``value`` without the fields named in ``ignore``: dotted paths into objects, applied to every list item."""
    for path in ignore:
        value = _drop(value, [p for p in path.split(".") if p])
    return value


def _drop(value: Any, path: list[str]) -> Any:
    if not path:
        return value
    if isinstance(value, list):
        return [_drop(v, path) for v in value]
    if isinstance(value, dict):
        head, rest = path[0], path[1:]
        if not rest:
            return {k: v for k, v in value.items() if k != head}
        return {k: (_drop(v, rest) if k == head else v) for k, v in value.items()}
    return value


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _same_kind(a: Any, b: Any) -> bool:
    # JSON has one number type, but true is not 1: Python's True == 1 must not pass as equal.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers):
        return True
    return type(a) is type(b)


def result_diff(golden: Any, resumed: Any, limit: int = 3) -> str | None:
    """None when the two JSON values are equal; else where they differ (the first ``limit`` places), one line."""
    found: list[str] = []
    _differences(golden, resumed, "$", found)
    if not found:
        return None
    more = f" (and {len(found) - limit} more)" if len(found) > limit else ""
    return "; ".join(found[:limit]) + more


def _differences(golden: Any, resumed: Any, path: str, found: list[str]) -> None:
    if not _same_kind(golden, resumed):
        found.append(f"{path}: clean {_short(golden)}, resumed {_short(resumed)}")
    elif isinstance(golden, dict):
        for key in sorted(set(golden) | set(resumed)):
            if key not in resumed:
                found.append(f"{path}.{key}: clean {_short(golden[key])}, resumed has no {key!r}")
            elif key not in golden:
                found.append(f"{path}.{key}: clean has no {key!r}, resumed {_short(resumed[key])}")
            else:
                _differences(golden[key], resumed[key], f"{path}.{key}", found)
    elif isinstance(golden, list):
        if len(golden) != len(resumed):
            found.append(f"{path}: clean has {len(golden)} items, resumed {len(resumed)}")
        else:
            for i, (a, b) in enumerate(zip(golden, resumed, strict=True)):
                _differences(a, b, f"{path}[{i}]", found)
    elif golden != resumed:
        found.append(f"{path}: clean {_short(golden)}, resumed {_short(resumed)}")


def completion_problem(golden: Any, resumed: Sequence[Any], ignore: Sequence[str], phase: str) -> str | None:
    """None when ``phase`` reported exactly one result equal to ``golden``; else the FAIL reason."""
    if not resumed:
        return f"run did not finish: {phase} exited 0 without a result"
    if len(resumed) > 1:
        return f"{phase} reported {len(resumed)} results (expected 1: record_result once per finished run)"
    diff = result_diff(without_fields(golden, ignore), without_fields(resumed[0], ignore))
    if diff:
        return f"result differs from the clean run: {diff}"
    return None


def with_completion(
    effects: Judgement,
    golden: Sequence[Any],
    resumed: Sequence[Any],
    ignore: Sequence[str],
    phase: str,
    show: str | None = None,
) -> Judgement:
    """The effects' judgement of a phase that exited 0, with the golden-result check added.

    No golden result: today's rule, and a PASS says completion was not checked. Otherwise a PASS
    needs the result too; a FAIL of the effects keeps its message and gains the result's problem.
    ``phase`` names the process in the message; ``show`` is whose output goes under the line.
    """
    show = phase if show is None else show
    if effects.verdict is Verdict.ERROR:
        return effects
    if not golden:
        if effects.verdict is Verdict.PASS:
            return Judgement(Verdict.PASS, f"{effects.message}; {NOT_CHECKED}", effects.show)
        return effects
    problem = completion_problem(golden[0], resumed, ignore, phase)
    if problem is None:
        if effects.verdict is Verdict.PASS:
            return Judgement(Verdict.PASS, f"{effects.message}; {EQUAL}", effects.show)
        return effects
    if effects.verdict is Verdict.PASS:
        return Judgement(Verdict.FAIL, problem, show)
    return Judgement(Verdict.FAIL, f"{effects.message}; {problem}", effects.show or show)
