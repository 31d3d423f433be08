"""What every check shares: the Judgement, ERROR, the held-call kill proof, effect counts.

Pure functions: no processes, no sockets, no clock. The rule throughout: unknown is not
success. Every verdict other than ERROR needs the fault proven to have landed where it was
aimed; anything unproven is ERROR with the reason (docs/architecture.md, "Unknown is not success").
"""

from __future__ import annotations

from dataclasses import dataclass

from plugpull.evidence import KillProof, Outcome
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
    # A FAIL of the clean (fault-free) run itself: it already breaks what the line checks, so no fault is
    # needed to show the bug. The scenario keeps it on one line of the target and makes the target's other
    # lines moot (scenarios.settle); docs/agent-protocol.md, "A bug that shows without any fault".
    without_fault: bool = False
    # A moot line: the point whose line holds the clean run's FAIL (verdict FAIL, never PASS, never ERROR).
    moot: str = ""


#: The prefix of a FAIL the clean run already shows (Judgement.without_fault).
WITHOUT_FAULT = "without any fault: "


def without_fault(message: str, show: str = "clean") -> Judgement:
    """The clean run (no fault) already breaks what the line checks: a FAIL, with no fault needed to show it.

    Only for a property the line judges (an effect lost or done twice, an approval refused or paused again, a
    next turn a strict provider refuses): a clean run that crashes, hangs or breaks the protocol proves nothing
    and stays ERROR.
    """
    return Judgement(Verdict.FAIL, WITHOUT_FAULT + message, show, without_fault=True)


def error(message: str, show: str = "start") -> Judgement:
    return Judgement(Verdict.ERROR, message, show)


def describe_outlived(outlived: list[dict]) -> str:
    """``pid N (cmdline)`` for each process, the first few only."""
    shown = ", ".join(f"pid {p.get('pid')} ({p.get('cmdline') or '?'})" for p in outlived[:3])
    return shown + (f" and {len(outlived) - 3} more" if len(outlived) > 3 else "")


def check_outlived(phase: str, outcome: Outcome | None, after: str | None = None) -> Judgement | None:
    """None when nothing ``phase`` started was alive once it was over; else the ERROR.

    A process of the run that is still alive (in any group or session) can act after the crash or
    after the effects were counted, so no count read then proves anything: ERROR, not FAIL
    (docs/DECISIONS.md, "Harness core and processes"). plugpull killed it; the evidence names it.
    """
    if outcome is None or not outcome.outlived:
        return None
    many = len(outcome.outlived) > 1
    what = f"{len(outcome.outlived)} processes of the run" if many else "a process of the run"
    return error(f"{what} outlived {after or phase}: {describe_outlived(outcome.outlived)}", show=phase)


def prove_held_kill(
    phase: str, outcome: Outcome, proof: KillProof | None, called: bool, point: str, timeout: float
) -> Judgement | None:
    """None when the SIGKILL of ``phase`` is proven to have landed inside its held call; else the ERROR.

    Proven means: the OS named the held call's process (SO_PEERCRED) and it was in the killed
    group just before the kill; the call was still held when SIGKILL was sent; ``phase`` died of
    SIGKILL; nothing of the group survived; no process of the run, in any group or session,
    outlived the kill; the held connection closed right after.
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
        return error(
            f"the held call's process {proof.caller_pid} was gone before its process group could be read", show=phase
        )
    if proof.caller_group != proof.group:
        return error(
            f"the held call came from pid {proof.caller_pid} in process group {proof.caller_group}, "
            f"outside the killed group {proof.group}",
            show=phase,
        )
    if not proof.accounted:
        return error(
            "plugpull cannot follow processes that leave the killed group here (no PR_SET_CHILD_SUBREAPER or "
            "/proc): the kill is not proven to reach every process of the run",
            show=phase,
        )
    if not proof.held_open_at_kill:
        return error("the provider was no longer holding the call when the kill was sent", show=phase)
    if not outcome.killed_by_sigkill:
        return error(f"{phase} did not die of SIGKILL ({outcome.describe_exit()})", show=phase)
    if proof.survivors:
        return error(f"processes {proof.survivors} of the killed group were still alive after SIGKILL", show=phase)
    # Before the connection check: a process that outlived the kill is what keeps a connection open.
    outlived = check_outlived(phase, outcome, "the kill")
    if outlived is not None:
        return outlived
    if proof.closed_after_kill is None or proof.closed_after_kill > CLOSE_AFTER_KILL_LIMIT:
        return error(
            f"the held call's connection did not close within {CLOSE_AFTER_KILL_LIMIT:g}s of the kill "
            "(a process outside the kill still holds it)",
            show=phase,
        )
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
            "effect duplicated: the provider saw " + ", ".join(f"{c} {n}" for n, c in dup.items()) + " (expected 1)"
        )
    if parts:
        return Judgement(Verdict.FAIL, "; ".join(parts))
    return Judgement(Verdict.PASS, "the provider saw exactly 1 " + ", 1 ".join(counts))


#: An approval agent's ``approve`` or ``recover`` exits with this when the run ended paused at an approval
#: again instead of finished: the approved tool did not run to the end (docs/agent-protocol.md).
PAUSED_AGAIN_EXIT = 5


def paused_again(phase: str, counts: dict[str, int]) -> str:
    """What a phase that exited PAUSED_AGAIN_EXIT did, with the counts: a lost effect when one is missing."""
    effects = judge_effects(counts) if counts else Judgement(Verdict.FAIL, "the provider saw no effect")
    said = f"({phase} exited {PAUSED_AGAIN_EXIT})"
    if not counts or any(c == 0 for c in counts.values()):
        return (
            f"effect lost: the run paused again instead of running the approved tool {said}; "
            + effects.message.removeprefix("effect lost: ")
        )
    return f"the run paused again instead of finishing {said}; {effects.message}"


def last_line(text: str, limit: int = 200) -> str:
    """The last non-empty line of a process's output: where an agent prints why it stopped."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def check_recovering(phase: str, outcome: Outcome | None) -> Judgement | None:
    """None when the phase that recovers the run (resume, recover) ran and left nothing behind; else the ERROR."""
    if outcome is None:
        return error(f"{phase} was not run", show="")
    if outcome.spawn_error:
        return error(f"cannot start {phase}: {outcome.spawn_error}", show=phase)
    return check_outlived(phase, outcome)
