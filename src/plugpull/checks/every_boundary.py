"""every-boundary evidence -> verdict: a kill at one side of one boundary (or at a random moment), then resume.

The verdict is kill-mid-tool's (checks.kill_mid_tool): the kill proven, then every effect the clean
run owed exactly once and the recovering run's result equal to the golden one. A double crash
proves its second kill the same way and judges the resume after it.
"""

from __future__ import annotations

from dataclasses import replace

from plugpull.checks.judgement import Judgement, check_outlived, error, prove_held_kill
from plugpull.checks.kill_mid_tool import check_clean_run, judge_kill_mid_tool, judge_resume
from plugpull.evidence import BoundaryEvidence
from plugpull.results import Verdict


def prove_boundary_kill(ev: BoundaryEvidence) -> Judgement | None:
    """None when start's SIGKILL is proven to have landed where it was aimed; else the ERROR."""
    if ev.side == "random":
        return prove_random_kill(ev)
    if ev.proof is None and not ev.start.spawn_error and not ev.start.timed_out:
        return error(
            f"start ended ({ev.start.describe_exit()}) without reaching {ev.point} (the clean run reached it): "
            "the run takes another path from run to run",
            show="start",
        )
    return prove_held_kill("start", ev.start, ev.proof, True, ev.point, ev.start_timeout)


def prove_random_kill(ev: BoundaryEvidence) -> Judgement | None:
    """A random kill holds no call: proven when start died of SIGKILL (or had exited first) and nothing outlived it."""
    start = ev.start
    if start.spawn_error:
        return error(f"cannot start the target: {start.spawn_error}", show="start")
    if ev.killed_at is not None and not start.killed_by_sigkill:
        return error(f"start did not die of SIGKILL ({start.describe_exit()})", show="start")
    if ev.proof is not None and ev.proof.survivors:
        return error(f"processes {ev.proof.survivors} of the killed group were still alive after SIGKILL", show="start")
    if ev.killed_at is None and start.returncode != 0:
        return error(f"start ended ({start.describe_exit()}) before the random kill", show="start")
    return check_outlived("start", start, "the kill")


def judge_every_boundary(ev: BoundaryEvidence) -> Judgement:
    """The verdict for one every-boundary line."""
    unproven = check_clean_run(ev) or prove_boundary_kill(ev)
    if unproven is not None:
        return unproven
    if ev.side == "random":
        # The kill is proven above; kill-mid-tool's judgement would ask for a held call.
        return judge_resume(ev)
    if not ev.twice:
        return judge_kill_mid_tool(ev)
    if ev.second_proof is None:
        if ev.resume is not None and ev.resume.timed_out:
            return Judgement(Verdict.FAIL, f"resume hung: killed after {ev.resume_timeout:g}s", "resume")
        single = judge_kill_mid_tool(ev)
        step = ev.point.split(" ", 1)[1].rsplit(" ", 1)[0]
        return replace(single, message=f"{single.message} (resume passed no {step} boundary: no second kill)")
    second = prove_held_kill("resume", ev.resume, ev.second_proof, True, ev.point, ev.resume_timeout)
    if second is not None:
        return second
    final = judge_kill_mid_tool(replace(ev, resume=ev.final, resumed=ev.final_results))
    if final.verdict is Verdict.ERROR:
        return final
    return replace(
        final, message=f"after two kills: {final.message}", show="final" if final.show == "resume" else final.show
    )
