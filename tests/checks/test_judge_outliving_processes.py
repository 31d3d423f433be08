"""A process of the run alive after its phase is over is ERROR, in every scenario, on hand-built evidence."""

import signal
from dataclasses import replace

import pytest

from plugpull.checks import check_outlived, judge_kill_mid_tool, judge_lost_session_write, judge_resume_after_approval
from plugpull.evidence import ApprovalEvidence, ApprovalRun, CleanRun, KillEvidence, KillProof, Outcome
from plugpull.results import Verdict

HELPER = {"pid": 4242, "cmdline": "python -c helper"}
DAEMON = {"pid": 4343, "cmdline": "python agent.py start"}
PROOF = KillProof(group=100, caller_pid=100, caller_group=100, held_open_at_kill=True, closed_after_kill=0.01)


def killed(**changes) -> KillEvidence:
    """kill-mid-tool evidence that passes; ``changes`` break one thing."""
    ev = KillEvidence(
        point="after-effect",
        start=Outcome(argv=["a", "start"], returncode=-signal.SIGKILL),
        clean=CleanRun(start=Outcome(argv=["a", "start"], returncode=0), counts={"charge": 1}, calls=1),
        proof=PROOF,
        resume=Outcome(argv=["a", "resume"], returncode=0),
        counts={"charge": 1},
        calls=[{"seq": 1, "phase": "start", "name": "charge", "key": None, "pid": 100}],
        start_timeout=5,
        resume_timeout=5,
    )
    return replace(ev, **changes)


def test_the_evidence_without_outliving_processes_passes():
    assert judge_kill_mid_tool(killed()).verdict is Verdict.PASS


def test_a_process_that_outlived_the_kill_is_an_error_naming_it():
    start = Outcome(argv=["a", "start"], returncode=-signal.SIGKILL, outlived=[HELPER])
    j = judge_kill_mid_tool(killed(start=start))
    assert j.verdict is Verdict.ERROR
    assert j.message == "a process of the run outlived the kill: pid 4242 (python -c helper)"
    assert j.show == "start"


def test_several_processes_that_outlived_the_kill_are_all_named():
    start = Outcome(argv=["a", "start"], returncode=-signal.SIGKILL, outlived=[HELPER, DAEMON])
    j = judge_kill_mid_tool(killed(start=start))
    assert j.message == (
        "2 processes of the run outlived the kill: pid 4242 (python -c helper), pid 4343 (python agent.py start)"
    )


def test_a_process_that_outlived_the_kill_explains_a_connection_that_stayed_open():
    # The helper holding the connection is the cause; the open connection is its symptom.
    start = Outcome(argv=["a", "start"], returncode=-signal.SIGKILL, outlived=[HELPER])
    j = judge_kill_mid_tool(killed(start=start, proof=replace(PROOF, closed_after_kill=None)))
    assert j.message.startswith("a process of the run outlived the kill")


def test_a_caller_outside_the_killed_group_is_still_named_first():
    start = Outcome(argv=["a", "start"], returncode=-signal.SIGKILL, outlived=[HELPER])
    j = judge_kill_mid_tool(killed(start=start, proof=replace(PROOF, caller_pid=4242, caller_group=4242)))
    assert "outside the killed group" in j.message


def test_a_kill_on_a_system_where_plugpull_cannot_follow_processes_is_an_error():
    j = judge_kill_mid_tool(killed(proof=replace(PROOF, accounted=False)))
    assert j.verdict is Verdict.ERROR
    assert "PR_SET_CHILD_SUBREAPER" in j.message


def test_a_resume_that_leaves_a_process_behind_is_an_error_whatever_the_counts():
    # The helper could still record an effect after they were counted.
    j = judge_kill_mid_tool(killed(resume=Outcome(argv=["a", "resume"], returncode=0, outlived=[HELPER])))
    assert j.verdict is Verdict.ERROR
    assert j.message == "a process of the run outlived resume: pid 4242 (python -c helper)"
    assert j.show == "resume"


