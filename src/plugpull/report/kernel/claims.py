"""What a finding expects, per line and per version, and the judgement of a run record against it.

finding.toml holds one ``[[claims]]`` table per line (scenario, point, framework, options) with one
or more ``expect`` entries, each for some pin sets or a version range of the line's framework: the
verdict (and where it matters the effect counts), or for a line marked ``timing`` a FAIL-rate range
(docs/report.md, "Claims"). :func:`judge` compares a record's results with them, line by line:

- *reproduces*: every run that finished matches the claim (the verdict and counts; on a timing line
  the counts, and the measured FAIL rate is inside the claimed range);
- *does not reproduce*: a run contradicts it, or the whole 95 % Wilson interval of the FAIL rate is
  outside the range;
- *inconclusive*: a timing line whose rate is outside the range while its interval still reaches it
  (more runs are needed: 0 of 20 against "at least 0.05" could not have shown the claim false);
- *could not run*: the record has no finished run of the line (every run ERROR, the notebook or
  the environment failed, or the line was not run this time).

Each claim that expects a FAIL names its **kind** (``bug``, ``documented``, ``app``, ``expected``) with
its support (``because``, ``quote``, ``issue``, ``searched``, ``alternative``, ``witness``), on the
``[[claims]]`` table or on one ``expect`` entry (which overrides the table's, field by field).
:func:`policy` lists what ``report check`` requires of them; :func:`judge_witnesses` compares the
framework-only witness scripts' output stored in a record (``witnesses``) with the harness's lines.

Pure: the standard library and the version rule (report/kernel/versions.py: PEP 440 through ``packaging``).
The harness imports it for ``report check`` and ``regenerate``, the kernel for the run's per-line repeats.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from plugpull.errors import ClaimError
from plugpull.report.kernel import versions as version_rule
from plugpull.report.kernel.record import JS_SUFFIXES

REPRODUCES, DOES_NOT_REPRODUCE, COULD_NOT_RUN = "reproduces", "does not reproduce", "could not run"
INCONCLUSIVE = "inconclusive"
VERDICTS = ("PASS", "FAIL", "ERROR")
#: bug: breaks what the framework's docs or API promise; documented: at-least-once or a limit its docs state;
#: app: follows from where the target app saves and how it recovers; expected: nothing durable existed yet,
#: or the run had already finished (docs/report.md, "Kinds").
KINDS = ("bug", "documented", "app", "expected")
#: Kinds whose claim needs a framework-only witness whose output the newest record holds.
WITNESSED = ("bug", "documented")
AGREES, DISAGREES = "agrees", "disagrees"
#: The mark of each judgement in every table (docs/results.md, finding pages, summary.html, the issue body).
MARKS = {REPRODUCES: "✓", DOES_NOT_REPRODUCE: "✗", INCONCLUSIVE: "~", COULD_NOT_RUN: "?"}
NO_CLAIM_MARK = "–"


# --- rates --------------------------------------------------------------------------------


#: Fewer finished runs than this show a FAIL rate without its interval: with 1 to 4 runs the 95 % interval spans most
#: of [0, 1] (1 of 1: [0.21, 1.00]), so printing it reads as a measurement it is not. Judging still uses it.
INTERVAL_RUNS = 5


def rate_cell(failures: int, runs: int) -> str:
    """A FAIL rate for a table: ``0.25 [0.10, 0.49]`` with its 95 % Wilson interval from :data:`INTERVAL_RUNS`
    finished runs, ``1.00 (1 run)`` below that, ``—`` with none."""
    if runs <= 0:
        return "—"
    if runs < INTERVAL_RUNS:
        return f"{failures / runs:.2f} ({runs} run{'s' if runs > 1 else ''})"
    low, high = wilson(failures, runs)
    return f"{failures / runs:.2f} [{low:.2f}, {high:.2f}]"


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
class Quote:
    url: str
    text: str


@dataclass(frozen=True)
class Witness:
    """A framework-only script under ``findings/<id>/`` that shows the line without plugpull."""

    script: str  # relative to the finding's folder, e.g. "witness/kill_mid_tool.py"
    args: tuple[str, ...] = ()
    repeats: int = 1
    timeout: float = 300.0
    # Distributions it imports besides the framework (e.g. "langgraph-checkpoint-sqlite", "google-adk[sqlite]"),
    # no versions: a bundle locks them at the pin set's versions (report/harness/bundle.py).
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class Support:
    """A FAIL line's kind and what backs it (docs/report.md, "Kinds")."""

    kind: str | None = None
    because: str = ""
    quote: Quote | None = None
    issue: str | None = None
    searched: str | None = None
    alternative: str | None = None
    witness: Witness | None = None

    def merged(self, override: Support) -> Support:
        """This support with every field ``override`` sets replacing it (an expect entry over its claim)."""
        return Support(**{name: getattr(override, name) or getattr(self, name) for name in self.__dataclass_fields__})

    def source(self) -> str:
        """The quote, issue or search behind the kind, as Markdown (empty when none)."""
        parts = []
        if self.quote is not None:
            parts.append(f"[“{self.quote.text}”]({self.quote.url})")
        if self.issue:
            parts.append(f"<{self.issue}>")
        if self.searched:
            parts.append(f"searched: {self.searched}")
        return "; ".join(parts)


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
    # The kind and its support: the claim's, with this entry's fields over it. Only an expectation that
    # expects a FAIL has a kind (:attr:`kind`); the witness runs whatever the expectation.
    support: Support = field(default_factory=Support)

    @property
    def expects_fail(self) -> bool:
        """A FAIL verdict, or a FAIL rate whose low end is above 0: what needs a kind."""
        return self.verdict == "FAIL" or (self.fail_rate is not None and self.fail_rate[0] > 0)

    @property
    def expects_pass(self) -> bool:
        """A PASS verdict or a FAIL rate of exactly 0: what may carry no kind."""
        return self.verdict == "PASS" or (self.fail_rate is not None and self.fail_rate[1] == 0)

    @property
    def kind(self) -> str | None:
        return self.support.kind if self.expects_fail else None

    def covers(self, pin: str, version: str | None) -> bool:
        if self.pins:
            return pin in self.pins
        return version is not None and self.versions is not None and version_rule.in_range(version, self.versions)

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
    # Where the line sits on the scorecard (findings/scorecard.toml, report/harness/scorecard.py): the
    # property it measures (finding.toml's ``property``: a column's) and the framework's store it ran on (with
    # the framework, the row). Both or neither; a line without them is not on the scorecard.
    measures: str | None = None
    store: str | None = None

    def kinds(self) -> list[str]:
        """The kinds of the expectations that expect a FAIL, in order, each once ("no kind" where none is given)."""
        return list(dict.fromkeys(e.kind or "no kind" for e in self.expect if e.expects_fail))

    def shown(self) -> str:
        """The label with its kinds, as tables show a claimed line: ``after-effect key=none · documented``."""
        kinds = self.kinds()
        return self.label + (f" · {', '.join(kinds)}" if kinds else "")

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


