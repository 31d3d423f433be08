"""Claims judged on hand-built records: reproduces, does not reproduce, could not run; rates with intervals."""

import pytest

from plugpull.report.kernel import claims
from plugpull.report.kernel.claims import COULD_NOT_RUN, DOES_NOT_REPRODUCE, INCONCLUSIVE, REPRODUCES, ClaimError

SWAP = claims.parse(
    [
        {
            "point": "after-effect",
            "options": {"variant": "swap"},
            "expect": [
                {"versions": "<1.20", "verdict": "FAIL", "counts": {"charge_card:A": 2, "charge_card:B": 0}},
                {"versions": ">=1.20", "verdict": "PASS", "counts": {"charge_card:A": 1, "charge_card:B": 1}},
            ],
        }
    ],
    "finding.toml",
)
TIMING = claims.parse(
    [
        {
            "point": "after-effect",
            "options": {"durability": "async", "key": "tool-call-id"},
            "timing": True,
            "repeats": 20,
            "expect": [{"versions": ">=1.0", "fail_rate": [0.05, 1.0], "counts": {"refund": [1, 2]}}],
        }
    ],
    "finding.toml",
)


def result(verdict, counts, *, point="after-effect", options=None, version="1.18.0", framework="fw"):
    return {
        "verdict": verdict,
        "scenario": "kill-mid-tool",
        "point": point,
        "target": f"{framework} {version}",
        "framework": framework,
        "version": version,
        "options": options if options is not None else {"variant": "swap"},
        "message": f"{verdict} measured",
        "evidence": {"counts": counts},
    }


def record(results, *, version="1.18.0", error=None, pin="p"):
    return {"pin": pin, "framework": "fw", "versions": {"fw": version}, "results": results, "error": error}


def only(judgements):
    (j,) = judgements
    return j


def test_a_swap_line_reproduces_when_a_is_charged_twice_and_b_never_before_1_20():
    j = only(claims.judge(SWAP, record([result("FAIL", {"charge_card:A": 2, "charge_card:B": 0})])))
    assert j.status == REPRODUCES and j.expectation.verdict == "FAIL"


def test_a_fail_with_other_counts_does_not_reproduce_the_swap():
    j = only(claims.judge(SWAP, record([result("FAIL", {"charge_card:A": 2, "charge_card:B": 1})])))
    assert j.status == DOES_NOT_REPRODUCE and "charge_card:B=1, claimed 0" in j.reason


def test_a_pass_where_the_claim_says_fail_does_not_reproduce():
    j = only(claims.judge(SWAP, record([result("PASS", {"charge_card:A": 1, "charge_card:B": 1})])))
    assert j.status == DOES_NOT_REPRODUCE and "1 of 1 run(s) PASS, claimed FAIL" in j.reason


def test_the_version_picks_the_expectation_so_1_20_expects_pass():
    doc = record([result("PASS", {"charge_card:A": 1, "charge_card:B": 1}, version="1.20.0")], version="1.20.0")
    j = only(claims.judge(SWAP, doc))
    assert j.status == REPRODUCES and j.expectation.verdict == "PASS"


def test_error_runs_and_failed_notebooks_and_missing_lines_could_not_run():
    assert only(claims.judge(SWAP, record([result("ERROR", {})]))).status == COULD_NOT_RUN
    assert only(claims.judge(SWAP, record([], error="environment: boom"))).reason.endswith("environment: boom")
    other = result("FAIL", {}, options={"variant": "control"})
    assert only(claims.judge(SWAP, record([other]))).reason == "not run in this record"


def test_an_error_run_beside_matching_runs_is_left_out_and_said():
    runs = [result("FAIL", {"charge_card:A": 2, "charge_card:B": 0}), result("ERROR", {})]
    j = only(claims.judge(SWAP, record(runs)))
    assert j.status == REPRODUCES and "1 ERROR run(s) left out" in j.reason


def test_a_version_no_expectation_covers_is_not_judged():
    (newer_only,) = claims.parse([{"point": "after-effect", "expect": [{"versions": ">=2", "verdict": "PASS"}]}], "f")
    assert claims.judge([newer_only], record([result("FAIL", {})])) == []
    doc = record([result("FAIL", {}, version=None)])
    doc["versions"] = {"fw": None}  # the pin set does not install it: nothing to compare a range with
    assert claims.judge(SWAP, doc) == []


