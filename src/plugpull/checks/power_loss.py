"""power-loss evidence -> verdict: a proven kill, a trusted power cut, then kill-mid-tool's judgement of resume.

The kill is proven exactly as kill-mid-tool (a kill-mid-tool point) or every-boundary (a boundary
line) proves it; the cut must come from a mount that worked and a model that matched the disk;
then resume is judged as after a SIGKILL (every effect the clean run owed exactly once, the golden
result; a resume that crashes on what the cut left is a FAIL with its error), and the line says
what the cut lost, in the model's words. Anything the line cannot prove is ERROR: a FUSE mount
that cannot be made here is never a skip and never a PASS.
"""

from __future__ import annotations

from dataclasses import replace

from plugpull.checks.every_boundary import prove_boundary_kill
from plugpull.checks.judgement import Judgement, error, last_line
from plugpull.checks.kill_mid_tool import check_clean_run, judge_resume, prove_kill
from plugpull.evidence import PowerLossEvidence

#: How many of the model's loss sentences a line's message carries; the evidence keeps them all.
SHOWN_LOSSES = 3


def prove_power_cut(ev: PowerLossEvidence) -> Judgement | None:
    """None when FUSE mounted, the kill is proven, and the cut's report can be trusted; else the ERROR."""
    if ev.unavailable is not None:
        return error(f"power-loss needs a FUSE mount, and FUSE cannot mount here: {ev.unavailable}", show="")
    if ev.mount_error is not None:
        return error(f"the power-cut mount failed: {ev.mount_error}", show="")
    unproven = check_clean_run(ev) or (prove_boundary_kill(ev) if ev.side else prove_kill(ev))
    if unproven is not None:
        return unproven
    if ev.cut_error is not None:
        return error(f"the power cut cannot be trusted: {ev.cut_error}", show="")
    if ev.cut is None:
        return error("the power was not cut: the mount gave no report", show="")
    return None


def describe_losses(cut: dict) -> str:
    """What the cut lost, in the model's sentences: "the power cut (unsynced) lost: X; Y (and 2 more)"."""
    variant = cut.get("variant", "?")
    # A WAL database's -shm file is its wal-index, rebuilt from the WAL when the database is next opened
    # (https://www.sqlite.org/walformat.html#shm): it is always "lost" and says nothing of the data, so
    # it goes last.
    losses = sorted(cut.get("losses", []), key=lambda loss: loss.get("path", "").endswith("-shm"))
    texts = [loss["text"] + said_of(loss) for loss in losses]
    if not texts:
        return f"the power cut ({variant}) lost nothing: every write and every name was durable"
    shown = "; ".join(texts[:SHOWN_LOSSES])
    more = f" (and {len(texts) - SHOWN_LOSSES} more)" if len(texts) > SHOWN_LOSSES else ""
    return f"the power cut ({variant}) lost: {shown}{more}"


def said_of(loss: dict) -> str:
    """What a loss means to the store that made it, where that is certain from the file alone.

    A rollback journal back after the cut is a hot journal: SQLite rolls it back when the database is
    next opened, undoing the transaction whose commit was that journal's unlink
    (https://www.sqlite.org/atomiccommit.html#_hot_rollback_journals; only ``synchronous=EXTRA`` fsyncs
    the directory after the unlink, https://www.sqlite.org/pragma.html#pragma_synchronous).
    """
    if loss.get("kind") == "back" and loss.get("path", "").endswith("-journal"):
        return ": SQLite rolls this hot journal back, undoing the last transaction committed before the cut"
    return ""


def judge_power_loss(ev: PowerLossEvidence) -> Judgement:
    """The verdict for one power-loss line: kill-mid-tool's after the cut, with what the cut lost."""
    unproven = prove_power_cut(ev)
    if unproven is not None:
        return unproven
    judged = judge_resume(ev)
    message = judged.message
    resume = ev.resume
    if resume is not None and not resume.timed_out and resume.returncode not in (0, None):
        # A store the cut left corrupt shows in the error it made resume crash with: the line says it.
        said = last_line(resume.stderr)
        message = f"{message}; resume said: {said}" if said else message
    return replace(judged, message=f"{message}; {describe_losses(ev.cut)}")
