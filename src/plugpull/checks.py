"""Evidence -> verdict. Pure functions: no processes, no sockets, no clock.

The rule throughout: unknown is not success. Every verdict other than ERROR needs the
fault proven to have landed where it was aimed; anything unproven is ERROR with the
reason (DESIGN.md, "Unknown is not success").
"""

from __future__ import annotations

from dataclasses import dataclass

from plugpull.evidence import ApprovalEvidence, KillEvidence, KillProof, StoreEvidence, StoreProbe
from plugpull.process import Outcome
from plugpull.results import Verdict

#: A held call's connection must close within this many seconds of the SIGKILL. The
#: kernel closes a killed process's sockets as it tears the process down (milliseconds);
#: a connection still open after this is held by a process the kill did not reach.
CLOSE_AFTER_KILL_LIMIT = 2.0


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    message: str
    # Which process's stderr belongs under the line: "clean", "start", "resume" or "".
    show: str = ""


def error(message: str, show: str = "start") -> Judgement:
    return Judgement(Verdict.ERROR, message, show)


def prove_kill(ev: KillEvidence) -> Judgement | None:
    """None when the kill is proven to have landed inside the held call; else the ERROR."""
    return prove_held_kill("start", ev.start, ev.proof, bool(ev.calls), ev.point, ev.start_timeout)


def prove_held_kill(phase: str, outcome: Outcome, proof: KillProof | None, called: bool, point: str,
                    timeout: float) -> Judgement | None:
    """None when the SIGKILL of ``phase`` is proven to have landed inside its held call; else the ERROR.

    Proven means: the OS named the held call's process (SO_PEERCRED) and it was in the killed
    group just before the kill; the call was still held when SIGKILL was sent; ``phase`` died of
    SIGKILL; the held connection closed right after; nothing of the group survived.
    """
    if outcome.spawn_error:
        return error(f"cannot start {'the target' if phase == 'start' else phase}: {outcome.spawn_error}", show=phase)
    if proof is None:
        if outcome.timed_out:
            return error(f"{phase} did not reach the tool within {timeout:g}s (killed)", show=phase)
        if not called:
            if outcome.returncode == 0:
                return error(f"{phase} exited 0 and the tool never called record_effect", show=phase)
            return error(f"{phase} ended ({outcome.describe_exit()}) before the tool called record_effect", show=phase)
        return error(f"{phase} ended ({outcome.describe_exit()}) but no call was held at {point}", show=phase)
    if proof.caller_pid is None:
        return error("the OS could not say which process made the held call (no peer credentials)", show=phase)
    if proof.caller_group is None:
        return error(f"the held call's process {proof.caller_pid} was gone before the kill", show=phase)
    if proof.caller_group != proof.group:
        return error(
            f"the held call came from pid {proof.caller_pid} in process group {proof.caller_group}, "
            f"outside the killed group {proof.group}",
            show=phase,
        )
    if not proof.held_open_at_kill:
        return error("the provider was no longer holding the call when the kill was sent", show=phase)
    if not outcome.killed_by_sigkill:
        return error(f"{phase} did not die of SIGKILL ({outcome.describe_exit()})", show=phase)
    if proof.closed_after_kill is None or proof.closed_after_kill > CLOSE_AFTER_KILL_LIMIT:
        return error(
            f"the held call's connection did not close within {CLOSE_AFTER_KILL_LIMIT:g}s of the kill "
            "(a process outside the kill still holds it)",
            show=phase,
        )
    if proof.survivors:
        return error(f"processes {proof.survivors} of the killed group were still alive after SIGKILL", show=phase)
    return None


def judge_effects(counts: dict[str, int]) -> Judgement:
    """Every effect name the run used must have exactly one effect at the provider."""
    if not counts:
        return error("no effect was recorded or asked for", show="")
    lost = [n for n, c in counts.items() if c == 0]
    dup = {n: c for n, c in counts.items() if c >= 2}
    parts = []
    if lost:
        parts.append("effect lost: the provider saw 0 " + ", 0 ".join(lost) + " (expected 1)")
    if dup:
        parts.append(
            "effect duplicated: the provider saw "
            + ", ".join(f"{c} {n}" for n, c in dup.items())
            + " (expected 1)"
        )
    if parts:
        return Judgement(Verdict.FAIL, "; ".join(parts))
    return Judgement(Verdict.PASS, "the provider saw exactly 1 " + ", 1 ".join(counts))


