"""cancel-mid-stream evidence -> verdict: the cancel proven at its point, then the next turn judged.

A line PASSes when, after the client's cancel (and, at a ``-then-sigkill`` point, the SIGKILL right
after it), the next turn on the same conversation: is accepted by a strict provider (checks.history),
runs to its end (the thread is not stuck), leaves every effect the clean run made exactly once, finds
in the saved conversation what the user saw streamed before the cancel, and reports the clean run's
result. Anything the harness could not prove (the run never reached the point, the cancel was never
reported, or at a ``-then-sigkill`` point not while the run was held there) is ERROR; a cancel the
framework reports only once its running step ends is judged and says ``deferred``. A clean run (nothing
cancelled) whose next turn is refused already breaks what the line checks: FAIL "without any fault".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from plugpull.checks.completion import check_golden, with_completion
from plugpull.checks.history import request_problem
from plugpull.checks.judgement import (
    Judgement,
    check_outlived,
    check_recovering,
    error,
    judge_effects,
    last_line,
    without_fault,
)
from plugpull.evidence import CancelEvidence, CancelRun, Outcome
from plugpull.results import Verdict


def _ended(what: str, outcome: Outcome | None) -> str:
    return f"{what} was not run" if outcome is None else f"{what} ended ({outcome.describe_exit()})"


def check_clean_cancel_run(clean: CancelRun | None, timeout: float) -> Judgement | None:
    """None when the clean run (start, then the next turn, nothing cancelled) is one the line can judge by.

    A next turn a strict provider refuses after a first turn that ran clean (exit 0, its own requests accepted) is
    the line's own property broken with no cancel at all: FAIL "without any fault" (:func:`refused_next_turn`),
    whatever the next turn's exit. Every other way the clean run went wrong (it crashed or hung with nothing
    refused, the first turn's request was refused, a process outlived it) proves nothing: ERROR.
    """
    if clean is None:
        return error("the clean run (no cancel) was not run", show="")
    for phase, outcome in (("start", clean.start), ("resume", clean.resume)):
        if outcome is None:
            return error(f"the clean run's {phase} was not run", show="clean")
        if outcome.spawn_error:
            return error(f"cannot start the target: {outcome.spawn_error}", show="clean")
        left = check_outlived("clean", outcome, f"the clean run's {phase}")
        if left is not None:
            return left
        if outcome.timed_out:
            return error(f"the clean run's {phase} (no cancel) did not finish within {timeout:g}s", show="clean")
        refused = refused_next_turn(clean) if phase == "resume" else None
        if refused is not None:
            return refused
        if outcome.returncode != 0:
            return error(f"the clean run's {phase} (no cancel) {_ended('', outcome).strip()}", show="clean")
    if clean.rejected:
        return error(f"the clean run's own model request would be refused: {clean.rejected[0]}", show="clean")
    if not clean.counts:
        return error("the clean run (no cancel) never called record_effect", show="clean")
    twice = {n: c for n, c in clean.counts.items() if c != 1}
    if twice:
        listed = ", ".join(f"{c} {n}" for n, c in twice.items())
        return without_fault(
            f"effect duplicated: a clean run (no cancel) already recorded {listed} over its two turns (expected 1)"
        )
    return check_golden(clean.results, "the clean run's next turn (no cancel)")


def refused_next_turn(clean: CancelRun) -> Judgement | None:
    """The FAIL for a clean run whose next turn a strict provider refuses; None when it has no such turn.

    Only after a first turn that exited 0 with every request of its own accepted: the history the next turn sent
    was built by the framework from what the first turn saved, with nothing cancelled or killed. The harness's
    validator judges the recorded requests again (checks.history), so the verdict never rests on the agent raising.
    """
    start = clean.start
    if start is None or start.returncode != 0 or start.timed_out:
        return None
    if len(clean.rejected) > sum(1 for r in clean.next_turn_requests if r.get("rejected")):
        return None  # a request of the first turn was refused too: the target's requests, not its saved history
    refused = first_rejected(clean.next_turn_requests)
    if refused is None:
        return None
    ended = clean.resume.describe_exit() if clean.resume is not None else "not run"
    return without_fault(f"next turn rejected: {refused} (the clean run's next turn, nothing cancelled; {ended})")


def prove_cancel(ev: CancelEvidence) -> Judgement | None:
    """None when the client's cancel is proven to have landed at the line's point; else the ERROR.

    Proven: the run was held at the aimed step (the provider held that call), a cancel watcher was
    waiting and was answered, and the agent reported its cancel from the held call's process group
    before the harness let the held call go, so the run was stopped at the point when the cancel landed.
    """
    aim = ev.aim_problem
    if aim is not None:
        return error(aim, show="clean")
    where = describe_aim(ev)
    start = ev.start
    if ev.held is None:
        return error(f"the run never reached {where}: {_ended('start', start)} with nothing held", show="start")
    if ev.watchers < 1:
        return error(
            f"nothing waited for the cancel at {where}: does the agent call plugpull.client.wait_for_cancel() "
            "beside its stream?",
            show="start",
        )
    if ev.chunks_shown is not None and ev.chunks_shown < ev.chunks_emitted:
        return error(
            f"the consumer had shown {ev.chunks_shown} of the {ev.chunks_emitted} chunks streamed before {where} "
            "when the cancel was ordered (chunk-shown marks)",
            show="start",
        )
    report = ev.cancel
    if report is None and ev.sigkill:
        return error(
            f"the cancel was ordered at {where} but not reported while the run was held there, so start was "
            "SIGKILLed without it (a framework that finishes its running step before it stops cannot be killed "
            "right after its cancel)",
            show="start",
        )
    if report is None:
        return error(
            f"the cancel was ordered at {where} but never landed: {_ended('start', start)} without reporting it "
            "(plugpull.client.record_cancel)",
            show="start",
        )
    if report.get("held_released") and not ev.deferred:
        return error(f"the held call at {where} was let go before the cancel was reported", show="start")
    if ev.sigkill and ev.deferred:
        return error(f"the cancel did not land while the run was held at {where}: nothing to SIGKILL after it")
    if ev.held.get("group") is not None and report.get("group") != ev.held.get("group"):
        return error(
            f"the cancel was reported from process group {report.get('group')}, not the held call's "
            f"{ev.held.get('group')}",
            show="start",
        )
    if ev.sigkill and start is not None and not start.killed_by_sigkill and not start.timed_out:
        return error(f"start was to be SIGKILLed after the cancel but {start.describe_exit()}", show="start")
    return None


def describe_aim(ev: CancelEvidence) -> str:
    """The aimed step in words: "effect refund 1 (before it)", "model-chunk 7 (after 2 of the answer's chunks)"."""
    aim = ev.aim or {}
    if aim.get("kind") == "effect":
        return f"{ev.point} (effect {aim.get('name')} {aim.get('n')}, {aim.get('side')} it)"
    return f"{ev.point} ({aim.get('side')} {aim.get('name')} {aim.get('n')})"


def lost_from(seen: Mapping[str, Any], saved: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the user saw before the cancel that the saved conversation does not hold, in words; [] for nothing.

    ``seen``: ``text`` (the streamed text of each assistant message shown), ``tool_calls`` and
    ``tool_results`` (the tool call ids whose call and whose result were shown). Streamed text is kept
    when a saved assistant message contains it (the user may have seen a prefix of the whole message).
    """
    contents = [str(m.get("content") or "") for m in saved if m.get("role") == "assistant"]
    calls = {c.get("id") for m in saved if m.get("role") == "assistant" for c in (m.get("tool_calls") or [])}
    results = {m.get("tool_call_id") for m in saved if m.get("role") == "tool"}
    texts = [str(t) for t in seen.get("text") or [] if str(t).strip()]
    lost_texts = [t for t in texts if not any(t.strip() in c for c in contents)]
    lost_calls = [i for i in seen.get("tool_calls") or [] if i not in calls]
    lost_results = [i for i in seen.get("tool_results") or [] if i not in results]
    parts = []
    if lost_texts:
        chars = sum(len(t) for t in lost_texts)
        parts.append(f"streamed text of {len(lost_texts)} of {len(texts)} message(s) ({chars} characters)")
    if lost_calls:
        parts.append(f"{len(lost_calls)} of {len(seen.get('tool_calls') or [])} tool call(s)")
    if lost_results:
        parts.append(f"{len(lost_results)} of {len(seen.get('tool_results') or [])} tool result(s)")
    return parts