SUPPORT_KEYS = ("kind", "because", "quote", "issue", "searched", "alternative", "witness")


def _text(data: dict[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ClaimError(f"{where}: {key} is a non-empty string")
    return " ".join(value.split()) if value is not None else None


def _url(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str) or not re.match(r"^https?://\S+$", value):
        raise ClaimError(f"{where}: {key} is an https:// address, not {value!r}")
    return value


def _witness(value: Any, where: str) -> Witness:
    at = f"{where}: witness"
    if not isinstance(value, dict):
        raise ClaimError(f"{at} is a table {{ script = 'witness/x.py', args = [...], repeats = 1, timeout = 300 }}")
    unknown = set(value) - {"script", "args", "repeats", "timeout", "requires"}
    if unknown:
        raise ClaimError(f"{at}: unknown key {sorted(unknown)[0]!r}")
    script = value.get("script")
    # Relative to the finding's folder; "../other-finding/witness/x.py" shares another finding's witness (as
    # pin sets share locks). Where it lands is checked against findings/ when it is run and by check. A JavaScript
    # witness (.mjs, .js, .cjs) runs with node in an npm pin set's packages (report/harness/witness.py).
    if (
        not isinstance(script, str)
        or not script.endswith((".py", *JS_SUFFIXES))
        or script.startswith(("/", "~"))
        or "\\" in script
    ):
        raise ClaimError(f"{at}: script is a .py (or .mjs) path relative to the finding's folder, like 'witness/x.py'")
    args = value.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ClaimError(f"{at}: args is a list of strings")
    if "--fork" in args:
        # A record's witness starts each phase as a new interpreter, as a maintainer runs it; --fork (phases
        # forked after one import) is for the test suite's speed (docs/DECISIONS.md, "The test suite").
        raise ClaimError(f"{at}: args may not hold --fork: a record runs its witness as a maintainer would, cold")
    repeats = value.get("repeats", 1)
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ClaimError(f"{at}: repeats is a positive number")
    timeout = value.get("timeout", 300)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise ClaimError(f"{at}: timeout is a positive number of seconds")
    requires = value.get("requires", [])
    if not isinstance(requires, list) or not all(isinstance(r, str) and _DIST.match(r) for r in requires):
        raise ClaimError(
            f"{at}: requires is a list of distribution names like 'langgraph-checkpoint-sqlite', no versions"
        )
    return Witness(script, tuple(args), repeats, float(timeout), tuple(requires))


# A distribution name with optional extras, no version: the pin set's lock gives the version.
_DIST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*\])?$")


