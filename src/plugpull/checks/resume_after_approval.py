"""resume-after-approval evidence -> verdict: the pause, each approval, the kill of the approving process."""

from __future__ import annotations

from plugpull.checks.completion import check_golden, with_completion
from plugpull.checks.judgement import (
    PAUSED_AGAIN_EXIT,
    Judgement,
    check_outlived,
    check_recovering,
    error,
    judge_effects,
    last_line,
    paused_again,
    prove_held_kill,
    without_fault,
)
from plugpull.checks.protocol import usage_refused
from plugpull.evidence import ApprovalEvidence, ApprovalRun, Outcome
from plugpull.results import Verdict

#: ``COMMAND approve`` exits with this when the framework refused the approval (the pause was
#: already claimed by another resumer, or there is none). docs/agent-protocol.md.
REFUSED_EXIT = 3


def check_paused(ev: ApprovalEvidence) -> Judgement | None:
    """None when ``start`` ran to the approval pause: exit 0, no effect asked for."""
    start = ev.start
    if start.spawn_error:
        return error(f"cannot start the target: {start.spawn_error}")
    left = check_outlived("start", start)
    if left is not None:
        return left
    if start.timed_out:
        return error(f"start did not reach the approval pause within {ev.timeout:g}s (killed)")
    if start.returncode != 0:
        return error(f"start ended ({start.describe_exit()}) instead of pausing for approval with exit 0")
    if ev.start_calls:
        return error(
            f"start called record_effect {ev.start_calls} time(s) before any approval: "
            "the tool does not wait for approval"
        )
    return None


def _owed(ev: ApprovalEvidence) -> dict[str, int]:
    """Final counts, with every effect the clean approval made (0 if this run never asked for it)."""
    names = ev.clean.counts if ev.clean is not None else {}
    return {**{name: 0 for name in names}, **ev.counts}


def _effects(counts: dict[str, int]) -> Judgement:
    """judge_effects, where no effect at all is a plain count (the caller decides what it means)."""
    if not counts:
        return Judgement(Verdict.FAIL, "the provider saw no effect")
    return judge_effects(counts)


def _approval_exit(outcome: Outcome) -> str:
    if outcome.returncode == REFUSED_EXIT:
        return f"refused (exit {REFUSED_EXIT})"
    if outcome.returncode == PAUSED_AGAIN_EXIT:
        return f"paused again (exit {PAUSED_AGAIN_EXIT})"
    return outcome.describe_exit()


def judge_approve_elsewhere(ev: ApprovalEvidence) -> Judgement:
    """Restored from the framework's store alone, in another process, one approval: exactly 1 effect.

    Its FAILs of a property (the approval refused, the run paused again, an effect lost or done twice) are
    marked ``without_fault``: no fault was needed, so the target's other lines are moot (scenarios.settle).
    A crash or a hang is a FAIL of this line only; the other points then prove nothing (ERROR).
    """
    unproven = check_paused(ev)
    if unproven is not None:
        return unproven
    if not ev.approvals:
        return error("approve was not run", show="")
    approve = ev.approvals[0].outcome
    if approve.spawn_error:
        return error(f"cannot start approve: {approve.spawn_error}", show="approve")
    left = check_outlived("approve", approve)
    if left is not None:
        return left
    if approve.timed_out:
        return Judgement(Verdict.FAIL, f"approve hung: killed after {ev.timeout:g}s", "approve")
    if approve.returncode == 0 and not ev.calls:
        return error(
            "approve exited 0 and the tool never called record_effect (a lost approval and an agent that "
            "reports nothing look the same)",
            show="approve",
        )
    refused = usage_refused(approve, "approve")
    if refused is not None:
        return refused
    effects = _effects(_owed(ev))
    if approve.returncode == REFUSED_EXIT:
        return Judgement(
            Verdict.FAIL,
            f"the framework refused the approval of a run paused in another process (exit {REFUSED_EXIT}: "
            f"{last_line(approve.stderr)}); {effects.message}",
            "approve",
            without_fault=True,
        )
    if approve.returncode == PAUSED_AGAIN_EXIT:
        return Judgement(Verdict.FAIL, paused_again("approve", _owed(ev)), "approve", without_fault=True)
    if approve.returncode != 0:
        return Judgement(Verdict.FAIL, f"approve crashed ({approve.describe_exit()}); {effects.message}", "approve")
    if effects.verdict is Verdict.FAIL:
        return Judgement(Verdict.FAIL, effects.message, "approve", without_fault=True)
    return effects


def check_clean_approval(ev: ApprovalEvidence) -> Judgement | None:
    """None when a fault-free start + approve of this target passed: it is what every other point builds on.

    When it already broke what every point checks (refused, paused again, an effect lost or twice), the
    point is FAIL "without any fault: ..." (``without_fault``); when it crashed, hung or broke the
    protocol, nothing after a fault would say anything: ERROR.
    """
    if ev.clean is None:
        return error("the clean approval (no fault) was not run", show="")
    clean = judge_approve_elsewhere(ev.clean)
    if clean.verdict is Verdict.PASS:
        return check_golden(ev.golden, "a clean approval (no fault)", show="")
    if clean.without_fault:
        return without_fault(f"a clean approval (start + approve, no fault): {clean.message}", show="clean")
    return error(f"a clean approval (no fault) did not pass, so this point proves nothing: {clean.message}", show="")


