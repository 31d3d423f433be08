"""Evidence is plain data: its dict form is what dataclasses.asdict gives, made faster."""

import dataclasses
from collections import namedtuple

from plugpull.evidence import BoundaryEvidence, CleanRun, KillProof, Outcome, asdict
from plugpull.results import Result, Verdict

Pair = namedtuple("Pair", "a b")


def hand_built() -> BoundaryEvidence:
    clean = CleanRun(
        start=Outcome(argv=["python", "-m", "agent", "start"], returncode=0, stdout="done\n", seconds=0.25),
        counts={"refund": 1},
        calls=1,
        announced=[{"phase": "clean", "framework": "langgraph", "version": "1.2.11"}],
        results=[{"answer": "Refund for order A-1001 is done.", "n": 1.5, "ok": True, "none": None}],
        trace=[{"seq": 1, "name": "model-call", "kind": "mark", "edge": "before", "t": 0.01}],
    )
    return BoundaryEvidence(
        point="after effect refund 1",
        start=Outcome(argv=["python"], returncode=-9, outlived=[{"pid": 4, "cmdline": "sleep"}]),
        clean=clean,
        proof=KillProof(group=4, caller_pid=4, caller_group=4, held_open_at_kill=True, closed_after_kill=0.001),
        boundary={"index": 6, "label": "effect refund 1", "pair": Pair(1, (2, 3)), "tags": {"x"}},
    )


def test_evidence_as_a_dict_is_what_dataclasses_asdict_gives():
    ev = hand_built()
    assert asdict(ev) == dataclasses.asdict(ev)
    result = Result(Verdict.FAIL, "every-boundary", "after effect refund 1", "langgraph", "dup", evidence=ev.to_dict())
    assert asdict(result) == dataclasses.asdict(result)
    assert type(asdict(ev)["boundary"]["pair"]) is Pair


def test_evidence_as_a_dict_shares_no_mutable_part_with_the_evidence():
    ev = hand_built()
    data = asdict(ev)
    data["clean"]["results"][0]["answer"] = "changed"
    data["clean"]["trace"].clear()
    data["boundary"]["tags"].add("y")
    assert ev.clean.results[0]["answer"] == "Refund for order A-1001 is done."
    assert ev.clean.trace and ev.boundary["tags"] == {"x"}


def test_a_results_dict_is_what_dataclasses_asdict_gives_in_the_same_order_with_the_verdict_as_text():
    result = Result(
        Verdict.FAIL, "every-boundary", "after effect refund 1", "langgraph", "dup", evidence=hand_built().to_dict()
    )
    expected = {**dataclasses.asdict(result), "verdict": "FAIL"}
    assert result.to_dict() == expected
    assert list(result.to_dict()) == list(expected)
    assert result.to_dict()["evidence"] is result.evidence  # its own plain dict, not copied again


def test_a_lines_evidence_keeps_its_clean_run_but_not_the_clean_runs_trace_or_output():
    ev = hand_built()
    clean = ev.to_dict()["clean"]
    assert "trace" not in clean and "stdout" not in clean["start"]
    expected = {k: v for k, v in dataclasses.asdict(ev.clean).items() if k != "trace"}
    expected["start"] = {k: v for k, v in expected["start"].items() if k not in ("stdout", "stderr")}
    assert clean == expected
    assert ev.to_dict()["boundary"] == dataclasses.asdict(ev)["boundary"]