def check_clean_run(ev: KillEvidence) -> Judgement | None:
    """None when the run without a kill asked for each of its effects exactly once.

    The clean run is what makes counts after a crash mean something: it names every effect
    a whole run owes (so an effect that resume never asks for still shows up as lost), and
    it catches a target that itself asks for one effect twice (a retry loop without a key),
    which would otherwise read as a duplicate caused by the crash.
    """
    clean = ev.clean
    if clean is None:
        return error("the clean run (no kill) was not run", show="")
    start = clean.start
    if start.spawn_error:
        return error(f"cannot start the target: {start.spawn_error}", show="clean")
    if start.timed_out:
        where = "finish" if clean.calls else "reach the tool"
        return error(f"a clean run (no kill) did not {where} within {ev.start_timeout:g}s (killed)", show="clean")
    if start.returncode != 0:
        return error(f"a clean run (no kill) ended ({start.describe_exit()})", show="clean")
    if not clean.counts:
        return error("start exited 0 and the tool never called record_effect (clean run, no kill)", show="clean")
    twice = {n: c for n, c in clean.counts.items() if c != 1}
    if twice:
        listed = ", ".join(f"{c} {n}" for n, c in twice.items())
        return error(
            f"a clean run (no kill) already recorded {listed}: the target asks for one effect more than once "
            "(a retry without a key?), so counts after a crash would prove nothing",
            show="clean",
        )
    return None


def judge_kill_mid_tool(ev: KillEvidence) -> Judgement:
    """The verdict for one kill point (issue 2, section 3)."""
    unproven = check_clean_run(ev) or prove_kill(ev)
    if unproven is not None:
        return unproven
    resume = ev.resume
    if resume is None:
        return error("resume was not run", show="")
    if resume.spawn_error:
        return error(f"cannot start resume: {resume.spawn_error}", show="resume")
    if resume.timed_out:
        return Judgement(Verdict.FAIL, f"resume hung: killed after {ev.resume_timeout:g}s", "resume")
    # Every effect the clean run owed counts, even one that resume never asked for (then 0).
    counts = {**{name: 0 for name in ev.clean.counts}, **ev.counts}
    if resume.returncode != 0:
        effects = judge_effects(counts)
        return Judgement(Verdict.FAIL, f"resume crashed ({resume.describe_exit()}); {effects.message}", "resume")
    return judge_effects(counts)


def prove_probe(probe: StoreProbe) -> Judgement | None:
    """None when the probe ran clean and found writes carrying the staged input; else the ERROR."""
    start = probe.start
    if start.spawn_error:
        return error(f"probe: cannot start the target: {start.spawn_error}")
    if start.timed_out:
        return error(f"probe: start did not finish within {probe.start_timeout:g}s (killed)")
    if start.returncode != 0:
        return error(f"probe: start failed ({start.describe_exit()}) with every store call answered")
    if probe.token is None:
        return error("probe: the app announced no staged input (announce(staged_input=TOKEN))")
    if not probe.carrying:
        return error(f"probe: none of the {len(probe.writes)} store writes carried the staged input")
    return None


def prove_store_fault(ev: StoreEvidence) -> Judgement | None:
    """None when the fault is proven to have landed on a write carrying the staged input.

    Proven means: start reached the faulted write and it was dropped at the point; that
    write carried the staged input; up to it the staged input was in the same writes as in
    the probe (start took the probed path); start failed; start wrote nothing after it.
    """
    start, n = ev.start, ev.write
    if start.spawn_error:
        return error(f"write {n}: cannot start the target: {start.spawn_error}")
    if start.timed_out:
        return error(f"write {n}: start did not finish within {ev.start_timeout:g}s (killed)")
    start_writes = [w for w in ev.writes if w.get("phase") == "start"]
    faulted = next((w for w in start_writes if w.get("number") == n), None)
    if faulted is None:
        return error(f"write {n}: start never reached write {n} (it made {len(start_writes)} writes)")
    if faulted.get("fault") != ev.point or faulted.get("answered"):
        return error(f"write {n}: the store did not drop write {n} at {ev.point}")
    if ev.token is None:
        return error(f"write {n}: start announced no staged input")
    if n not in ev.carrying:
        return error(f"write {n}: write {n} did not carry the staged input (the probe's did)")
    upto = [c for c in ev.carrying if c <= n]
    probed = [c for c in ev.probe_carrying if c <= n]
    if upto != probed:
        return error(f"write {n}: the staged input was in writes {upto} up to write {n}, in the probe {probed}")
    if start.returncode == 0:
        return error(f"write {n}: start exited 0 although write {n} failed: the app never saw the failure")
    later = [w.get("number") for w in start_writes if w.get("number", 0) > n]
    if later:
        return error(f"write {n}: start went on writing after the faulted write (writes {later})")
    return None