def judge_double_resume(ev: ApprovalEvidence) -> Judgement:
    """The same pause approved twice, one after the other: the second is refused or a no-op; 1 effect."""
    unproven = check_clean_approval(ev) or check_paused(ev)
    if unproven is not None:
        return unproven
    if len(ev.approvals) != 2:
        return error(f"expected 2 approvals, ran {len(ev.approvals)}", show="")
    first, second = ev.approvals[0].outcome, ev.approvals[1].outcome
    owed_after_first = {**{n: 0 for n in ev.clean.counts}, **ev.counts_after_first}
    if first.returncode != 0 or judge_effects(owed_after_first).verdict is not Verdict.PASS:
        return error(
            f"the first approval did not finish with one effect ({_approval_exit(first)}; counts "
            f"{owed_after_first}), so the second proves nothing",
            show="approve",
        )
    if second.spawn_error:
        return error(f"cannot start the second approve: {second.spawn_error}", show="approve")
    left = check_outlived("approve", first, "the first approve") or check_outlived(
        "approve", second, "the second approve"
    )
    if left is not None:
        return left
    effects = _effects(_owed(ev))
    if second.timed_out:
        return Judgement(
            Verdict.FAIL, f"the second approval hung: killed after {ev.timeout:g}s; {effects.message}", "approve"
        )
    if ev.approvals[1].effect_calls:
        return Judgement(
            Verdict.FAIL,
            f"the second approval ran the approved tool again ({_approval_exit(second)}); {effects.message}",
            "approve",
        )
    if effects.verdict is not Verdict.PASS:
        return Judgement(effects.verdict, f"second approval {_approval_exit(second)}; {effects.message}", "approve")
    if second.returncode == PAUSED_AGAIN_EXIT:
        return Judgement(
            Verdict.FAIL,
            f"the second approval left the finished run paused again (exit {PAUSED_AGAIN_EXIT}) instead of "
            f"refusing (exit {REFUSED_EXIT}) or doing nothing (exit 0); {effects.message}",
            "approve",
        )
    if second.returncode == REFUSED_EXIT:
        return Judgement(Verdict.PASS, f"the second approval was refused (exit {REFUSED_EXIT}); {effects.message}")
    if second.returncode == 0:
        return Judgement(
            Verdict.PASS, f"the second approval was a no-op (exit 0, the tool did not run); {effects.message}"
        )
    return Judgement(
        Verdict.FAIL,
        f"the second approval crashed ({second.describe_exit()}: {last_line(second.stderr)}) instead of refusing "
        f"(exit {REFUSED_EXIT}); {effects.message}",
        "approve",
    )


def judge_racing_resumers(ev: ApprovalEvidence) -> Judgement:
    """N approvers of one pause released at once: exactly one runs the tool, the rest refuse; 1 effect."""
    unproven = check_clean_approval(ev) or check_paused(ev)
    if unproven is not None:
        return unproven
    n = ev.racers
    if n < 2 or len(ev.approvals) != n:
        return error(f"expected {n} racing approvers (at least 2), ran {len(ev.approvals)}", show="")
    for run in ev.approvals:
        if run.outcome.spawn_error:
            return error(f"cannot start approve: {run.outcome.spawn_error}", show="")
        left = check_outlived("approve", run.outcome, "a racing approve")
        if left is not None:
            return left
    if (ev.gated or 0) < n:
        return error(
            f"only {ev.gated or 0} of {n} approvers were waiting at plugpull's gate (plugpull.client.gate()) "
            "when it opened: the race is not proven",
            show="",
        )
    ran = [r for r in ev.approvals if r.effect_calls]
    hung = [r for r in ev.approvals if r.outcome.timed_out]
    refused = [r for r in ev.approvals if not r.effect_calls and r.outcome.returncode == REFUSED_EXIT]
    noop = [r for r in ev.approvals if not r.effect_calls and r.outcome.returncode == 0]
    # A loser that leaves the run paused again may have saved that pause over the winner's finished run.
    paused = [r for r in ev.approvals if not r.effect_calls and r.outcome.returncode == PAUSED_AGAIN_EXIT]
    crashed = [
        r for r in ev.approvals if r not in ran and r not in hung and r not in refused and r not in noop + paused
    ]
    locked = [r for r in crashed if _database_locked(r.outcome)]
    crashed = [r for r in crashed if r not in locked]
    ran_crashed = [r for r in ran if not r.outcome.timed_out and r.outcome.returncode != 0]
    parts = [f"{len(ran)} of {n} approvers ran the approved tool{_ran_crashed(ran, ran_crashed)}"]
    if refused:
        parts.append(f"{len(refused)} refused (exit {REFUSED_EXIT})")
    if noop:
        parts.append(f"{len(noop)} no-op (exit 0)")
    if paused:
        parts.append(f"{len(paused)} paused again (exit {PAUSED_AGAIN_EXIT})")
    if locked:
        parts.append(f"{len(locked)} {LOCKED}")
    if crashed:
        parts.append(f"{len(crashed)} crashed ({_exits(crashed)})")
    if hung:
        parts.append(f"{len(hung)} hung (killed after {ev.timeout:g}s)")
    effects = _effects(_owed(ev))
    summary = ", ".join(parts) + "; " + effects.message
    winner_ok = len(ran) == 1 and ran[0].outcome.returncode == 0
    if winner_ok and not crashed and not locked and not hung and not paused and effects.verdict is Verdict.PASS:
        # The one approver that ran the tool finished the run: its result must be the golden one.
        return with_completion(
            Judgement(Verdict.PASS, summary),
            ev.golden,
            ran[0].results,
            ev.result_ignore,
            "the approver that ran the tool",
            show="approve",
        )
    return Judgement(Verdict.FAIL, summary, "approve")