def describe_seen(seen: Mapping[str, Any]) -> str:
    texts = [str(t) for t in seen.get("text") or [] if str(t).strip()]
    return (
        f"{len(texts)} streamed message(s) ({sum(len(t) for t in texts)} characters), "
        f"{len(seen.get('tool_calls') or [])} tool call(s), {len(seen.get('tool_results') or [])} tool result(s)"
    )


def first_rejected(requests: Sequence[Mapping[str, Any]]) -> str | None:
    """The first model request of the next turn a provider would refuse, and why; None when all are valid."""
    for request in requests:
        problem = request_problem(request.get("messages"))
        if problem is not None:
            return problem
    return None


def judge_cancel_mid_stream(ev: CancelEvidence) -> Judgement:
    """The verdict for one cancel point (see the module's docstring)."""
    unproven = check_clean_cancel_run(ev.clean, ev.timeout) or prove_cancel(ev)
    if unproven is not None:
        return unproven
    start = ev.start
    left = check_outlived("start", start, "the cancelled start")
    if left is not None:
        return left
    problems: list[str] = []
    show = "resume"
    if not ev.sigkill and start is not None and start.timed_out:
        problems.append(f"the cancelled run did not stop: start still ran {ev.timeout:g}s after the cancel (killed)")
        show = "start"
    unfinished = check_recovering("resume", ev.resume)
    if unfinished is not None:
        return unfinished
    resume = ev.resume
    rejected = first_rejected(ev.requests)
    if rejected is not None:
        problems.append(f"next turn rejected: {rejected}")
    if resume.timed_out:
        problems.append(f"thread stuck: the next turn hung (killed after {ev.timeout:g}s)")
    elif resume.returncode != 0 and rejected is None:
        said = last_line(resume.stderr)
        problems.append(
            f"thread stuck: the next turn crashed ({resume.describe_exit()})" + (f": {said}" if said else "")
        )
    counts = {**{name: 0 for name in (ev.clean.counts if ev.clean else {})}, **ev.counts}
    effects = judge_effects(counts)
    if effects.verdict is Verdict.FAIL:
        problems.append(effects.message)
    seen = (ev.cancel or {}).get("seen") or {}
    if ev.conversation is None:
        if resume.returncode == 0:
            return error(
                "the next turn did not report the saved conversation (plugpull.client.record_conversation), "
                "so what the user saw cannot be looked for",
                show="resume",
            )
        lost: list[str] = []
    else:
        lost = lost_from(seen, ev.conversation)
    if lost:
        problems.append("the thread lost what the user saw before the cancel: " + ", ".join(lost))
    if ev.deferred:
        # Not a fault in itself: the line says it, since the run went past the point before it stopped.
        problems_note = "the cancel took effect only once the held step finished"
    else:
        problems_note = ""
    if problems:
        if problems_note:
            problems.append(problems_note)
        if resume.returncode == 0 and not resume.timed_out:
            done = with_completion(Judgement(Verdict.PASS, ""), ev.golden, ev.resumed, ev.result_ignore, "resume")
            if done.verdict is Verdict.FAIL:
                problems.append(done.message)
        return Judgement(Verdict.FAIL, "; ".join(problems), show)
    kept = f"the thread kept what the user saw ({describe_seen(seen)})"
    passed = Judgement(
        Verdict.PASS, "; ".join(filter(None, [effects.message, "next turn accepted", kept, problems_note]))
    )
    return with_completion(passed, ev.golden, ev.resumed, ev.result_ignore, "resume")