def _support(data: dict[str, Any], where: str) -> Support:
    """The kind and support fields of a claim table or expect entry (types and values only: what a
    finding must give for each kind is :func:`policy`'s, so ``report check`` lists all of it at once)."""
    kind = data.get("kind")
    if kind is not None and kind not in KINDS:
        raise ClaimError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    quote = data.get("quote")
    if quote is not None:
        if not isinstance(quote, dict) or set(quote) != {"url", "text"}:
            raise ClaimError(f"{where}: quote is {{ url = 'https://...', text = '...' }}")
        text = quote["text"]
        if not isinstance(text, str) or not text.strip():
            raise ClaimError(f"{where}: quote.text is the quoted words")
        quote = Quote(_url(quote["url"], where, "quote.url"), " ".join(text.split()))
    issue = data.get("issue")
    if issue is not None:
        issue = _url(issue, where, "issue")
    witness = data.get("witness")
    return Support(
        kind=kind,
        because=_text(data, "because", where) or "",
        quote=quote,
        issue=issue,
        searched=_text(data, "searched", where),
        alternative=_text(data, "alternative", where),
        witness=None if witness is None else _witness(witness, where),
    )


def _expectation(data: Any, where: str, timing: bool, claimed: Support = Support()) -> Expectation:
    if not isinstance(data, dict):
        raise ClaimError(f"{where}: an expect entry is a table")
    unknown = set(data) - {"pins", "versions", "verdict", "fail_rate", "counts", "why", *SUPPORT_KEYS}
    if unknown:
        raise ClaimError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    pins, versions = data.get("pins", []), data.get("versions")
    if bool(pins) == (versions is not None):
        raise ClaimError(f"{where}: give either pins = [...] or versions = '>=x', not both or neither")
    if versions is not None:
        if not isinstance(versions, str) or not versions.strip():
            raise ClaimError(f"{where}: versions is a PEP 440 range like '>=1.20' or '~=1.2'")
        try:
            version_rule.specifier(versions)
        except version_rule.RangeError as exc:
            raise ClaimError(f"{where}: {exc}") from None
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
        if fail_rate[0] == 0 and fail_rate[1] == 1:
            # Every rate is inside [0, 1]: no record could contradict it.
            raise ClaimError(
                f"{where}: fail_rate [{fail_rate[0]:g}, {fail_rate[1]:g}] claims nothing (every rate is in it)"
            )
    counts = data.get("counts", {})
    if not isinstance(counts, dict):
        raise ClaimError(f"{where}: counts is a table of effect name -> count")
    own = _support(data, where)
    expectation = Expectation(
        pins=tuple(pins),
        versions=versions,
        verdict=verdict,
        fail_rate=fail_rate,
        counts={name: _count(v, f"{where}: counts.{name}") for name, v in counts.items()},
        why=str(data.get("why", "")),
        support=claimed.merged(own),
    )
    if own.kind is not None and expectation.expects_pass:
        raise ClaimError(f"{where}: kind on a line that expects PASS (only a FAIL has a kind)")
    return expectation


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
        unknown = set(data) - {
            "point",
            "scenario",
            "framework",
            "options",
            "timing",
            "repeats",
            "expect",
            "property",
            "store",
            *SUPPORT_KEYS,
        }
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
        placed = [_text(data, key, at) for key in ("property", "store")]
        if (placed[0] is None) != (placed[1] is None):
            raise ClaimError(f"{at}: property and store go together (the scorecard's column and row), or neither")
        claimed = _support(data, at)
        parsed = tuple(_expectation(e, f"{at}.expect[{j}]", timing, claimed) for j, e in enumerate(expect))
        if claimed.kind is not None and all(e.expects_pass for e in parsed):
            raise ClaimError(f"{at}: kind on a line that expects PASS (only a FAIL has a kind)")
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
                measures=placed[0],
                store=placed[1],
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
    status: str  # REPRODUCES, DOES_NOT_REPRODUCE, INCONCLUSIVE or COULD_NOT_RUN
    reason: str  # what was measured, against what was claimed
    runs: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    version: str | None = None
    finished_results: list[Mapping[str, Any]] = field(default_factory=list, repr=False)

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

    def measured(self) -> str:
        """:meth:`cell` with the claimed effect counts seen over the finished runs: ``FAIL refund=2``."""
        counts = counts_seen(self.expectation, [r.get("evidence", {}).get("counts") for r in self.finished_results])
        return f"{self.cell()} {counts}".strip()