#: A racer that crashed on a locked database (sqlite3.OperationalError: database is locked, e.g.
#: FastAIAgent's checkpoint store under 5 writers) is an outcome of its own, counted apart from a
#: racer that ran the tool, so a finding can report how often it happens.
LOCKED = "crashed: database is locked"


def _database_locked(outcome: Outcome) -> bool:
    return outcome.returncode not in (None, 0) and "database is locked" in last_line(outcome.stderr)


def _exits(runs: list[ApprovalRun]) -> str:
    return "; ".join(sorted({f"{r.outcome.describe_exit()}: {last_line(r.outcome.stderr)}" for r in runs}))


def _ran_crashed(ran: list[ApprovalRun], ran_crashed: list[ApprovalRun]) -> str:
    """Names a runner that did not finish: a lone runner that crashed is not a winner."""
    if not ran_crashed:
        return ""
    if len(ran) == 1:
        return f" and crashed ({_exits(ran_crashed)})"
    return f", {len(ran_crashed)} of them crashed ({_exits(ran_crashed)})"


def racer_outcomes(ev: ApprovalEvidence) -> dict[str, int]:
    """How each racing approver ended, counted by outcome: what a finding reports rates of."""
    counts: dict[str, int] = {}
    for run in ev.approvals:
        out = run.outcome
        if run.effect_calls:
            kind = (
                "ran the tool"
                if out.returncode == 0
                else "ran the tool, hung"
                if out.timed_out
                else "ran the tool, crashed"
            )
        elif out.timed_out:
            kind = "hung"
        elif out.returncode == REFUSED_EXIT:
            kind = "refused"
        elif out.returncode == 0:
            kind = "no-op"
        elif out.returncode == PAUSED_AGAIN_EXIT:
            kind = "paused again"
        elif _database_locked(out):
            kind = LOCKED
        else:
            kind = "crashed"
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def judge_killed_approval(ev: ApprovalEvidence) -> Judgement:
    """The approving process SIGKILLed inside the approved tool; recover must finish with 1 effect."""
    unproven = check_clean_approval(ev) or check_paused(ev)
    if unproven is not None:
        return unproven
    if not ev.approvals:
        return error("approve was not run", show="")
    unproven = prove_held_kill(
        "approve", ev.approvals[0].outcome, ev.proof, bool(ev.calls), ev.point.removeprefix("killed-"), ev.timeout
    )
    if unproven is not None:
        return unproven
    recover = ev.recover.outcome if ev.recover is not None else None
    unfinished = check_recovering("recover", recover)
    if unfinished is not None:
        return unfinished
    effects = _effects(_owed(ev))
    if recover.timed_out:
        return Judgement(Verdict.FAIL, f"recover hung: killed after {ev.timeout:g}s; {effects.message}", "recover")
    if recover.returncode == PAUSED_AGAIN_EXIT:
        return Judgement(Verdict.FAIL, paused_again("recover", _owed(ev)), "recover")
    if recover.returncode != 0:
        why = last_line(recover.stderr) or "no output"
        return Judgement(
            Verdict.FAIL,
            f"stuck: the run can no longer be finished: recover {_approval_exit(recover)}: {why}; {effects.message}",
            "recover",
        )
    effects = Judgement(effects.verdict, effects.message, "recover" if effects.verdict is Verdict.FAIL else "")
    return with_completion(effects, ev.golden, ev.recover.results, ev.result_ignore, "recover")


def judge_resume_after_approval(ev: ApprovalEvidence) -> Judgement:
    judge = {
        "approve-elsewhere": judge_approve_elsewhere,
        "double-resume": judge_double_resume,
        "racing-resumers": judge_racing_resumers,
        "killed-before-effect": judge_killed_approval,
        "killed-after-effect": judge_killed_approval,
    }.get(ev.point)
    if judge is None:
        return error(f"unknown point {ev.point!r}", show="")
    return judge(ev)
