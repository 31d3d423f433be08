"""kill-mid-tool evidence -> verdict: the clean run, the kill proof, effects and the result after resume."""

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
from plugpull.checks.protocol import STATE_OUTSIDE_WORKDIR, usage_refused
from plugpull.evidence import KillEvidence
from plugpull.results import Verdict


def prove_kill(ev: KillEvidence) -> Judgement | None:
    """None when the kill is proven to have landed inside the held call; else the ERROR."""
    point = ev.point if ev.hold is None else f"{ev.point} (no call matched --hold {ev.hold})"
    unproven = prove_held_kill("start", ev.start, ev.proof, bool(ev.calls), point, ev.start_timeout)
    if unproven is not None and not ev.calls and ev.start.returncode == 0 and ev.clean and ev.clean.counts:
        return error(f"{unproven.message}; {STATE_OUTSIDE_WORKDIR}", show="start")
    if unproven is not None:
        withheld = [s for s in ev.saves if s.get("state") == "withheld" and s.get("mark") is not None]
        on_main = [s for s in withheld if s["mark"].get("main_thread")]
        if on_main:
            named = ", ".join(f"{s['name']} {s['n']}" for s in on_main)
            return error(
                f"{unproven.message}; {named} was withheld on the process's main thread, which held up the run "
                "(a save the run waits for cannot be withheld)",
                show="start",
            )
        if withheld:
            # Written on another thread but waited for: LangGraph's durability="sync" runs checkpointer.put on its
            # background executor and the main loop waits for it before the next step (Pregel.stream:
            # `if durability_ == "sync": loop._put_checkpoint_fut.result()`), so withholding it stops the run too.
            named = ", ".join(f"{s['name']} {s['n']}" for s in withheld)
            return error(
                f"{unproven.message}; {named} was withheld on a background thread and the run did not go on without "
                "it (a save the run waits for cannot be withheld)",
                show="start",
            )
    return unproven or prove_sibling(ev) or prove_saves(ev)


def prove_saves(ev: KillEvidence) -> Judgement | None:
    """With --save: None when every asked-for save stood as asked when the kill was sent.

    "withheld": its N-th "before" mark was held by the provider, from the killed group, and still
    open at the kill, so that save had not happened; "landed": its N-th "after" mark had arrived,
    from the killed group, so N such saves had finished. Otherwise the line is not the one asked
    for: ERROR, never PASS or FAIL.
    """
    if not ev.save_specs:
        return None
    held = ev.held_name or "the held call"
    group = ev.proof.group if ev.proof is not None else None
    by_spec = {f"{s['name']}:{s['n']}:{s['state']}": s for s in ev.saves}
    for spec in ev.save_specs:
        save = by_spec.get(spec)
        if save is None:
            return error(f"--save {spec} was not recorded at the kill", show="start")
        name, nth, state, mark = save["name"], save["n"], save["state"], save.get("mark")
        seen = save.get("seen", 0)
        if state == "withheld":
            if mark is None:
                return error(
                    f"{name} {nth} was not withheld at the kill: its save had not begun while {held} was held "
                    f"({seen} '{name}' save(s) begun within {ev.start_timeout:g}s; does the target mark it with "
                    "plugpull.boundary?)",
                    show="start",
                )
            if not save.get("open"):
                return error(f"{name} {nth}'s withheld save was no longer held when the kill was sent", show="start")
        else:
            if mark is None:
                return error(
                    f"{name} {nth} had not landed when the kill was sent ({seen} of {nth} '{name}' save(s) "
                    f"finished within {ev.start_timeout:g}s of {held} being held)",
                    show="start",
                )
        if mark.get("group") != group:
            return error(
                f"{name} {nth}'s mark came from process group {mark.get('group')}, outside the killed group {group}",
                show="start",
            )
    return None


def prove_sibling(ev: KillEvidence) -> Judgement | None:
    """With --sibling: None when the sibling's effect call was in the asked-for state at the kill.

    "finished": the sibling's call was answered before SIGKILL; "running": it was held too, its
    connection still open, from the killed group. Otherwise the line is not the one asked for: ERROR.
    """
    if ev.sibling_spec is None:
        return None
    held = ev.held_name or "the held call"
    sib = ev.sibling
    if sib is None or sib.get("call") is None:
        name = sib["name"] if sib else ev.sibling_spec.split(":")[0]
        return error(
            f"sibling {name} never called record_effect while {held} was held "
            f"(the framework did not run the two tool calls at once within {ev.start_timeout:g}s)",
            show="start",
        )
    call, name, state = sib["call"], sib["name"], sib["state"]
    if not sib.get("ready"):
        doing = "held" if call.get("held_at") else ("answered" if call.get("answered") else "not yet answered")
        return error(
            f"sibling {name} was {doing}, not {state}, when the kill was sent (timed out after {ev.start_timeout:g}s)",
            show="start",
        )
    if ev.proof is not None and call.get("group") != ev.proof.group:
        return error(
            f"sibling {name}'s call came from process group {call.get('group')}, outside the killed group "
            f"{ev.proof.group}",
            show="start",
        )
    if state == "running" and not sib.get("open"):
        return error(f"sibling {name}'s held call was no longer open when the kill was sent", show="start")
    return None