def _sum_counts(counts: Mapping[str, int], pattern: str) -> int:
    return sum(n for name, n in counts.items() if fnmatch.fnmatchcase(name, pattern))


def counts_seen(expectation: Expectation, runs: Iterable[Any]) -> str:
    """The claimed count patterns as seen over ``runs`` (each a name -> count mapping): ``refund=2``, or
    ``refund=1..2`` when runs differ; every name when nothing is claimed and there are at most three."""
    runs = [r for r in runs if isinstance(r, Mapping)]
    if not runs:
        return ""
    patterns = list(expectation.counts) or sorted({n for r in runs for n in r})
    if not expectation.counts and len(patterns) > 3:
        return ""
    parts = []
    for pattern in patterns:
        seen = [_sum_counts(r, pattern) for r in runs]
        parts.append(f"{pattern}={_count_text((min(seen), max(seen)))}")
    return " ".join(parts)


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
    judgement.finished_results = finished
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
        ci_low, ci_high = wilson(judgement.failed, len(finished))
        claimed = f"claimed [{low:g}, {high:g}]"
        if problem:
            judgement.status, judgement.reason = DOES_NOT_REPRODUCE, f"{measured}; {problem}{errored}"
        elif low <= rate <= high:
            judgement.status, judgement.reason = REPRODUCES, f"{measured}, {claimed}{errored}"
        elif ci_high < low or ci_low > high:
            judgement.status = DOES_NOT_REPRODUCE
            judgement.reason = f"{measured}: the interval is outside the {claimed}{errored}"
        else:
            # The rate is outside the range but its interval reaches it: these runs could not have shown the
            # claim false (0 of 20 against "at least 0.05"), so they do not show it true either.
            judgement.status = INCONCLUSIVE
            judgement.reason = (
                f"{measured}: the rate is outside the {claimed}, its interval reaches it (more runs needed){errored}"
            )
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


def covering(
    claims: Iterable[Claim], record: Mapping[str, Any]
) -> list[tuple[Claim, Expectation, str | None, list[Mapping[str, Any]]]]:
    """Every claim with an expectation for this record's pin set or framework version: (claim, expectation,
    the version it was picked by, the record's results of the line).

    A claim naming a framework is about that framework's version in the record (None when the pin set
    does not install it: the claim is then not about this record); a claim without one about the
    record's framework.
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
        if expectation is not None:
            out.append((claim, expectation, version, mine))
    return out


def judge(claims: Iterable[Claim], record: Mapping[str, Any]) -> list[LineJudgement]:
    """Every claim line that has an expectation for this record's pin set or framework version (:func:`covering`)."""
    out = []
    for claim, expectation, version, mine in covering(claims, record):
        judged = judge_line(claim, expectation, mine, record.get("error"))
        judged.version = judged.version or version
        out.append(judged)
    return out