def test_pins_name_an_expectation_directly():
    (claim,) = claims.parse([{"point": "x", "expect": [{"pins": ["p2"], "verdict": "PASS"}]}], "f", ["p1", "p2"])
    assert claim.expectation("p2", None) is not None and claim.expectation("p1", "9.9") is None
    with pytest.raises(ClaimError, match="unknown pin set 'p3'"):
        claims.parse([{"point": "x", "expect": [{"pins": ["p3"], "verdict": "PASS"}]}], "f", ["p1"])


def async_runs(fails, passes):
    options = {"durability": "async", "key": "tool-call-id"}
    return [result("FAIL", {"refund": 2}, options=options, version="1.2.11") for _ in range(fails)] + [
        result("PASS", {"refund": 1}, options=options, version="1.2.11") for _ in range(passes)
    ]


def test_a_timing_line_reproduces_when_its_fail_rate_is_in_the_claimed_range():
    j = only(claims.judge(TIMING, record(async_runs(19, 1), version="1.2.11")))
    assert j.status == REPRODUCES and j.reason.startswith("FAIL 19/20 = 0.95 [0.76, 0.99]")
    assert j.cell() == "19/20 FAIL [0.76, 0.99]"


def timing(low, high):
    (claim,) = claims.parse(
        [
            {
                "point": "after-effect",
                "options": {"durability": "async", "key": "tool-call-id"},
                "timing": True,
                "repeats": 20,
                "expect": [{"versions": ">=1.0", "fail_rate": [low, high], "counts": {"refund": [1, 2]}}],
            }
        ],
        "finding.toml",
    )
    return [claim]


def test_0_of_20_against_at_least_0_05_is_inconclusive_and_never_reproduces():
    j = only(claims.judge(timing(0.05, 1.0), record(async_runs(0, 20), version="1.2.11")))  # [0, 0.16] reaches 0.05
    assert j.status == INCONCLUSIVE and "more runs needed" in j.reason
    assert claims.overall([j]) == INCONCLUSIVE


def test_0_of_20_against_at_least_0_3_does_not_reproduce():
    j = only(claims.judge(timing(0.3, 1.0), record(async_runs(0, 20), version="1.2.11")))
    assert j.status == DOES_NOT_REPRODUCE and "the interval is outside the claimed [0.3, 1]" in j.reason


def test_10_of_20_against_0_3_to_0_7_reproduces():
    j = only(claims.judge(timing(0.3, 0.7), record(async_runs(10, 10), version="1.2.11")))
    assert j.status == REPRODUCES and j.reason.startswith("FAIL 10/20 = 0.50")


def test_a_rate_outside_the_range_is_inconclusive_while_its_interval_reaches_it_and_not_once_it_is_outside():
    few = only(claims.judge(TIMING, record(async_runs(0, 20), version="1.2.11")))
    assert few.status == INCONCLUSIVE
    many = only(claims.judge(TIMING, record(async_runs(0, 100), version="1.2.11")))  # [0, 0.037]
    assert many.status == DOES_NOT_REPRODUCE and "the interval is outside the claimed [0.05, 1]" in many.reason


def test_one_line_that_does_not_reproduce_outweighs_an_inconclusive_one_and_inconclusive_outweighs_reproduces():
    held = only(claims.judge(timing(0.3, 0.7), record(async_runs(10, 10), version="1.2.11")))
    unsure = only(claims.judge(timing(0.05, 1.0), record(async_runs(0, 20), version="1.2.11")))
    wrong = only(claims.judge(timing(0.3, 1.0), record(async_runs(0, 20), version="1.2.11")))
    assert claims.overall([held, unsure]) == INCONCLUSIVE
    assert claims.overall([held, unsure, wrong]) == DOES_NOT_REPRODUCE
    assert claims.overall([held]) == REPRODUCES
    assert claims.summary([held, unsure], "fw 1.2.11")[0].startswith("**The finding is inconclusive on fw 1.2.11**")


def test_a_fail_rate_from_0_to_1_claims_nothing_and_is_refused():
    with pytest.raises(ClaimError, match="claims nothing"):
        timing(0.0, 1.0)
    timing(0.0, 0.2)  # "at most 0.2" can be refuted


def test_a_timing_line_holds_its_counts_in_every_run():
    runs = async_runs(10, 9) + [
        result("FAIL", {"refund": 3}, options={"durability": "async", "key": "tool-call-id"}, version="1.2.11")
    ]
    j = only(claims.judge(TIMING, record(runs, version="1.2.11")))
    assert j.status == DOES_NOT_REPRODUCE and "refund=3, claimed 1..2" in j.reason


