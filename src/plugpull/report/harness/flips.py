"""Flips: the first release where a claimed line's outcome changes, and the fewest releases to run to find them.

A sweep (``plugpull report sweep``) measures a finding on a list of releases, oldest first. Per release and
claimed line it keeps a :class:`Cell`: the verdict the line's runs agree on, or on a timing line the FAIL count
over the finished runs; a release that cannot install or cannot run the line is a cell with ``verdict=None``
and the reason. Two cells are the same outcome when:

- both are runnable and their verdicts are equal (a line with both PASS and FAIL runs is "mixed");
- on a timing line, when their FAIL rates' 95 % Wilson intervals overlap (a rate that moves inside its
  noise is not a flip: a 1 of 20 and a 4 of 20 batch are the same outcome);
- both cannot run.

:func:`flips` walks the measured releases of each line and reports a :class:`Flip` between two runnable
neighbours whose outcomes differ, with the releases between them that cannot run (they are skipped: a
broken release is not a flip of the claim) and those not measured yet (while any remain the flip is not
*verified*: it is somewhere in that interval, not at its end). :func:`next_probe` is the bisection: the
middle unmeasured release of the first interval whose ends differ (including runnable vs cannot run, so the
first release that can run the target is found too). Starting from the oldest and newest releases, each
flip costs about log2(releases) runs.

Limit, by construction: bisection assumes that an interval whose ends agree holds no flip. A flip that
reverts before the next measured release (PASS, FAIL, PASS) is invisible to it; a full sweep (no
``--bisect``) measures every release. Pure and standard library only: unit-tested on synthetic records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from plugpull.report.kernel.claims import wilson

MIXED = "mixed"


@dataclass(frozen=True)
class Cell:
    """One claimed line on one release."""

    verdict: str | None  # "PASS", "FAIL", MIXED, or None: cannot run
    failed: int = 0
    finished: int = 0
    timing: bool = False
    reason: str = ""  # why it cannot run; else empty

    @property
    def runnable(self) -> bool:
        return self.verdict is not None

    def text(self) -> str:
        if not self.runnable:
            return "cannot run"
        if self.timing:
            return f"FAIL {self.failed}/{self.finished}"
        return self.verdict or ""


def cannot_run(reason: str) -> Cell:
    return Cell(None, reason=reason)


def cell_of(verdicts: Sequence[str], timing: bool, reason: str = "") -> Cell:
    """A line's cell from its runs' verdicts: only ERRORs (or none) -> cannot run with ``reason``."""
    finished = [v for v in verdicts if v in ("PASS", "FAIL")]
    if not finished:
        why = reason or (f"every run ERROR ({len(verdicts)})" if verdicts else "the line did not run")
        return cannot_run(why)
    failed = finished.count("FAIL")
    verdict = finished[0] if len(set(finished)) == 1 else MIXED
    return Cell(verdict, failed=failed, finished=len(finished), timing=timing)


def same(a: Cell, b: Cell) -> bool:
    """Whether two cells are the same outcome (module docstring)."""
    if not a.runnable or not b.runnable:
        return a.runnable == b.runnable
    if a.timing or b.timing:
        a_lo, a_hi = wilson(a.failed, a.finished)
        b_lo, b_hi = wilson(b.failed, b.finished)
        return a_lo <= b_hi and b_lo <= a_hi
    return a.verdict == b.verdict


@dataclass(frozen=True)
class Flip:
    """A line's outcome changes between ``before`` and ``after`` (both runnable and measured)."""

    line: str
    before: str
    after: str
    was: Cell
    becomes: Cell
    cannot_run_between: tuple[str, ...] = ()
    unmeasured_between: tuple[str, ...] = ()

    @property
    def verified(self) -> bool:
        """Both sides were run and nothing between them is unmeasured: ``after`` is the first release
        with the new outcome (releases between that cannot run excepted, and named)."""
        return not self.unmeasured_between

    def describe(self) -> str:
        text = f"{self.line}: {self.was.text()} on {self.before} -> {self.becomes.text()} from {self.after}"
        if self.cannot_run_between:
            text += f" ({', '.join(self.cannot_run_between)} between cannot run)"
        if self.unmeasured_between:
            text += f" (not verified: {len(self.unmeasured_between)} release(s) between not run)"
        else:
            text += " (verified: both sides run)"
        return text


# A release's measurement: line -> cell. A release that could not install has every line cannot-run.
Measured = Mapping[str, Mapping[str, Cell]]


@dataclass
class Availability:
    """Where the target starts or stops running: runnable-ness flips, found like a claim's."""

    first_runnable: str | None = None
    cannot_run: list[str] = field(default_factory=list)


def lines_of(measured: Measured) -> list[str]:
    return sorted({line for cells in measured.values() for line in cells})


def _state(cells: Mapping[str, Cell], lines: Sequence[str]) -> tuple[Cell, ...]:
    return tuple(cells.get(line, cannot_run("the line did not run")) for line in lines)


def _differ(a: Mapping[str, Cell], b: Mapping[str, Cell], lines: Sequence[str]) -> bool:
    return any(not same(x, y) for x, y in zip(_state(a, lines), _state(b, lines), strict=True))


def flips(versions: Sequence[str], measured: Measured) -> list[Flip]:
    """Every flip of every line over ``versions`` (oldest first), from the releases measured so far."""
    found = []
    for line in lines_of(measured):
        previous: str | None = None
        skipped: list[str] = []
        unmeasured: list[str] = []
        for version in versions:
            if version not in measured:
                unmeasured.append(version)
                continue
            cell = measured[version].get(line, cannot_run("the line did not run"))
            if not cell.runnable:
                skipped.append(version)
                continue
            if previous is not None:
                was = measured[previous][line]
                if not same(was, cell):
                    found.append(Flip(line, previous, version, was, cell, tuple(skipped), tuple(unmeasured)))
            previous, skipped, unmeasured = version, [], []
    return found


def next_probe(versions: Sequence[str], measured: Measured) -> str | None:
    """The next release to run, or None when every interval whose ends differ has nothing unmeasured left.

    The oldest and the newest release first; then the middle unmeasured release of the oldest interval
    between two measured releases that differ on any line (runnable vs cannot run counts).
    """
    if not versions:
        return None
    for end in (versions[0], versions[-1]):
        if end not in measured:
            return end
    lines = lines_of(measured)
    done = [i for i, v in enumerate(versions) if v in measured]
    for left, right in zip(done, done[1:], strict=False):
        if right - left < 2:
            continue
        if _differ(measured[versions[left]], measured[versions[right]], lines):
            return versions[(left + right) // 2]
    return None


def availability(versions: Sequence[str], measured: Measured) -> Availability:
    """The oldest measured release where some line runs, and every measured release where none does."""
    out = Availability()
    for version in versions:
        cells = measured.get(version)
        if cells is None:
            continue
        if any(c.runnable for c in cells.values()):
            out.first_runnable = out.first_runnable or version
        else:
            out.cannot_run.append(version)
    return out
