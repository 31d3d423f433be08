"""tool-error's checks: a tool whose outside call raised (before or after its effect), and what the run made of it.

Two things must hold after the framework's own handling (its retry policy, or the model told of the failure, and
its resume where the run stopped):

- the effects: each owed effect done exactly once, or not at all when the run says it was not done;
- the history tells the truth: what the run's final result claims of each effect (``record_result`` with
  ``{"claims": {NAME: "done" | "failed"}}``, docs/agent-protocol.md) agrees with the provider. A run that says a
  refund was done while the provider saw none is FAIL, and so is one that says it failed while the provider saw it
  done (its user would retry a done refund).

Pure functions on :class:`~plugpull.evidence.ToolErrorEvidence`: no process, no socket, no clock.
"""

from __future__ import annotations

from typing import Any

from plugpull.checks.completion import with_completion
from plugpull.checks.judgement import Judgement, check_recovering, error, judge_effects
from plugpull.checks.kill_mid_tool import check_clean_run
from plugpull.evidence import ToolErrorEvidence
from plugpull.results import Verdict

#: What a result may claim of an effect: done, failed, or dropped (the history holds its call and no response).
CLAIMS = ("done", "failed", "dropped")


def claims_of(results: list[Any]) -> dict[str, str] | None:
    """What the run's last result claims of each effect (``{"claims": {NAME: "done"|"failed"}}``); None: it says
    nothing (no result, or a result without claims)."""
    if not results or not isinstance(results[-1], dict):
        return None
    claims = results[-1].get("claims")
    if not isinstance(claims, dict):
        return None
    return {str(name): str(said) for name, said in claims.items()}


def prove_fault(ev: ToolErrorEvidence) -> Judgement | None:
    """None when the held call was answered with the fault, so the tool saw its call raise; else the ERROR."""
    if ev.point == "parallel-one-raised" and ev.sibling_spec is None:
        return error(
            "parallel-one-raised needs two tool calls in one model turn: a target with a sibling call, or --hold NAME "
            "--sibling OTHER:finished",
            show="",
        )
    if ev.start is None:
        return error("start was not run", show="")
    if ev.held is None:
        return error(f"start ended ({ev.start.describe_exit()}) but no effect call was held at {ev.side}", show="start")
    if ev.sibling_spec is not None and not (ev.sibling or {}).get("answered"):
        sibling = ev.sibling_spec.split(":")[0]
        return error(f"{ev.held['name']} was held but {sibling}, its sibling call, was never answered", show="start")
    if ev.fault == "hang":
        if ev.hung_for is None or not ev.held.get("answered"):
            return error(
                f"{ev.held['name']} was held but never answered late (start ended: {ev.start.describe_exit()})"
            )
        return None
    if not ev.held.get("faulted"):
        return error(
            f"{ev.held['name']} was held but its caller never got the fault (start ended: {ev.start.describe_exit()})",
            show="start",
        )
    if ev.sigkill:
        return prove_kill_after_raise(ev)
    return None


def prove_kill_after_raise(ev: ToolErrorEvidence) -> Judgement | None:
    """A -then-sigkill point: the caller said it raises, then start died of the SIGKILL and nothing of it is left."""
    name = ev.held["name"]
    if not ev.raised:
        return error(
            f"{name} was answered with the fault but its caller never said it raises (the client's 'raised' "
            f"request; an older client?): the kill could not be aimed after the raise (start ended: "
            f"{ev.start.describe_exit()})",
            show="start",
        )
    if not ev.start.killed_by_sigkill:
        return error(
            f"start ended ({ev.start.describe_exit()}) before the SIGKILL after {name} raised could land",
            show="start",
        )
    if ev.survivors:
        return error(f"processes of start's group outlived the SIGKILL: {ev.survivors}", show="start")
    return None


