"""What a finding expects, per line and per version, and the judgement of a run record against it.

finding.toml holds one ``[[claims]]`` table per line (scenario, point, framework, options) with one
or more ``expect`` entries, each for some pin sets or a version range of the line's framework: the
verdict (and where it matters the effect counts), or for a line marked ``timing`` a FAIL-rate range
(docs/report.md, "Claims"). :func:`judge` compares a record's results with them, line by line:

- *reproduces*: every run that finished matches the claim (the verdict and counts; on a timing line
  the counts, and the FAIL rate's 95 % Wilson interval reaches the claimed range);
- *does not reproduce*: a run contradicts it, or the whole interval of the FAIL rate is outside the range;
- *could not run*: the record has no finished run of the line (every run ERROR, the notebook or
  the environment failed, or the line was not run this time).

Pure and standard library only: the harness imports it for ``report --check`` and ``--regenerate``,
and the kernel for the run's per-line repeats.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

REPRODUCES, DOES_NOT_REPRODUCE, COULD_NOT_RUN = "reproduces", "does not reproduce", "could not run"
VERDICTS = ("PASS", "FAIL", "ERROR")


class ClaimError(ValueError):
    """A claim in finding.toml that cannot be used: bad input, reported as one line."""


# --- versions -------------------------------------------------------------------------------

_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*([0-9][0-9A-Za-z.+-]*)\s*$")


def version_key(version: str) -> tuple[int, ...]:
    """``"1.20.0"`` -> ``(1, 20, 0)``; trailing zeros dropped so 1.20 == 1.20.0; a pre-release
    suffix (``1.20.0rc1``) counts as its release: pin sets here are releases."""
    parts = []
    for part in version.split("+")[0].split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        parts.append(int(digits.group()))
        if digits.group() != part:
            break
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def parse_range(spec: str) -> list[tuple[str, tuple[int, ...]]]:
    """``">=1.18, <1.20"`` -> clauses; raises ClaimError on anything else."""
    clauses = []
    for text in spec.split(","):
        match = _CLAUSE.match(text)
        if match is None:
            raise ClaimError(f"version range {spec!r}: {text.strip()!r} is not like '>=1.20' or '<1.20.0'")
        clauses.append((match.group(1), version_key(match.group(2))))
    return clauses


def in_range(version: str, spec: str) -> bool:
    key = version_key(version)
    ops = {
        ">=": key.__ge__,
        "<=": key.__le__,
        ">": key.__gt__,
        "<": key.__lt__,
        "==": key.__eq__,
        "!=": key.__ne__,
    }
    return all(ops[op](bound) for op, bound in parse_range(spec))


# --- rates --------------------------------------------------------------------------------


def wilson(failures: int, runs: int, z: float = 1.959964) -> tuple[float, float]:
    """95 % Wilson score interval of a FAIL rate (failures of runs); (0, 1) when there are no runs.

    Wilson rather than the normal approximation: it stays inside [0, 1] and is usable at 0 of 20
    or 20 of 20 (https://en.wikipedia.org/wiki/Binomial_proportion_confidence_interval#Wilson_score_interval).
    """
    if runs <= 0:
        return 0.0, 1.0
    p = failures / runs
    denominator = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denominator
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def rate_text(failures: int, runs: int) -> str:
    """``"FAIL 19/20 = 0.95 [0.76, 0.99]"``: the rate and its 95 % Wilson interval."""
    if runs == 0:
        return "no finished runs"
    lo, hi = wilson(failures, runs)
    return f"FAIL {failures}/{runs} = {failures / runs:.2f} [{lo:.2f}, {hi:.2f}]"


# --- claims -------------------------------------------------------------------------------

# A count is an exact number or an inclusive [low, high] range.
Count = tuple[int, int]


@dataclass(frozen=True)
class Expectation:
    """What one claim line expects on some pin sets or a version range of its framework."""

    pins: tuple[str, ...] = ()
    versions: str | None = None
    verdict: str | None = None
    fail_rate: tuple[float, float] | None = None
    # Effect name (a glob: fnmatch, case-sensitive) -> the count summed over the matching names.
    counts: Mapping[str, Count] = field(default_factory=dict)
    why: str = ""  # one short line: what this expectation stands for (shown with the judgement)

    def covers(self, pin: str, version: str | None) -> bool:
        if self.pins:
            return pin in self.pins
        return version is not None and self.versions is not None and in_range(version, self.versions)

    def describe(self) -> str:
        parts = [self.verdict] if self.verdict else []
        if self.fail_rate is not None:
            parts.append(f"FAIL rate in [{self.fail_rate[0]:g}, {self.fail_rate[1]:g}]")
        parts += [f"{name}={_count_text(c)}" for name, c in self.counts.items()]
        return ", ".join(parts)

    def scope(self) -> str:
        return ", ".join(self.pins) if self.pins else f"{self.versions}"


@dataclass(frozen=True)
class Claim:
    """One line of a finding: which results it is about, how often to run it, what it expects."""

    point: str
    scenario: str | None = None
    framework: str | None = None  # the result's framework; None: any (a finding about one framework)
    options: Mapping[str, str] = field(default_factory=dict)  # every listed option must match
    timing: bool = False  # the outcome depends on timing: judged as a FAIL rate over many runs
    repeats: int = 1  # runs per report for this line (a timing line needs many)
    expect: tuple[Expectation, ...] = ()

    def matches(self, scenario: str, point: str, framework: str | None, options: Mapping[str, Any]) -> bool:
        return (
            point == self.point
            and (self.scenario is None or scenario == self.scenario)
            and (self.framework is None or framework == self.framework)
            and all(str(options.get(k)) == v for k, v in self.options.items())
        )

    def matches_result(self, result: Mapping[str, Any]) -> bool:
        return self.matches(
            result.get("scenario", ""), result.get("point", ""), result.get("framework"), result.get("options") or {}
        )

    def expectation(self, pin: str, version: str | None) -> Expectation | None:
        """The first ``expect`` entry that covers this pin set or framework version."""
        return next((e for e in self.expect if e.covers(pin, version)), None)

    @property
    def label(self) -> str:
        """``after-effect durability=async key=tool-call-id`` (with the framework when the claim names one)."""
        head = [self.framework] if self.framework else []
        return " ".join([*head, self.point, *(f"{k}={v}" for k, v in self.options.items())])

    def line_repeats(self) -> dict[str, Any]:
        """This line's entry in the notebooks' ``line_repeats`` parameter (JSON-ready)."""
        entry: dict[str, Any] = {"point": self.point, "options": dict(self.options), "repeats": self.repeats}
        if self.scenario:
            entry["scenario"] = self.scenario
        if self.framework:
            entry["framework"] = self.framework
        return entry


def _count_text(count: Count) -> str:
    return str(count[0]) if count[0] == count[1] else f"{count[0]}..{count[1]}"


def _count(value: Any, where: str) -> Count:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value, value
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
        and value[0] <= value[1]
    ):
        return value[0], value[1]
    raise ClaimError(f"{where}: a count is a number or [low, high], not {value!r}")


def _expectation(data: Any, where: str, timing: bool) -> Expectation:
    if not isinstance(data, dict):
        raise ClaimError(f"{where}: an expect entry is a table")
    unknown = set(data) - {"pins", "versions", "verdict", "fail_rate", "counts", "why"}
    if unknown:
        raise ClaimError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    pins, versions = data.get("pins", []), data.get("versions")
    if bool(pins) == (versions is not None):
        raise ClaimError(f"{where}: give either pins = [...] or versions = '>=x', not both or neither")
    if versions is not None:
        if not isinstance(versions, str):
            raise ClaimError(f"{where}: versions is a string like '>=1.20'")
        parse_range(versions)
    if not isinstance(pins, list) or not all(isinstance(p, str) for p in pins):
        raise ClaimError(f"{where}: pins is a list of pin-set names")
    verdict, fail_rate = data.get("verdict"), data.get("fail_rate")
    if timing:
        if verdict is not None or fail_rate is None:
            raise ClaimError(f"{where}: a timing line expects fail_rate = [low, high], not a verdict")
    elif fail_rate is not None or verdict not in VERDICTS[:2]:
        raise ClaimError(f"{where}: expects verdict = 'PASS' or 'FAIL' (fail_rate only on a line with timing = true)")
    if fail_rate is not None:
        if (
            not isinstance(fail_rate, list)
            or len(fail_rate) != 2
            or not all(isinstance(x, (int, float)) and 0 <= x <= 1 for x in fail_rate)
            or fail_rate[0] > fail_rate[1]
        ):
            raise ClaimError(f"{where}: fail_rate is [low, high] within [0, 1]")
        fail_rate = (float(fail_rate[0]), float(fail_rate[1]))
    counts = data.get("counts", {})
    if not isinstance(counts, dict):
        raise ClaimError(f"{where}: counts is a table of effect name -> count")
    return Expectation(
        pins=tuple(pins),
        versions=versions,
        verdict=verdict,
        fail_rate=fail_rate,
        counts={name: _count(v, f"{where}: counts.{name}") for name, v in counts.items()},
        why=str(data.get("why", "")),
    )


def parse(entries: Any, where: str, pins: Iterable[str] = ()) -> tuple[Claim, ...]:
    """finding.toml's ``[[claims]]`` into Claims; raises ClaimError naming the first bad entry."""
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise ClaimError(f"{where}: claims must be [[claims]] tables")
    known_pins = set(pins)
    claims = []
    for i, data in enumerate(entries):
        at = f"{where}: claims[{i}]"
        if not isinstance(data, dict) or not isinstance(data.get("point"), str):
            raise ClaimError(f"{at}: needs point = '...'")
        unknown = set(data) - {"point", "scenario", "framework", "options", "timing", "repeats", "expect"}
        if unknown:
            raise ClaimError(f"{at}: unknown key {sorted(unknown)[0]!r}")
        timing = data.get("timing", False)
        repeats = data.get("repeats", 20 if timing else 1)
        if not isinstance(timing, bool) or not isinstance(repeats, int) or repeats < 1:
            raise ClaimError(f"{at}: timing is true/false and repeats a positive number")
        if timing and repeats < 20:
            raise ClaimError(f"{at}: a timing line runs at least 20 times (repeats = {repeats})")
        options = data.get("options", {})
        if not isinstance(options, dict):
            raise ClaimError(f"{at}: options is a table of option -> value")
        expect = data.get("expect")
        if not isinstance(expect, list) or not expect:
            raise ClaimError(f"{at}: needs at least one expect entry")
        parsed = tuple(_expectation(e, f"{at}.expect[{j}]", timing) for j, e in enumerate(expect))
        for e in parsed:
            unknown_pins = [p for p in e.pins if known_pins and p not in known_pins]
            if unknown_pins:
                raise ClaimError(f"{at}: unknown pin set {unknown_pins[0]!r}")
        claims.append(
            Claim(
                point=data["point"],
                scenario=data.get("scenario"),
                framework=data.get("framework"),
                options={str(k): str(v) for k, v in options.items()},
                timing=timing,
                repeats=repeats,
                expect=parsed,
            )
        )
    labels = [(c.scenario, c.framework, c.point, tuple(sorted(c.options.items()))) for c in claims]
    if len(set(labels)) != len(labels):
        raise ClaimError(f"{where}: two claims for the same line")
    return tuple(claims)


def repeats_for(
    line_repeats: Iterable[Mapping[str, Any]],
    scenario: str,
    point: str,
    framework: str | None,
    options: Mapping[str, Any],
    default: int,
) -> int:
    """Runs for one (target variant, point): the largest of ``default`` and every matching entry
    of the notebooks' ``line_repeats`` parameter (Claim.line_repeats)."""
    best = default
    for entry in line_repeats:
        claim = Claim(
            point=entry["point"],
            scenario=entry.get("scenario"),
            framework=entry.get("framework"),
            options={str(k): str(v) for k, v in (entry.get("options") or {}).items()},
        )
        if claim.matches(scenario, point, framework, options):
            best = max(best, int(entry["repeats"]))
    return best


# --- judgement ------------------------------------------------------------------------------


@dataclass
class LineJudgement:
    claim: Claim
    expectation: Expectation
    status: str  # REPRODUCES, DOES_NOT_REPRODUCE or COULD_NOT_RUN
    reason: str  # what was measured, against what was claimed
    runs: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    version: str | None = None

    @property
    def finished(self) -> int:
        return self.passed + self.failed

    def cell(self) -> str:
        """The measured value for a matrix cell: the verdict(s), or the FAIL rate on a timing line."""
        if self.finished == 0:
            return f"ERROR ×{self.errors}" if self.errors else "not run"
        if self.claim.timing:
            lo, hi = wilson(self.failed, self.finished)
            return f"{self.failed}/{self.finished} FAIL [{lo:.2f}, {hi:.2f}]"
        counted = [(v, n) for v, n in (("PASS", self.passed), ("FAIL", self.failed), ("ERROR", self.errors)) if n]
        return ", ".join(v if n == 1 and len(counted) == 1 else f"{v} ×{n}" for v, n in counted)


def _sum_counts(counts: Mapping[str, int], pattern: str) -> int:
    return sum(n for name, n in counts.items() if fnmatch.fnmatchcase(name, pattern))


def _counts_problem(expectation: Expectation, results: list[Mapping[str, Any]]) -> str | None:
    """The first finished run whose effect counts break the claim, described; None when all hold."""
    for result in results:
        counts = (result.get("evidence") or {}).get("counts") or {}
        if not isinstance(counts, dict):
            return f"a run without effect counts (claimed {expectation.describe()})"
        for pattern, (low, high) in expectation.counts.items():
            seen = _sum_counts(counts, pattern)
            if not low <= seen <= high:
                return f"{pattern}={seen}, claimed {_count_text((low, high))}"
    return None


def judge_line(
    claim: Claim, expectation: Expectation, results: list[Mapping[str, Any]], error: str | None = None
) -> LineJudgement:
    """One claim line against the record's results for it (every repeat)."""
    verdicts = [r.get("verdict") for r in results]
    judgement = LineJudgement(
        claim,
        expectation,
        COULD_NOT_RUN,
        "",
        runs=len(results),
        passed=verdicts.count("PASS"),
        failed=verdicts.count("FAIL"),
        errors=verdicts.count("ERROR"),
        version=next((r.get("version") for r in results if r.get("version")), None),
    )
    finished = [r for r in results if r.get("verdict") in ("PASS", "FAIL")]
    if error is not None:
        judgement.reason = f"the report did not run: {error}"
        return judgement
    if not results:
        judgement.reason = "not run in this record"
        return judgement
    if not finished:
        judgement.reason = f"every run was ERROR ({len(results)})"
        return judgement
    errored = f"; {judgement.errors} ERROR run(s) left out" if judgement.errors else ""
    if claim.timing:
        low, high = expectation.fail_rate or (0.0, 1.0)
        rate = judgement.failed / len(finished)
        measured = rate_text(judgement.failed, len(finished))
        problem = _counts_problem(expectation, finished)
        if problem:
            judgement.status, judgement.reason = DOES_NOT_REPRODUCE, f"{measured}; {problem}{errored}"
        else:
            # Consistent with the claim when the 95 % interval reaches the claimed range: 20 runs of a line
            # that duplicates 1 time in 10 show 0 FAILs 12 % of the time, which must not read as a fix.
            ci_low, ci_high = wilson(judgement.failed, len(finished))
            if ci_high >= low and ci_low <= high:
                inside = "" if low <= rate <= high else " (the rate is outside, its interval reaches it)"
                judgement.status = REPRODUCES
                judgement.reason = f"{measured}, claimed [{low:g}, {high:g}]{inside}{errored}"
            else:
                judgement.status = DOES_NOT_REPRODUCE
                judgement.reason = f"{measured}: the interval is outside the claimed [{low:g}, {high:g}]{errored}"
        return judgement
    wrong = [r for r in finished if r.get("verdict") != expectation.verdict]
    if wrong:
        judgement.status = DOES_NOT_REPRODUCE
        judgement.reason = (
            f"{len(wrong)} of {len(finished)} run(s) {wrong[0].get('verdict')}, claimed {expectation.verdict}: "
            f"{wrong[0].get('message', '')}"
        )
        return judgement
    problem = _counts_problem(expectation, finished)
    if problem:
        judgement.status, judgement.reason = DOES_NOT_REPRODUCE, problem + errored
        return judgement
    judgement.status = REPRODUCES
    judgement.reason = f"{judgement.cell()}" + (
        f" with {', '.join(f'{n}={_count_text(c)}' for n, c in expectation.counts.items())}"
        if expectation.counts
        else ""
    )
    judgement.reason += errored
    return judgement


def judge(claims: Iterable[Claim], record: Mapping[str, Any]) -> list[LineJudgement]:
    """Every claim line that has an expectation for this record's pin set or framework version.

    A claim naming a framework is judged against that framework's version in the record (None when
    the pin set does not install it: the claim is then not about this record); a claim without one
    against the record's framework.
    """
    pin = record.get("pin", "")
    versions = record.get("versions") or {}
    results = record.get("results") or []
    out = []
    for claim in claims:
        mine = [r for r in results if claim.matches_result(r)]
        framework = claim.framework or record.get("framework")
        # The version read in the kernel; else the one the line's results announce.
        version = (versions.get(framework) if framework else None) or next(
            (r.get("version") for r in mine if r.get("version")), None
        )
        expectation = claim.expectation(pin, version)
        if expectation is None:
            continue
        judged = judge_line(claim, expectation, mine, record.get("error"))
        judged.version = judged.version or version
        out.append(judged)
    return out


def unclaimed(claims: Iterable[Claim], record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Results no claim is about (shown as "no claim"; not an error: a user can run more lines)."""
    claims = list(claims)
    return [r for r in record.get("results") or [] if not any(c.matches_result(r) for c in claims)]


def overall(judgements: list[LineJudgement]) -> str:
    """The record's status: does not reproduce if any line does not, could not run if no line
    finished, else reproduces (lines that could not run are listed beside it)."""
    if any(j.status == DOES_NOT_REPRODUCE for j in judgements):
        return DOES_NOT_REPRODUCE
    if not judgements or all(j.status == COULD_NOT_RUN for j in judgements):
        return COULD_NOT_RUN
    return REPRODUCES


def summary(judgements: list[LineJudgement], what: str) -> list[str]:
    """Markdown lines for the top of a report: the headline, then every line that did not reproduce
    or could not run. ``what`` names the version, e.g. ``agent-framework-core 1.20.0``."""
    status = overall(judgements)
    held = sum(j.status == REPRODUCES for j in judgements)
    if not judgements:
        return [f"**No claim covers {what}**: the finding.toml has no expectation for this pin set."]
    head = {
        REPRODUCES: f"**The finding reproduces on {what}**: {held} of {len(judgements)} claimed lines hold.",
        DOES_NOT_REPRODUCE: f"**The finding does not reproduce on {what}**: "
        f"{held} of {len(judgements)} claimed lines hold.",
        COULD_NOT_RUN: f"**The finding could not run on {what}**: no claimed line finished.",
    }[status]
    lines = [head]
    for j in judgements:
        if j.status != REPRODUCES:
            lines.append(f"- {j.status}: `{j.claim.label}` (claimed {j.expectation.describe()}): {j.reason}")
    return lines


def contradictions(claims: Iterable[Claim], record: Mapping[str, Any], where: str) -> list[str]:
    """One line per claimed line the record contradicts (what ``report --check`` prints)."""
    return [
        f"{where}: {j.claim.label} does not reproduce: {j.reason} (claimed {j.expectation.describe()} "
        f"for {j.expectation.scope()})"
        for j in judge(claims, record)
        if j.status == DOES_NOT_REPRODUCE
    ]
