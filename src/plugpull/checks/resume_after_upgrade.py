"""resume-after-upgrade evidence -> verdict: kill-mid-tool's, across two releases, plus "refused the saved run".

A run started (and killed) on release A is resumed on release B from the same workdir. Both releases
must first run the target cleanly on their own: a release that cannot import or run the target is
ERROR (nothing is learnt about the upgrade), never FAIL. Then the kill is proven exactly as in
kill-mid-tool, and the resume is judged as kill-mid-tool judges it, against B's clean result, with
one more FAIL: B refused what A saved (it exited non-zero before asking for any effect), so the run
is stuck on the upgrade; the framework's own message is quoted.
"""

from __future__ import annotations

from dataclasses import replace

from plugpull.checks.judgement import Judgement, check_recovering, error, judge_effects, last_line
from plugpull.checks.kill_mid_tool import check_clean_run, judge_kill_mid_tool, prove_kill
from plugpull.checks.protocol import usage_refused
from plugpull.evidence import UpgradeEvidence
from plugpull.results import Verdict

REFUSED = "refused the saved run"


def releases(ev: UpgradeEvidence) -> str:
    """``agent-framework-core 1.19.0 -> 1.20.0`` (``?`` for a release that announced nothing)."""
    head = f"{ev.framework} " if ev.framework else ""
    return f"{head}{ev.from_version or '?'} -> {ev.to_version or '?'}"


def check_releases(ev: UpgradeEvidence) -> Judgement | None:
    """None when release A and release B each ran the target cleanly and owe the same effects; else the ERROR."""
    started = check_clean_run(replace(ev, golden=list(ev.clean.results) if ev.clean else []))
    if started is not None:
        return replace(started, message=f"on the start release (A): {started.message}")
    if ev.clean_resume is None:
        return error("the clean run on the resume release (B) was not run", show="")
    on_b = check_clean_run(replace(ev, clean=ev.clean_resume, golden=list(ev.clean_resume.results)))
    if on_b is not None:
        # B's clean run is the only place a broken B environment shows before the resume: its output
        # goes under the line, as the clean run's.
        return replace(on_b, message=f"on the resume release (B): {on_b.message}", show="clean-on-b")
    owed_a, owed_b = sorted(ev.clean.counts), sorted(ev.clean_resume.counts)
    if owed_a != owed_b:
        return error(
            f"the two releases' clean runs owe different effects (A: {', '.join(owed_a)}; B: {', '.join(owed_b)}): "
            "counts after the upgrade would prove nothing",
            show="",
        )
    return None


def refused(ev: UpgradeEvidence) -> Judgement | None:
    """FAIL when B refused the run A saved: resume ran, left nothing behind, exited non-zero (not a usage
    error) without asking for a single effect, while B's own clean run finished. None otherwise."""
    resume = ev.resume
    if resume is None or check_recovering("resume", resume) is not None or resume.timed_out:
        return None
    if resume.returncode in (0, None) or usage_refused(resume, "resume") is not None:
        return None
    if any(c.get("phase") == "resume" for c in ev.calls):
        return None  # it went on and crashed later: kill-mid-tool's "resume crashed"
    counts = {**{name: 0 for name in ev.clean.counts}, **ev.counts} if ev.clean else dict(ev.counts)
    said = last_line(resume.stderr) or last_line(resume.stdout) or "(no message)"
    return Judgement(
        Verdict.FAIL,
        f"{REFUSED}: {ev.to_version or 'B'} would not resume what {ev.from_version or 'A'} saved "
        f"({resume.describe_exit()}): {said}; stuck: {judge_effects(counts).message}",
        "resume",
    )


def judge_resume_after_upgrade(ev: UpgradeEvidence) -> Judgement:
    """The verdict for one kill point across an upgrade: both releases run cleanly, the kill on A is
    proven, then B's resume refuses (FAIL), or is judged as kill-mid-tool's against B's golden result."""
    problem = check_releases(ev) or prove_kill(ev)
    if problem is not None:
        return problem
    return refused(ev) or judge_kill_mid_tool(ev)