def test_counts_are_globs_summed_over_the_matching_names():
    (claim,) = claims.parse(
        [{"point": "ack-lost", "expect": [{"versions": ">=0.22", "verdict": "FAIL", "counts": {"*staged-input*": 2}}]}],
        "f",
    )
    counts = {"message:user:Also email. [staged-input 0b58]": 2, "message:user:Refund [run 4e42]": 1}
    doc = record([result("FAIL", counts, point="ack-lost", options={}, version="0.24.0")], version="0.24.0")
    assert only(claims.judge([claim], doc)).status == REPRODUCES


def test_the_wilson_interval_matches_the_textbook_values():
    assert claims.wilson(0, 20) == pytest.approx((0.0, 0.1611), abs=1e-4)
    assert claims.wilson(19, 20) == pytest.approx((0.7639, 0.9911), abs=1e-4)
    assert claims.wilson(1, 1) == pytest.approx((0.2065, 1.0), abs=1e-4)
    assert claims.wilson(0, 0) == (0.0, 1.0)


def test_a_claim_split_at_a_release_claims_neither_side_for_its_release_candidate():
    # PEP 440: 1.20.0rc1 comes before 1.20 (not in >=1.20), and <1.20 admits no pre-release of 1.20 itself.
    doc = record([result("FAIL", {"charge_card:A": 2, "charge_card:B": 0})], version="1.20.0rc1")
    assert claims.judge(SWAP, doc) == []
    assert [
        j.status
        for j in claims.judge(
            SWAP, record([result("FAIL", {"charge_card:A": 2, "charge_card:B": 0})], version="1.19.1")
        )
    ] == [REPRODUCES]


def test_a_compatible_release_range_covers_the_minor_releases_it_names_and_not_the_next_major():
    (claim,) = claims.parse([{"point": "after-effect", "expect": [{"versions": "~=1.2", "verdict": "PASS"}]}], "f")
    assert claim.expectation("p1", "1.9.3") is not None and claim.expectation("p1", "1.2") is not None
    assert claim.expectation("p1", "2.0") is None and claim.expectation("p1", "1.1.9") is None


@pytest.mark.parametrize("versions", ["from 1.20", "~=1", ">=1.20 <2", ""])
def test_a_range_that_is_not_pep_440_is_one_line_naming_the_claim(versions):
    entry = {"point": "x", "expect": [{"versions": versions, "verdict": "PASS"}]}
    with pytest.raises(ClaimError, match=r"^finding.toml: claims\[0\].expect\[0\]: .*PEP 440 range") as raised:
        claims.parse([entry], "finding.toml")
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"point": "x", "expect": [{"versions": ">=1", "verdict": "MAYBE"}]}, "verdict = 'PASS' or 'FAIL'"),
        ({"point": "x", "timing": True, "expect": [{"versions": ">=1", "verdict": "FAIL"}]}, "fail_rate"),
        ({"point": "x", "timing": True, "repeats": 5, "expect": [{"versions": ">=1", "fail_rate": [0.1, 1]}]}, "20"),
        ({"point": "x", "expect": [{"verdict": "PASS"}]}, "either pins"),
        ({"point": "x", "expect": []}, "at least one expect"),
        ({"point": "x", "expect": [{"versions": ">=1", "verdict": "PASS", "counts": {"a": -1}}]}, "a count is"),
        ({"point": "x", "colour": "red", "expect": [{"versions": ">=1", "verdict": "PASS"}]}, "unknown key 'colour'"),
    ],
)
def test_a_malformed_claim_is_one_clear_error(entry, message):
    with pytest.raises(ClaimError, match=message):
        claims.parse([entry], "finding.toml")


def test_timing_lines_ask_the_notebook_for_their_repeats_and_other_lines_keep_the_default():
    entries = [c.line_repeats() for c in TIMING]
    assert claims.repeats_for(entries, "kill-mid-tool", "after-effect", "langgraph", TIMING[0].options, 1) == 20
    sync = {"durability": "sync", "key": "tool-call-id"}
    assert claims.repeats_for(entries, "kill-mid-tool", "after-effect", "langgraph", sync, 1) == 1


def test_the_summary_names_each_line_that_did_not_reproduce():
    doc = record([result("PASS", {"charge_card:A": 1, "charge_card:B": 1})])
    lines = claims.summary(claims.judge(SWAP, doc), "fw 1.18.0")
    assert lines[0].startswith("**The finding does not reproduce on fw 1.18.0**: 0 of 1")
    assert lines[1].startswith("- does not reproduce: `after-effect variant=swap` (claimed FAIL, charge_card:A=2")