def judge_items(ev: StoreEvidence) -> Judgement:
    """Every item ever written must be stored exactly once; the staged input is named first.

    ``ev.counts`` is keyed by store.identity; a user message's key holds its text, so the
    staged input's key is the one holding this run's token.
    """
    n, staged = ev.write, ev.staged_stored
    others = {k: c for k, c in ev.counts.items() if not (ev.token and ev.token in k)}
    parts = []
    if staged == 0:
        parts.append("staged input lost: stored 0 times after resume (expected 1)")
    elif staged >= 2:
        parts.append(f"staged input duplicated: stored {staged} times after resume (expected 1)")
    lost = [k for k, c in others.items() if c == 0]
    dup = {k: c for k, c in others.items() if c >= 2}
    if lost:
        parts.append(f"{len(lost)} other item(s) lost: " + ", ".join(_short(k) for k in lost))
    if dup:
        parts.append(f"{len(dup)} other item(s) duplicated: " + ", ".join(f"{_short(k)} x{c}" for k, c in dup.items()))
    if parts:
        return Judgement(Verdict.FAIL, f"write {n}: " + "; ".join(parts))
    return Judgement(
        Verdict.PASS, f"write {n}: staged input stored once; every other written item ({len(others)}) stored once"
    )


def _short(key: str, limit: int = 48) -> str:
    return key if len(key) <= limit else key[: limit - 3] + "..."


def judge_lost_session_write(ev: StoreEvidence) -> Judgement:
    """The verdict for one faulted write at one point."""
    unproven = prove_store_fault(ev)
    if unproven is not None:
        return unproven
    n, resume = ev.write, ev.resume
    if resume is None:
        return error(f"write {n}: resume was not run", show="")
    if resume.spawn_error:
        return error(f"write {n}: cannot start resume: {resume.spawn_error}", show="resume")
    if resume.timed_out:
        return Judgement(Verdict.FAIL, f"write {n}: resume hung: killed after {ev.resume_timeout:g}s", "resume")
    items = judge_items(ev)
    if resume.returncode != 0:
        detail = items.message.split(": ", 1)[1]
        return Judgement(Verdict.FAIL, f"write {n}: resume crashed ({resume.describe_exit()}); {detail}", "resume")
    return items


# --- resume-after-approval -------------------------------------------------------------

#: ``COMMAND approve`` exits with this when the framework refused the approval (the pause was
#: already claimed by another resumer, or there is none). docs/agent-protocol.md.
REFUSED_EXIT = 3


def last_line(text: str, limit: int = 200) -> str:
    """The last non-empty line of a process's output: where an agent prints why it stopped."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def check_paused(ev: ApprovalEvidence) -> Judgement | None:
    """None when ``start`` ran to the approval pause: exit 0, no effect asked for."""
    start = ev.start
    if start.spawn_error:
        return error(f"cannot start the target: {start.spawn_error}")
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
    return outcome.describe_exit()


def judge_approve_elsewhere(ev: ApprovalEvidence) -> Judgement:
    """Restored from the framework's store alone, in another process, one approval: exactly 1 effect."""
    unproven = check_paused(ev)
    if unproven is not None:
        return unproven
    if not ev.approvals:
        return error("approve was not run", show="")
    approve = ev.approvals[0].outcome
    if approve.spawn_error:
        return error(f"cannot start approve: {approve.spawn_error}", show="approve")
    if approve.timed_out:
        return Judgement(Verdict.FAIL, f"approve hung: killed after {ev.timeout:g}s", "approve")
    if approve.returncode == 0 and not ev.calls:
        return error(
            "approve exited 0 and the tool never called record_effect (a lost approval and an agent that "
            "reports nothing look the same)",
            show="approve",
        )
    effects = _effects(_owed(ev))
    if approve.returncode == REFUSED_EXIT:
        return Judgement(
            Verdict.FAIL,
            f"the framework refused the approval of a run paused in another process (exit {REFUSED_EXIT}: "
            f"{last_line(approve.stderr)}); {effects.message}",
            "approve",
        )
    if approve.returncode != 0:
        return Judgement(Verdict.FAIL, f"approve crashed ({approve.describe_exit()}); {effects.message}", "approve")
    return effects