def unclaimed(claims: Iterable[Claim], record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Results no claim is about (shown as "no claim"; not an error: a user can run more lines)."""
    claims = list(claims)
    return [r for r in record.get("results") or [] if not any(c.matches_result(r) for c in claims)]


def overall(judgements: list[LineJudgement]) -> str:
    """The record's status: does not reproduce if any line does not, else inconclusive if any line is,
    could not run if no line finished, else reproduces (lines that could not run are listed beside it)."""
    if any(j.status == DOES_NOT_REPRODUCE for j in judgements):
        return DOES_NOT_REPRODUCE
    if any(j.status == INCONCLUSIVE for j in judgements):
        return INCONCLUSIVE
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
        INCONCLUSIVE: f"**The finding is inconclusive on {what}**: {held} of {len(judgements)} claimed lines hold; "
        f"{sum(j.status == INCONCLUSIVE for j in judgements)} need more runs.",
        COULD_NOT_RUN: f"**The finding could not run on {what}**: no claimed line finished.",
    }[status]
    lines = [head]
    for j in judgements:
        if j.status != REPRODUCES:
            lines.append(f"- {j.status}: `{j.claim.label}` (claimed {j.expectation.describe()}): {j.reason}")
    return lines


def contradictions(claims: Iterable[Claim], record: Mapping[str, Any], where: str) -> list[str]:
    """One line per claimed line the record contradicts (what ``report check`` prints)."""
    return [
        f"{where}: {j.claim.label} does not reproduce: {j.reason} (claimed {j.expectation.describe()} "
        f"for {j.expectation.scope()})"
        for j in judge(claims, record)
        if j.status == DOES_NOT_REPRODUCE
    ]


# --- witnesses -------------------------------------------------------------------------------
#
# A claim's witness is a framework-only script (findings/<id>/witness/*.py) that shows the line without
# plugpull. `plugpull report` runs it after the notebook and stores each run in the record's `witnesses`
# (docs/json-schema.md): {"claim": label, "script", "args", "runs": [{"exit_code", "seconds", "timed_out",
# "output": the JSON of its last stdout line, "stderr_tail"}], "error"}. Its exit code is 0 PASS, 1 FAIL,
# 2 ERROR, and its output's verdict says the same; ERROR is never evidence.

EXIT_CODES = {"PASS": 0, "FAIL": 1, "ERROR": 2}
#: A witness that imports plugpull: Python's ``import plugpull``/``from plugpull``, JavaScript's Node client
#: (``from "plugpull-client"``, ``import("plugpull-client")``, ``require("plugpull-client")``).
PLUGPULL_IMPORT = re.compile(
    r"^\s*(import|from)\s+plugpull\b|(\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s*)[\"']plugpull-client[\"']",
    re.MULTILINE,
)


@dataclass
class WitnessJudgement:
    """A witness's runs for one claimed line, against the expectation and the harness's line."""

    line: LineJudgement
    witness: Witness
    status: str  # AGREES, DISAGREES or COULD_NOT_RUN
    reason: str  # why it disagrees or could not run; what agreed
    measured: str = ""  # the finished runs: "FAIL refund=2", "FAIL ×3 refund=2", "3/20 FAIL [0.05, 0.36]"
    finished: int = 0
    left_out: int = 0  # runs that did not finish as designed (ERROR, no JSON line, timed out, ...)

    @property
    def claim(self) -> Claim:
        return self.line.claim

    def text(self) -> str:
        """What the HTML's top cell shows after ``witness:``."""
        if self.status == COULD_NOT_RUN:
            return f"could not run: {self.reason}"
        if self.status == AGREES:
            left = f"; {self.left_out} run(s) left out" if self.left_out else ""
            return f"{self.measured} (agrees{left})"
        return f"{self.measured} (disagrees: {self.reason})"


def witness_run_problem(run: Any) -> str | None:
    """Why one stored witness run is not evidence (it did not finish as designed); None when it is."""
    if not isinstance(run, Mapping):
        return "not an object"
    if run.get("timed_out"):
        return f"timed out after {run.get('seconds', '?')} s"
    output = run.get("output")
    if not isinstance(output, Mapping):
        return run.get("problem") or f"exit {run.get('exit_code')} without a JSON line on stdout"
    verdict = output.get("verdict")
    if verdict not in VERDICTS:
        return f"its verdict {verdict!r} is not PASS, FAIL or ERROR"
    if verdict == "ERROR":
        return f"ERROR: {output.get('did') or run.get('problem') or 'no reason given'}"
    if run.get("exit_code") != EXIT_CODES[verdict]:
        return f"exit code {run.get('exit_code')} but verdict {verdict}"
    if not isinstance(output.get("counts", {}), Mapping):
        return "its counts are not a table of effect name -> count"
    return None


def _witness_measured(line: LineJudgement, outputs: list[Mapping[str, Any]]) -> str:
    verdicts = [o["verdict"] for o in outputs]
    if line.claim.timing:
        failed = verdicts.count("FAIL")
        lo, hi = wilson(failed, len(outputs))
        return f"{failed}/{len(outputs)} FAIL [{lo:.2f}, {hi:.2f}]"
    counted = [(v, verdicts.count(v)) for v in ("PASS", "FAIL") if v in verdicts]
    head = ", ".join(v if n == 1 and len(counted) == 1 else f"{v} ×{n}" for v, n in counted)
    counts = counts_seen(line.expectation, [o.get("counts") or {} for o in outputs])
    return f"{head} {counts}".strip()


def judge_witness(line: LineJudgement, witness: Witness, entry: Mapping[str, Any] | None) -> WitnessJudgement:
    """One claimed line's witness (the record's ``witnesses`` entry for it, or None) against the line.

    Runs that did not finish as designed are left out; with none left the witness could not run. A
    non-timing line agrees when every finished run has the expectation's verdict and counts and the
    harness's line reproduces; a timing line when the witness's and the harness's FAIL-rate intervals overlap.
    """
    judged = WitnessJudgement(line, witness, COULD_NOT_RUN, "")
    if entry is None:
        judged.reason = "no witness output in this record"
        return judged
    if entry.get("error"):
        judged.reason = str(entry["error"])
        return judged
    runs = entry.get("runs") if isinstance(entry.get("runs"), list) else []
    problems = [witness_run_problem(run) for run in runs]
    outputs = [run["output"] for run, problem in zip(runs, problems, strict=True) if problem is None]
    judged.finished, judged.left_out = len(outputs), len(runs) - len(outputs)
    if line.version is not None:
        # The witness reads its framework's version itself: a run on another version was not in this pin set.
        other = [o for o in outputs if o.get("version") not in (None, line.version)]
        if other:
            judged.finished, judged.left_out = judged.finished - len(other), judged.left_out + len(other)
            problems.append(f"it ran version {other[0].get('version')}, the record has {line.version}")
            outputs = [o for o in outputs if o not in other]
    if not outputs:
        shown = next((p for p in problems if p), "no run")
        judged.reason = f"{len(runs)} run(s), none finished: {shown}"
        return judged
    judged.measured = _witness_measured(line, outputs)
    left = f"; {judged.left_out} run(s) left out" if judged.left_out else ""
    expectation = line.expectation
    if line.claim.timing:
        if line.finished == 0:
            judged.status, judged.reason = DISAGREES, f"the harness has no finished run ({line.reason})"
            return judged
        w_lo, w_hi = wilson([o["verdict"] for o in outputs].count("FAIL"), len(outputs))
        h_lo, h_hi = wilson(line.failed, line.finished)
        if w_lo <= h_hi and h_lo <= w_hi:
            judged.status = AGREES
            judged.reason = (
                f"intervals overlap: witness [{w_lo:.2f}, {w_hi:.2f}], harness [{h_lo:.2f}, {h_hi:.2f}]{left}"
            )
        else:
            judged.status = DISAGREES
            judged.reason = f"witness {judged.measured}, harness {line.cell()}: the intervals do not overlap{left}"
        return judged
    wrong = [o for o in outputs if o["verdict"] != expectation.verdict]
    problem = None
    if wrong:
        problem = f"witness {judged.measured}, claimed {expectation.describe()}"
    else:
        counted = _counts_problem(expectation, [{"evidence": {"counts": o.get("counts") or {}}} for o in outputs])
        if counted:
            problem = f"witness {counted}"
    if problem is None and line.status != REPRODUCES:
        problem = f"witness {judged.measured}, harness {line.measured() or line.status} ({line.status})"
    if problem is not None:
        judged.status, judged.reason = DISAGREES, problem + left
        return judged
    judged.status, judged.reason = AGREES, f"witness {judged.measured}, harness {line.measured()}{left}"
    return judged


def witness_entries(record: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The record's ``witnesses`` by claim label (schema 3; empty for older records)."""
    entries = record.get("witnesses")
    if not isinstance(entries, list):
        return {}
    return {e["claim"]: e for e in entries if isinstance(e, Mapping) and isinstance(e.get("claim"), str)}


def judge_witnesses(lines: Iterable[LineJudgement], record: Mapping[str, Any]) -> list[WitnessJudgement]:
    """The witness of every judged line whose expectation declares one, against the record's output of it."""
    entries = witness_entries(record)
    return [
        judge_witness(line, line.expectation.support.witness, entries.get(line.claim.label))
        for line in lines
        if line.expectation.support.witness is not None
    ]


def witness_problems(lines: Iterable[LineJudgement], record: Mapping[str, Any], where: str, rerun: str) -> list[str]:
    """What ``report check`` fails on for one newest record: a witness that disagrees with its line, and a
    bug or documented line whose witness did not run (``rerun`` is the command that would run it)."""
    lines = list(lines)
    found = []
    judged = {id(w.line): w for w in judge_witnesses(lines, record)}
    for line in lines:
        witnessed = judged.get(id(line))
        if witnessed is not None and witnessed.status == DISAGREES:
            found.append(f"{where}: {line.claim.label}: the witness disagrees with the harness: {witnessed.reason}")
        elif line.expectation.kind in WITNESSED and (witnessed is None or witnessed.status == COULD_NOT_RUN):
            why = "no witness declared" if witnessed is None else witnessed.reason
            found.append(
                f"{where}: {line.claim.label}: a {line.expectation.kind} line with no witness output that ran "
                f"({why}; rerun: {rerun})"
            )
    return found


# --- policy -----------------------------------------------------------------------------------


def policy(claims: Iterable[Claim], where: str, script_text: Callable[[str], str | None] | None = None) -> list[str]:
    """What a finding's claims still owe (``report check``): a kind on every expectation that expects a
    FAIL; ``because`` for every kind; ``bug``: a quote or an issue, and without an issue what was searched;
    ``documented``: a quote; both a witness; ``app``: an ``alternative`` that is the label of another claim of
    the same finding. ``script_text`` reads a witness script (None: not on disk, or outside findings/): it
    must exist and import nothing of plugpull (a maintainer runs it with only the framework installed)."""
    claims = list(claims)
    labels = [c.label for c in claims]
    found: list[str] = []
    for claim in claims:
        at = f"{where}: `{claim.label}`"
        for e in claim.expect:
            s = e.support
            if s.witness is not None and script_text is not None:
                text = script_text(s.witness.script)
                if text is None:
                    found.append(f"{at}: witness script {s.witness.script} does not exist under findings/")
                elif PLUGPULL_IMPORT.search(text):
                    found.append(
                        f"{at}: witness script {s.witness.script} imports plugpull (a witness is framework-only)"
                    )
            if not e.expects_fail:
                continue
            scope = f"{e.describe()} for {e.scope()}"
            if s.kind is None:
                found.append(f"{at}: expects {scope} but has no kind ({', '.join(KINDS)})")
                continue
            if not s.because:
                found.append(f"{at}: kind {s.kind} without because (why it is of this kind)")
            if s.kind == "bug":
                if s.quote is None and s.issue is None:
                    found.append(
                        f"{at}: kind bug needs a quote (url + text) of what the framework promises, or an issue"
                    )
                if s.issue is None and not s.searched:
                    found.append(f"{at}: kind bug without an issue needs searched (what was looked for upstream)")
            if s.kind == "documented" and s.quote is None:
                found.append(f"{at}: kind documented needs a quote (url + text) of the docs")
            if s.kind in WITNESSED and s.witness is None:
                found.append(f"{at}: kind {s.kind} needs a witness (findings/<id>/witness/*.py)")
            if (
                s.kind == "app"
                and s.alternative is not None
                and (s.alternative not in labels or s.alternative == claim.label)
            ):
                found.append(f"{at}: alternative {s.alternative!r} is not the label of another claim of this finding")
        if labels.count(claim.label) > 1 and any(e.support.witness or e.support.alternative for e in claim.expect):
            found.append(f"{at}: two claims share this label; witnesses and alternatives name a line by its label")
    return list(dict.fromkeys(found))
