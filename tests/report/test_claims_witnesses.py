"""A witness's stored runs judged against the harness's line, on hand-built records: agrees, disagrees, could not run."""

from plugpull.report.kernel import claims
from plugpull.report.kernel.claims import AGREES, COULD_NOT_RUN, DISAGREES

WITNESS = {"script": "witness/kill.py", "args": ["--key", "none"]}
DOCUMENTED = {
    "kind": "documented",
    "because": "the docs put idempotency on the user",
    "quote": {"url": "https://docs.example.org/durable", "text": "be idempotent"},
    "witness": WITNESS,
}
LINE = claims.parse(
    [
        {
            "point": "after-effect",
            "options": {"key": "none"},
            "expect": [{"versions": ">=1", "verdict": "FAIL", "counts": {"refund": 2}}],
            **DOCUMENTED,
        }
    ],
    "finding.toml",
)
RATE = claims.parse(
    [
        {
            "point": "after-effect",
            "options": {"key": "id"},
            "timing": True,
            "repeats": 20,
            "expect": [{"versions": ">=1", "fail_rate": [0.3, 1.0], "counts": {"refund": [1, 2]}}],
            **DOCUMENTED,
        }
    ],
    "finding.toml",
)


def result(verdict, refunds, options=None):
    return {
        "verdict": verdict,
        "scenario": "kill-mid-tool",
        "point": "after-effect",
        "target": "fw 1.0",
        "framework": "fw",
        "version": "1.0",
        "options": options or {"key": "none"},
        "message": "m",
        "evidence": {"counts": {"refund": refunds}},
    }


def run(verdict, refunds, *, exit_code=None, version="1.0"):
    code = {"PASS": 0, "FAIL": 1, "ERROR": 2}[verdict] if exit_code is None else exit_code
    output = {"witness": "kill", "framework": "fw", "version": version, "verdict": verdict}
    output |= {"counts": {"refund": refunds}, "did": "killed the tool after its refund, resumed"}
    return {"exit_code": code, "seconds": 1.0, "timed_out": False, "output": output, "stderr_tail": ""}


def record(results, runs, *, label="after-effect key=none", error=None):
    witnesses = [{"claim": label, "script": "witness/kill.py", "args": [], "runs": runs, "error": error}]
    return {"schema": 3, "pin": "p", "framework": "fw", "versions": {"fw": "1.0"}, "results": results,
            "error": None, "witnesses": witnesses}  # fmt: skip


def judged(claimed, doc):
    (w,) = claims.judge_witnesses(claims.judge(claimed, doc), doc)
    return w


def test_a_witness_that_fails_with_the_claimed_counts_beside_a_reproducing_line_agrees():
    w = judged(LINE, record([result("FAIL", 2)], [run("FAIL", 2)]))
    assert w.status == AGREES and w.text() == "FAIL refund=2 (agrees)"


def test_a_witness_that_passes_where_the_claim_says_fail_disagrees_with_a_one_line_reason():
    w = judged(LINE, record([result("FAIL", 2)], [run("PASS", 1)]))
    assert w.status == DISAGREES and w.reason == "witness PASS refund=1, claimed FAIL, refund=2"


def test_a_witness_with_other_counts_disagrees():
    w = judged(LINE, record([result("FAIL", 2)], [run("FAIL", 3)]))
    assert w.status == DISAGREES and w.reason == "witness refund=3, claimed 2"


def test_a_witness_disagrees_when_the_harness_line_does_not_reproduce():
    w = judged(LINE, record([result("PASS", 1)], [run("FAIL", 2)]))
    assert w.status == DISAGREES
    assert w.reason == "witness FAIL refund=2, harness PASS refund=1 (does not reproduce)"


