"""Bisection and flips on synthetic records: monotone, non-monotone, cannot-run gaps, timing lines."""

from __future__ import annotations

from plugpull.report.harness.flips import Cell, availability, cannot_run, cell_of, flips, next_probe, same

VERSIONS = [f"1.{i}.0" for i in range(11)]


def truth(outcomes: dict[str, str]) -> dict[str, dict[str, Cell]]:
    """Every release's cell for one line `swap`: 'P', 'F' or 'X' (cannot run)."""
    return {
        v: {"swap": cannot_run("no functional workflows") if o == "X" else Cell("PASS" if o == "P" else "FAIL")}
        for v, o in outcomes.items()
    }


def bisect(outcomes: str, start: tuple[str, ...] = ()) -> tuple[dict[str, dict[str, Cell]], list[str]]:
    """Run the bisection against a hidden truth; returns what it measured and the order it ran them."""
    hidden = truth(dict(zip(VERSIONS, outcomes, strict=True)))
    measured = {v: hidden[v] for v in start}
    ran = []
    while (probe := next_probe(VERSIONS, measured)) is not None:
        assert probe not in measured, "a release is never run twice"
        ran.append(probe)
        measured[probe] = hidden[probe]
    return measured, ran


def test_a_monotone_flip_is_found_in_log2_runs_and_verified():
    measured, ran = bisect("FFFFFFFPPPP")
    found = flips(VERSIONS, measured)
    assert [(f.before, f.after, f.verified) for f in found] == [("1.6.0", "1.7.0", True)]
    assert len(ran) <= 2 + 4  # both ends, then at most ceil(log2(9)) middles
    assert "verified: both sides run" in found[0].describe()


def test_a_line_that_never_changes_costs_two_runs_and_has_no_flip():
    measured, ran = bisect("FFFFFFFFFFF")
    assert ran == ["1.0.0", "1.10.0"]
    assert flips(VERSIONS, measured) == []


def test_a_non_monotone_line_shows_both_flips_when_a_measured_release_lies_inside():
    # 1.5.0 was measured before (an earlier pin set's record): both flips are found and verified.
    measured, _ = bisect("PPPFFFFFPPP", start=("1.5.0",))
    assert [(f.before, f.after, f.becomes.verdict) for f in flips(VERSIONS, measured)] == [
        ("1.2.0", "1.3.0", "FAIL"),
        ("1.7.0", "1.8.0", "PASS"),
    ]


def test_a_flip_that_reverts_between_two_agreeing_releases_is_invisible_to_bisection_but_not_to_a_full_sweep():
    measured, ran = bisect("PPPFFFFFPPP")
    assert ran == ["1.0.0", "1.10.0"] and flips(VERSIONS, measured) == []
    full = truth(dict(zip(VERSIONS, "PPPFFFFFPPP", strict=True)))
    assert len(flips(VERSIONS, full)) == 2


def test_releases_that_cannot_run_are_skipped_and_the_first_runnable_release_is_found():
    measured, _ = bisect("XXXXFFFFPPP")
    assert availability(VERSIONS, measured).first_runnable == "1.4.0"
    found = flips(VERSIONS, measured)
    assert [(f.before, f.after, f.verified) for f in found] == [("1.7.0", "1.8.0", True)]


def test_a_cannot_run_gap_inside_a_flip_is_named_and_not_counted_as_the_flip():
    measured = truth(dict(zip(VERSIONS, "FFFFXXPPPPP", strict=True)))
    [flip] = flips(VERSIONS, measured)
    assert (flip.before, flip.after, flip.cannot_run_between) == ("1.3.0", "1.6.0", ("1.4.0", "1.5.0"))
    assert flip.verified and "1.4.0, 1.5.0 between cannot run" in flip.describe()


def test_a_flip_with_unmeasured_releases_between_is_not_verified():
    measured = {
        v: c for v, c in truth(dict(zip(VERSIONS, "FFFFFFPPPPP", strict=True))).items() if v in ("1.0.0", "1.10.0")
    }
    [flip] = flips(VERSIONS, measured)
    assert not flip.verified and "not verified: 9 release(s)" in flip.describe()


def test_timing_cells_flip_only_when_their_intervals_do_not_overlap():
    assert same(Cell("MIXED", failed=1, finished=20, timing=True), Cell("MIXED", failed=4, finished=20, timing=True))
    assert not same(Cell("FAIL", failed=20, finished=20, timing=True), Cell("PASS", failed=0, finished=20, timing=True))


def test_a_line_whose_runs_all_error_cannot_run_with_the_reason():
    assert not cell_of(["ERROR", "ERROR"], timing=False).runnable
    assert cell_of([], timing=False, reason="environment: no wheel").reason == "environment: no wheel"
    assert cell_of(["PASS", "FAIL", "ERROR"], timing=True).text() == "FAIL 1/2"