def test_a_clean_run_that_leaves_a_process_behind_is_an_error():
    clean = CleanRun(start=Outcome(argv=["a", "start"], returncode=0, outlived=[HELPER]), counts={"charge": 1}, calls=1)
    j = judge_kill_mid_tool(killed(clean=clean))
    assert j.verdict is Verdict.ERROR
    assert j.message.startswith("a process of the run outlived the clean run (no kill): pid 4242")


def test_nothing_outlived_is_no_error():
    assert check_outlived("resume", Outcome(argv=["a"], returncode=0)) is None
    assert check_outlived("resume", None) is None


def test_more_than_three_outliving_processes_are_counted_not_listed():
    many = [{"pid": n, "cmdline": "x"} for n in range(5)]
    j = check_outlived("resume", Outcome(argv=["a"], outlived=many))
    assert j.message == "5 processes of the run outlived resume: pid 0 (x), pid 1 (x), pid 2 (x) and 2 more"


def approval(point: str, **changes) -> ApprovalEvidence:
    """resume-after-approval evidence that passes; ``changes`` break one thing."""
    run = ApprovalRun(Outcome(argv=["a", "approve"], returncode=0), 1)
    clean = ApprovalEvidence(
        point="approve-elsewhere", start=Outcome(argv=["a", "start"], returncode=0), approvals=[run]
    )
    clean.counts = {"refund": 1}
    clean.calls = [{"seq": 1}]
    ev = ApprovalEvidence(
        point=point,
        start=Outcome(argv=["a", "start"], returncode=0),
        clean=clean,
        approvals=[ApprovalRun(Outcome(argv=["a", "approve"], returncode=-signal.SIGKILL), 1)],
        proof=PROOF,
        recover=ApprovalRun(Outcome(argv=["a", "recover"], returncode=0), 1),
        counts={"refund": 1},
        calls=[{"seq": 1}],
        timeout=5,
    )
    return replace(ev, **changes)


def test_a_killed_approval_without_outliving_processes_passes():
    assert judge_resume_after_approval(approval("killed-after-effect")).verdict is Verdict.PASS


def test_a_process_that_outlived_the_kill_of_approve_is_an_error():
    approve = ApprovalRun(Outcome(argv=["a", "approve"], returncode=-signal.SIGKILL, outlived=[HELPER]), 1)
    j = judge_resume_after_approval(approval("killed-after-effect", approvals=[approve]))
    assert j.verdict is Verdict.ERROR
    assert j.message == "a process of the run outlived the kill: pid 4242 (python -c helper)"
    assert j.show == "approve"


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"recover": ApprovalRun(Outcome(argv=["a", "recover"], returncode=0, outlived=[HELPER]), 1)},
            "a process of the run outlived recover: pid 4242",
        ),
        (
            {"start": Outcome(argv=["a", "start"], returncode=0, outlived=[HELPER])},
            "a process of the run outlived start: pid 4242",
        ),
    ],
)
def test_an_approval_phase_that_leaves_a_process_behind_is_an_error(changes, message):
    j = judge_resume_after_approval(approval("killed-after-effect", **changes))
    assert j.verdict is Verdict.ERROR
    assert j.message.startswith(message)


def test_an_approve_elsewhere_that_leaves_a_process_behind_is_an_error():
    approve = ApprovalRun(Outcome(argv=["a", "approve"], returncode=0, outlived=[HELPER]), 1)
    j = judge_resume_after_approval(approval("approve-elsewhere", clean=None, approvals=[approve]))
    assert j.verdict is Verdict.ERROR
    assert j.message.startswith("a process of the run outlived approve: pid 4242")


def test_a_lost_session_write_resume_that_leaves_a_process_behind_is_an_error():
    # The passing lost-session-write evidence its own tests build (pytest puts tests/checks on sys.path).
    from test_judge_lost_session_write import proven

    ev = proven()
    assert judge_lost_session_write(ev).verdict is Verdict.PASS
    j = judge_lost_session_write(replace(ev, resume=replace(ev.resume, outlived=[HELPER])))
    assert j.verdict is Verdict.ERROR
    assert j.message == "a process of the run outlived resume (write 4 faulted): pid 4242 (python -c helper)"