def test_error_runs_timeouts_and_runs_without_a_json_line_are_left_out():
    timed_out = {"exit_code": None, "seconds": 60.0, "timed_out": True, "output": None, "stderr_tail": ""}
    silent = {"exit_code": 1, "seconds": 1.0, "timed_out": False, "output": None, "stderr_tail": "Traceback"}
    w = judged(LINE, record([result("FAIL", 2)], [run("ERROR", 1), timed_out, silent, run("FAIL", 2)]))
    assert w.status == AGREES and w.finished == 1 and w.left_out == 3 and "3 run(s) left out" in w.reason
    assert w.text() == "FAIL refund=2 (agrees; 3 run(s) left out)"


def test_a_witness_whose_every_run_errored_could_not_run_and_says_why():
    w = judged(LINE, record([result("FAIL", 2)], [run("ERROR", 0)]))
    assert w.status == COULD_NOT_RUN
    assert w.text() == "could not run: 1 run(s), none finished: ERROR: killed the tool after its refund, resumed"


def test_an_exit_code_that_contradicts_the_printed_verdict_is_not_evidence():
    w = judged(LINE, record([result("FAIL", 2)], [run("FAIL", 2, exit_code=0)]))
    assert w.status == COULD_NOT_RUN and "exit code 0 but verdict FAIL" in w.reason


def test_a_witness_that_ran_another_version_of_the_framework_is_not_evidence_for_this_record():
    w = judged(LINE, record([result("FAIL", 2)], [run("FAIL", 2, version="0.9")]))
    assert w.status == COULD_NOT_RUN and "it ran version 0.9, the record has 1.0" in w.reason


def test_a_record_without_the_witness_entry_or_with_its_error_could_not_run():
    doc = record([result("FAIL", 2)], [run("FAIL", 2)], label="another line")
    assert judged(LINE, doc).reason == "no witness output in this record"
    doc = record([result("FAIL", 2)], [], error="no environment to run it in")
    assert judged(LINE, doc).text() == "could not run: no environment to run it in"


def test_a_timing_witness_agrees_when_the_intervals_overlap_and_disagrees_when_they_do_not():
    harness = [result("FAIL", 2, {"key": "id"})] * 10 + [result("PASS", 1, {"key": "id"})] * 10
    label = "after-effect key=id"
    close = judged(RATE, record(harness, [run("FAIL", 2)] * 3 + [run("PASS", 1)] * 3, label=label))
    assert close.status == AGREES and close.measured == "3/6 FAIL [0.19, 0.81]"
    never = judged(RATE, record(harness, [run("PASS", 1)] * 20, label=label))
    assert never.status == DISAGREES and "the intervals do not overlap" in never.reason


def test_check_fails_on_a_disagreeing_witness_and_on_a_documented_line_whose_witness_did_not_run():
    rerun = "plugpull report --finding demo --pin p"
    agree = record([result("FAIL", 2)], [run("FAIL", 2)])
    assert claims.witness_problems(claims.judge(LINE, agree), agree, "r.json", rerun) == []
    disagree = record([result("FAIL", 2)], [run("PASS", 1)])
    (problem,) = claims.witness_problems(claims.judge(LINE, disagree), disagree, "r.json", rerun)
    assert problem.startswith("r.json: after-effect key=none: the witness disagrees with the harness: witness PASS")
    old = {**agree, "schema": 2}
    del old["witnesses"]
    (problem,) = claims.witness_problems(claims.judge(LINE, old), old, "r.json", rerun)
    assert problem == (
        "r.json: after-effect key=none: a documented line with no witness output that ran "
        "(no witness output in this record; rerun: plugpull report --finding demo --pin p)"
    )


def test_an_app_line_whose_optional_witness_did_not_run_is_not_a_check_problem():
    (app,) = claims.parse(
        [
            {
                "point": "after-effect",
                "options": {"key": "none"},
                "expect": [{"versions": ">=1", "verdict": "FAIL", "counts": {"refund": 2}}],
                "kind": "app",
                "because": "the app saves after the tool",
                "witness": WITNESS,
            }
        ],
        "finding.toml",
    )
    doc = record([result("FAIL", 2)], [run("ERROR", 0)])
    assert claims.witness_problems(claims.judge([app], doc), doc, "r.json", "rerun") == []
