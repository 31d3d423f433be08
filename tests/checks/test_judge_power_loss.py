"""power-loss's verdicts on hand-built evidence: FUSE missing, an unproven kill or an untrusted cut is
ERROR; after a trusted cut, kill-mid-tool's judgement of resume, with what the cut lost."""

import signal

from plugpull.checks import describe_losses, judge_power_loss
from plugpull.evidence import CleanRun, KillProof, PowerLossEvidence
from plugpull.process import Outcome
from plugpull.results import Verdict

KILLED = -signal.SIGKILL
JOURNAL_GONE = (
    "journal.json is absent after the cut: the file was created and no fsync of its directory followed "
    "(it held 58 bytes)"
)


def cut(*texts, variant="unsynced"):
    return {
        "variant": variant,
        "losses": [{"path": f"f{i}", "kind": "absent", "text": text} for i, text in enumerate(texts)],
        "activity": {"writes": 2, "fsyncs": 0},
        "unmount": "unmounted",
    }


def evidence(**changes) -> PowerLossEvidence:
    ev = PowerLossEvidence(
        point="after-effect",
        start=Outcome(argv=["a", "start"], returncode=KILLED),
        clean=CleanRun(start=Outcome(argv=["a", "start"], returncode=0), counts={"charge": 1}, calls=1),
        golden=[{"charge": "done"}],
        proof=KillProof(group=100, caller_pid=100, caller_group=100, held_open_at_kill=True, closed_after_kill=0.01),
        held_name="charge",
        resume=Outcome(argv=["a", "resume"], returncode=0),
        resumed=[{"charge": "done"}],
        counts={"charge": 1},
        calls=[{"phase": "start", "name": "charge", "recorded": True, "held_at": "after-effect"}],
        start_timeout=5,
        resume_timeout=5,
        cut=cut(),
    )
    for key, value in changes.items():
        setattr(ev, key, value)
    return ev


def test_one_charge_and_the_golden_result_after_a_cut_that_lost_nothing_passes_and_says_so():
    j = judge_power_loss(evidence())
    assert j.verdict is Verdict.PASS
    assert j.message.endswith("; the power cut (unsynced) lost nothing: every write and every name was durable")


def test_a_second_charge_after_the_cut_fails_and_names_what_the_cut_lost():
    j = judge_power_loss(evidence(counts={"charge": 2}, cut=cut(JOURNAL_GONE)))
    assert j.verdict is Verdict.FAIL
    assert j.message == (
        f"effect duplicated: the provider saw 2 charge (expected 1); the power cut (unsynced) lost: {JOURNAL_GONE}"
    )


def test_a_resume_that_crashes_on_what_the_cut_left_is_a_fail_with_its_error():
    crashed = Outcome(
        argv=["a", "resume"], returncode=1, stderr="sqlite3.DatabaseError: database disk image is malformed"
    )
    j = judge_power_loss(evidence(resume=crashed, resumed=[], cut=cut("db lost its last 4096 bytes")))
    assert j.verdict is Verdict.FAIL
    assert j.message.startswith("resume crashed (")
    assert "database disk image is malformed" in j.message
    assert j.message.endswith("the power cut (unsynced) lost: db lost its last 4096 bytes")


def test_fuse_that_cannot_mount_is_an_error_with_its_reason_never_a_pass():
    j = judge_power_loss(evidence(unavailable="no /dev/fuse (the fuse kernel module is not loaded)", cut=None))
    assert j.verdict is Verdict.ERROR
    assert j.message == (
        "power-loss needs a FUSE mount, and FUSE cannot mount here: no /dev/fuse (the fuse kernel module is not loaded)"
    )


def test_a_mount_that_failed_otherwise_is_an_error():
    j = judge_power_loss(evidence(mount_error="the daemon exited (code 1) during mount", cut=None))
    assert j.verdict is Verdict.ERROR
    assert "the power-cut mount failed: the daemon exited" in j.message


def test_an_unproven_kill_is_an_error_before_any_cut_is_read():
    j = judge_power_loss(evidence(proof=None, start=Outcome(argv=["a", "start"], returncode=0), calls=[], cut=None))
    assert j.verdict is Verdict.ERROR
    assert "power cut" not in j.message


def test_a_cut_the_model_cannot_vouch_for_is_an_error():
    j = judge_power_loss(evidence(cut=None, cut_error="the model did not match the backing directory: x"))
    assert j.verdict is Verdict.ERROR
    assert j.message == "the power cut cannot be trusted: the model did not match the backing directory: x"


def test_a_proven_kill_without_a_cut_report_is_an_error():
    assert judge_power_loss(evidence(cut=None)).verdict is Verdict.ERROR


def test_a_boundary_line_proves_its_kill_as_every_boundary_does():
    ev = evidence(point="after effect charge 1", side="after", proof=None, start=Outcome(argv=[], returncode=0))
    j = judge_power_loss(ev)
    assert j.verdict is Verdict.ERROR
    assert "without reaching after effect charge 1" in j.message


def test_many_losses_show_the_first_three_and_count_the_rest():
    said = describe_losses(cut("a", "b", "c", "d", "e", variant="torn"))
    assert said == "the power cut (torn) lost: a; b; c (and 2 more)"


def test_a_wal_index_goes_after_the_losses_that_say_something_of_the_data():
    said = describe_losses(
        {
            "variant": "unsynced",
            "losses": [
                {"path": "db-shm", "kind": "data", "text": "db-shm lost all its 32768 bytes"},
                {"path": "db-wal", "kind": "data", "text": "db-wal lost its last 3776 bytes"},
            ],
        }
    )
    assert said == "the power cut (unsynced) lost: db-wal lost its last 3776 bytes; db-shm lost all its 32768 bytes"


def test_a_rollback_journal_back_after_the_cut_says_sqlite_will_undo_the_last_commit():
    said = describe_losses(
        {
            "variant": "unsynced",
            "losses": [{"path": "sessions.sqlite-journal", "kind": "back", "text": "sessions.sqlite-journal is back"}],
        }
    )
    assert said == (
        "the power cut (unsynced) lost: sessions.sqlite-journal is back: SQLite rolls this hot journal back, "
        "undoing the last transaction committed before the cut"
    )