def check_clean_approval(ev: ApprovalEvidence) -> Judgement | None:
    """None when a fault-free start + approve of this target passed: it is what every other point builds on."""
    if ev.clean is None:
        return error("the clean approval (no fault) was not run", show="")
    clean = judge_approve_elsewhere(ev.clean)
    if clean.verdict is Verdict.PASS:
        return None
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
    effects = _effects(_owed(ev))
    if second.timed_out:
        return Judgement(Verdict.FAIL, f"the second approval hung: killed after {ev.timeout:g}s; {effects.message}", "approve")
    if ev.approvals[1].effect_calls:
        return Judgement(
            Verdict.FAIL,
            f"the second approval ran the approved tool again ({_approval_exit(second)}); {effects.message}",
            "approve",
        )
    if effects.verdict is not Verdict.PASS:
        return Judgement(effects.verdict, f"second approval {_approval_exit(second)}; {effects.message}", "approve")
    if second.returncode == REFUSED_EXIT:
        return Judgement(Verdict.PASS, f"the second approval was refused (exit {REFUSED_EXIT}); {effects.message}")
    if second.returncode == 0:
        return Judgement(Verdict.PASS, f"the second approval was a no-op (exit 0, the tool did not run); {effects.message}")
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
    crashed = [r for r in ev.approvals if r not in ran and r not in hung and r not in refused and r not in noop]
    parts = [f"{len(ran)} of {n} approvers ran the approved tool"]
    if refused:
        parts.append(f"{len(refused)} refused (exit {REFUSED_EXIT})")
    if noop:
        parts.append(f"{len(noop)} no-op (exit 0)")
    if crashed:
        lines = sorted({f"{r.outcome.describe_exit()}: {last_line(r.outcome.stderr)}" for r in crashed})
        parts.append(f"{len(crashed)} crashed ({'; '.join(lines)})")
    if hung:
        parts.append(f"{len(hung)} hung (killed after {ev.timeout:g}s)")
    effects = _effects(_owed(ev))
    summary = ", ".join(parts) + "; " + effects.message
    winner_ok = len(ran) == 1 and ran[0].outcome.returncode == 0
    if winner_ok and not crashed and not hung and effects.verdict is Verdict.PASS:
        return Judgement(Verdict.PASS, summary)
    return Judgement(Verdict.FAIL, summary, "approve")


def judge_killed_approval(ev: ApprovalEvidence) -> Judgement:
    """The approving process SIGKILLed inside the approved tool; recover must finish with 1 effect."""
    unproven = check_clean_approval(ev) or check_paused(ev)
    if unproven is not None:
        return unproven
    if not ev.approvals:
        return error("approve was not run", show="")
    unproven = prove_held_kill("approve", ev.approvals[0].outcome, ev.proof, bool(ev.calls),
                               ev.point.removeprefix("killed-"), ev.timeout)
    if unproven is not None:
        return unproven
    recover = ev.recover.outcome if ev.recover is not None else None
    if recover is None:
        return error("recover was not run", show="")
    if recover.spawn_error:
        return error(f"cannot start recover: {recover.spawn_error}", show="recover")
    effects = _effects(_owed(ev))
    if recover.timed_out:
        return Judgement(Verdict.FAIL, f"recover hung: killed after {ev.timeout:g}s; {effects.message}", "recover")
    if recover.returncode != 0:
        why = last_line(recover.stderr) or "no output"
        return Judgement(
            Verdict.FAIL,
            f"stuck: the run can no longer be finished: recover {_approval_exit(recover)}: {why}; {effects.message}",
            "recover",
        )
    return Judgement(effects.verdict, effects.message, "recover" if effects.verdict is Verdict.FAIL else "")


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