def judge_tool_error(ev: ToolErrorEvidence) -> Judgement:
    """The verdict of one tool-error line: the fault proven, the run ended, the effects and the claims agree."""
    unproven = check_clean_run(ev) or prove_fault(ev)
    if unproven is not None:
        return unproven
    name = ev.held["name"]
    raised = f"{name} raised {ev.fault} {'before' if ev.side == 'before-effect' else 'after'} its effect"
    if ev.fault == "hang":
        raised = f"{name}'s call hung after its effect (answered {ev.hung_for:g}s late, at {ev.hung_until})"
    if ev.sibling_spec is not None:
        raised += f" while {ev.sibling_spec.split(':')[0]}, in the same turn, was answered"
    if ev.sigkill:
        raised += " and start was SIGKILLed as it raised"
    start = ev.start
    if start.timed_out:
        return Judgement(Verdict.FAIL, f"start hung after {raised}: killed after {ev.start_timeout:g}s", "start")
    phase, failed = "start", False
    if start.returncode != 0:  # the error stopped the run: the framework's resume goes on from its saved state
        unfinished = check_recovering("resume", ev.resume)
        if unfinished is not None:
            return unfinished
        phase = "resume"
        if ev.resume.returncode != 0:
            if ev.message and ev.message not in ev.resume.stderr:
                effects = judge_effects(counts_owed(ev))
                return Judgement(
                    Verdict.FAIL,
                    f"after {raised}, resume crashed ({ev.resume.describe_exit()}); {effects.message}",
                    phase,
                )
            # The run ended in the tool's own error, start and resume alike (a durable workflow keeps its failure as
            # its outcome): it says the call failed, as a result claiming so would.
            failed = True
    counts = counts_owed(ev)
    claims = {name: "failed"} if failed else claims_of(ev.finished)
    bad = [f"{n}: {s!r}" for n, s in (claims or {}).items() if s not in CLAIMS]
    if bad:
        return error(f"the result's claims must each be 'done', 'failed' or 'dropped': {', '.join(bad)}", show=phase)
    dup = {n: c for n, c in counts.items() if c >= 2}
    if dup:
        effects = judge_effects(counts)
        again = (
            f"; {name} was done before the fault and {again_by(ev)}"
            if dup.get(name) and ev.side != "before-effect"
            else ""
        )
        return Judgement(Verdict.FAIL, f"after {raised}: {effects.message}{again}", phase)
    dropped = [n for n, said in (claims or {}).items() if said == "dropped"]
    if dropped:
        done = ", ".join(f"{counts.get(n, 0)} {n}" for n in dropped)
        return Judgement(
            Verdict.FAIL,
            f"after {raised}: the run ended with {', '.join(dropped)}'s call unanswered in its history (dropped: "
            f"neither retried nor reported failed); the provider saw {done}",
            phase,
        )
    untrue = []
    for effect, count in counts.items():
        said = (claims or {}).get(effect)
        if count == 0 and said == "done":
            untrue.append(f"the history claims {effect} succeeded; the provider saw none")
        elif count == 1 and said == "failed":
            says = f"the run ended in {effect}'s error" if failed else f"the history says {effect} failed"
            untrue.append(f"{says}; the provider saw it done (its user would retry a done {effect})")
    if untrue:
        return Judgement(Verdict.FAIL, f"after {raised}: " + "; ".join(untrue), phase)
    lost = [n for n, c in counts.items() if c == 0]
    if lost:
        if claims is None or any(n not in claims for n in lost):
            return error(
                f"after {raised}, the provider saw 0 {', 0 '.join(lost)} and the result does not say whether the run "
                "claims it done (record_result({'claims': {NAME: 'done' | 'failed'}}), docs/agent-protocol.md)",
                show=phase,
            )
        done = [n for n, c in counts.items() if c == 1]
        also = f"; exactly 1 {', 1 '.join(done)}" if done else ""
        says = "the run ended in the tool's error" if failed else "the run says it failed"
        return Judgement(Verdict.PASS, f"after {raised}: {', '.join(lost)} not done, and {says}{also}", phase)
    effects = judge_effects(counts)
    again = again_by(ev)
    how = f"{name} not called again" if again == "not again" else f"{name} called {again}"
    judged = with_completion(effects, ev.golden, ev.finished, ev.result_ignore, phase)
    if judged.verdict is Verdict.PASS:
        return Judgement(Verdict.PASS, f"after {raised} ({how}): {judged.message}", judged.show)
    return Judgement(judged.verdict, f"after {raised}: {judged.message}", judged.show)


def again_by(ev: ToolErrorEvidence) -> str:
    """Who called the held effect again after the fault: "again by start" (a retry in the run), "again by resume",
    or "not again"."""
    name, seq = ev.held["name"], ev.held.get("seq", 0)
    phases = [
        c["phase"] for c in ev.calls if c.get("name") == name and c.get("kind", "effect") == "effect" and c["seq"] > seq
    ]
    return "again by " + " and ".join(dict.fromkeys(phases)) if phases else "not again"


def counts_owed(ev: ToolErrorEvidence) -> dict[str, int]:
    """Every effect the clean run owed, 0 for one never done, and any other the run asked for."""
    return {**{n: 0 for n in (ev.clean.counts if ev.clean else {})}, **ev.counts}