def redone(calls: list[dict]) -> list[str]:
    """Effects other than the held call's that start got answered for and resume made again.

    With parallel tool calls the kill lands in one tool while another's effect is already done;
    a framework that re-runs the whole step repeats that one too, and the count alone would
    blame the held effect.
    """
    done = {
        c["name"]
        for c in calls
        if c.get("phase") == "start" and c.get("answered") and c.get("recorded") and not c.get("held_at")
    }
    again = {c["name"] for c in calls if c.get("phase") == "resume" and c.get("recorded")}
    return [name for name in dict.fromkeys(c["name"] for c in calls) if name in done and name in again]


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
    left = check_outlived("clean", start, "the clean run (no kill)")
    if left is not None:
        return left
    if start.timed_out:
        where = "finish" if clean.calls else "reach the tool"
        return error(f"a clean run (no kill) did not {where} within {ev.start_timeout:g}s (killed)", show="clean")
    refused = usage_refused(start, clean.phase)
    if refused is not None:
        return error(refused.message, show="clean")
    if clean.phase == "approve" and start.returncode == PAUSED_AGAIN_EXIT:
        # An approval agent's clean approval already lost its tool: a FAIL that needs no kill.
        return without_fault(f"a clean approval (no kill): {paused_again('approve', clean.counts)}")
    if start.returncode != 0:
        return error(f"a clean run (no kill) ended ({start.describe_exit()})", show="clean")
    if not clean.counts:
        return error("start exited 0 and the tool never called record_effect (clean run, no kill)", show="clean")
    twice = {n: c for n, c in clean.counts.items() if c != 1}
    if twice:
        listed = ", ".join(f"{c} {n}" for n, c in twice.items())
        return without_fault(
            f"effect duplicated: a clean run (no kill) already recorded {listed} (expected 1): the target asks "
            "for one effect more than once (a retry without a key?)"
        )
    return check_golden(ev.golden, "a clean run (no kill)") or check_finished_resume(clean)


def check_finished_resume(clean) -> Judgement | None:
    """None when ``resume`` on the state a finished clean run left was the documented no-op.

    A wrapper that cannot resume at all (a missing script, the wrong checkpoint file, an unknown
    subcommand) would otherwise crash after every kill and read as the framework's recovery failing.
    Not a no-op: it exited non-zero, hung, left a process behind, reported no result when the clean
    run reported one, or asked for an effect the finished run had not done. Then no kill can be
    judged: every line of the target is this ERROR. But new effects break what every line checks
    (each effect exactly once) with no kill at all: FAIL "without any fault" (``without_fault``).
    A resume that works here and crashes after a kill stays a FAIL: that crash is the recovery's.
    """
    resumed = clean.finished_resume
    if resumed is None:
        return None
    refused = usage_refused(resumed, "resume")
    if refused is not None:
        return error(refused.message, show="clean-resume")
    why = None
    if resumed.spawn_error:
        why = f"it could not start: {resumed.spawn_error}"
    elif resumed.timed_out:
        why = "it hung (killed)"
    elif resumed.returncode != 0:
        why = resumed.describe_exit()
    elif resumed.outlived:
        pids = ", ".join(str(p.get("pid")) for p in resumed.outlived)
        why = f"a process of it outlived it: pid {pids}"
    elif clean.results and not clean.finished_results:
        why = "it exited 0 without a result (start's clean run reported one)"
    elif any(clean.finished_effects.values()):
        made = ", ".join(f"{n} {name}" for name, n in clean.finished_effects.items() if n)
        said = last_line(resumed.stderr)
        return without_fault(
            f"effect duplicated: resume on the finished clean run (no kill) made new effects: {made}"
            + (f": {said}" if said else ""),
            show="clean-resume",
        )
    if why is None:
        return None
    said = last_line(resumed.stderr)
    return error(
        f"resume does not work even on a finished run: {why}" + (f": {said}" if said else ""),
        show="clean-resume",
    )


def judge_kill_mid_tool(ev: KillEvidence) -> Judgement:
    """The verdict for one kill point: effects exactly once, and resume's result equal to the golden one."""
    unproven = check_clean_run(ev) or prove_kill(ev)
    if unproven is not None:
        return unproven
    return judge_resume(ev)


def judge_resume(ev: KillEvidence) -> Judgement:
    """After a proven kill: resume finished, every effect the clean run owed exactly once, the golden result."""
    resume = ev.resume
    unfinished = check_recovering("resume", resume)
    if unfinished is not None:
        return unfinished
    if resume.timed_out:
        return Judgement(Verdict.FAIL, f"resume hung: killed after {ev.resume_timeout:g}s", "resume")
    # Every effect the clean run owed counts, even one that resume never asked for (then 0).
    counts = {**{name: 0 for name in ev.clean.counts}, **ev.counts}
    refused = usage_refused(resume, "resume")
    if refused is not None:
        return refused
    if ev.recovery == "recover" and resume.returncode == PAUSED_AGAIN_EXIT:
        return Judgement(Verdict.FAIL, paused_again("recover", counts), "resume")
    if resume.returncode != 0:
        effects = judge_effects(counts)
        return Judgement(Verdict.FAIL, f"resume crashed ({resume.describe_exit()}); {effects.message}", "resume")
    effects = judge_effects(counts)
    twice = [n for n in redone(ev.calls) if counts.get(n, 0) >= 2]
    if effects.verdict is Verdict.FAIL and twice:
        said = "; ".join(f"{n} was done before the kill and again by resume" for n in twice)
        effects = Judgement(Verdict.FAIL, f"{effects.message}; {said}", effects.show)
    return with_completion(effects, ev.golden, ev.resumed, ev.result_ignore, "resume")
