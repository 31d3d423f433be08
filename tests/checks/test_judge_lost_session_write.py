"""lost-session-write's verdict on hand-built evidence: every way a fault can be unproven is ERROR."""

from dataclasses import replace

import pytest

from plugpull.checks import judge_lost_session_write, prove_probe
from plugpull.evidence import StoreEvidence, StoreProbe
from plugpull.process import Outcome
from plugpull.results import Verdict

TOKEN = "tok4775"
STAGED = f"message:user:note [staged-input {TOKEN}]"


def write(number, phase="start", fault=None, answered=True):
    return {
        "number": number,
        "phase": phase,
        "method": "add_items",
        "session": "s",
        "items": [],
        "kept": fault != "write-lost",
        "answered": answered,
        "fault": fault,
        "pid": 1,
    }


def proven(**changes) -> StoreEvidence:
    """ack-lost on write 4, the probe's staged write; start failed there; resume wrote 5 and 6."""
    ev = StoreEvidence(
        write=4,
        point="ack-lost",
        start=Outcome(argv=["a", "start"], returncode=1),
        probe_carrying=[4],
        token=TOKEN,
        carrying=[4],
        writes=[
            write(1),
            write(2),
            write(3),
            write(4, fault="ack-lost", answered=False),
            write(5, "resume"),
            write(6, "resume"),
        ],
        resume=Outcome(argv=["a", "resume"], returncode=0),
        staged_stored=1,
        counts={"message:user:refund": 1, "function_call:c1": 1, STAGED: 1, "message:assistant:done": 1},
        start_timeout=5,
        resume_timeout=5,
    )
    return replace(ev, **changes)


def test_a_proven_fault_with_every_item_stored_once_passes():
    j = judge_lost_session_write(proven())
    assert j.verdict is Verdict.PASS
    assert j.message == "write 4: staged input stored once; every other written item (3) stored once"


def test_a_staged_input_stored_twice_fails_as_duplicated():
    j = judge_lost_session_write(proven(staged_stored=2, counts={**proven().counts, STAGED: 2}))
    assert j.verdict is Verdict.FAIL
    assert j.message == "write 4: staged input duplicated: stored 2 times after resume (expected 1)"


def test_a_staged_input_never_stored_fails_as_lost():
    j = judge_lost_session_write(proven(staged_stored=0, counts={**proven().counts, STAGED: 0}))
    assert j.message == "write 4: staged input lost: stored 0 times after resume (expected 1)"


def test_another_item_lost_fails_and_names_it():
    j = judge_lost_session_write(proven(counts={**proven().counts, "message:assistant:done": 0}))
    assert j.verdict is Verdict.FAIL
    assert j.message == "write 4: 1 other item(s) lost: message:assistant:done"


def test_a_resume_that_crashes_fails_and_still_counts_items():
    j = judge_lost_session_write(proven(resume=Outcome(argv=[], returncode=1), staged_stored=2))
    assert j.verdict is Verdict.FAIL and j.show == "resume"
    assert j.message.startswith("write 4: resume crashed (exit code 1); staged input duplicated")


def test_a_resume_that_hangs_fails():
    j = judge_lost_session_write(proven(resume=Outcome(argv=[], timed_out=True)))
    assert j.verdict is Verdict.FAIL and "resume hung" in j.message


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"start": Outcome(argv=[], spawn_error="nope: not found")}, "cannot start the target"),
        ({"start": Outcome(argv=[], timed_out=True)}, "start did not finish within 5s"),
        ({"writes": [write(1), write(2), write(3)]}, "start never reached write 4 (it made 3 writes)"),
        ({"writes": [write(1), write(2), write(3), write(4)]}, "the store did not drop write 4 at ack-lost"),
        ({"token": None}, "start announced no staged input"),
        ({"carrying": [5]}, "write 4 did not carry the staged input"),
        ({"carrying": [2, 4]}, "the staged input was in writes [2, 4] up to write 4, in the probe [4]"),
        ({"start": Outcome(argv=[], returncode=0)}, "start exited 0 although write 4 failed"),
        ({"writes": [*proven().writes[:4], write(5)]}, "start went on writing after the faulted write (writes [5])"),
        ({"resume": None}, "resume was not run"),
        ({"resume": Outcome(argv=[], spawn_error="gone")}, "cannot start resume"),
    ],
)
def test_each_unproven_fault_is_an_error_with_its_reason(changes, reason):
    j = judge_lost_session_write(proven(**changes))
    assert j.verdict is Verdict.ERROR
    assert j.message.startswith("write 4: ") and reason in j.message


def probe(**changes) -> StoreProbe:
    ok = StoreProbe(
        start=Outcome(argv=[], returncode=0),
        token=TOKEN,
        carrying=[4],
        writes=[write(n) for n in range(1, 6)],
        start_timeout=5,
    )
    return replace(ok, **changes)


def test_a_clean_probe_is_proven():
    assert prove_probe(probe()) is None


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"start": Outcome(argv=[], spawn_error="nope")}, "cannot start the target"),
        ({"start": Outcome(argv=[], timed_out=True)}, "did not finish within 5s"),
        ({"start": Outcome(argv=[], returncode=1)}, "start failed (exit code 1) with every store call answered"),
        ({"token": None}, "announced no staged input"),
        ({"carrying": []}, "none of the 5 store writes carried the staged input"),
    ],
)
def test_each_failed_probe_is_an_error_with_its_reason(changes, reason):
    j = prove_probe(probe(**changes))
    assert j is not None and j.verdict is Verdict.ERROR and reason in j.message


GOLDEN = {
    "message:user:refund [run <run value 1>]": 1,
    "function_call:<run value 2>": 1,
    "message:user:note [staged-input <staged input>]": 1,
    "message:assistant:done": 1,
}


def test_a_resumed_session_equal_to_the_probes_passes():
    j = judge_lost_session_write(proven(golden=GOLDEN, session=dict(GOLDEN)))
    assert (j.verdict, j.message) == (
        Verdict.PASS,
        "write 4: staged input stored once; every other item of the probe's session (3) stored once, none beyond it",
    )


def test_an_item_of_the_probes_session_missing_after_resume_is_lost():
    session = {**GOLDEN, "function_call:<run value 2>": 0}
    j = judge_lost_session_write(proven(golden=GOLDEN, session=session))
    assert (j.verdict, j.message) == (Verdict.FAIL, "write 4: 1 other item(s) lost: function_call:<run value 2>")


def test_an_item_the_probe_never_stored_is_beyond_the_session():
    session = {**GOLDEN, "message:assistant:<run value 3>": 1}
    j = judge_lost_session_write(proven(golden=GOLDEN, session=session))
    assert (j.verdict, j.message) == (
        Verdict.FAIL,
        "write 4: 1 item(s) beyond the probe's session: message:assistant:<run value 3>",
    )


def test_a_probe_that_already_stores_an_item_twice_fails_without_any_fault():
    probe = StoreProbe(
        start=Outcome(argv=["a", "start"], returncode=0),
        token=TOKEN,
        carrying=[4],
        writes=[write(n) for n in (1, 2, 3, 4)],
        session={**GOLDEN, "message:assistant:done": 2},
    )
    j = prove_probe(probe)
    assert (j.verdict, j.without_fault) == (Verdict.FAIL, True)
    assert j.message == (
        "without any fault: item duplicated: the probe (every store call answered) already stores "
        "message:assistant:done x2"
    )
