"""resume-after-upgrade: start (and SIGKILL) a run on release A, resume it on release B, same workdir.

A target here is two commands, one per environment: ``argv`` (A) runs ``start``, ``resume_argv`` (B)
runs ``resume``. For one kill point: run each command's ``start`` once without a fault (A's proves A
runs the target and names the effects a run owes; B's is the golden result, since the run finishes on
B); then kill-mid-tool's held-call kill of A's ``start`` (scenarios.held_kill, proven the same way)
and B's ``resume`` in the same $PLUGPULL_WORKDIR, counting effects. Gathers evidence only; the
verdict is checks.judge_resume_after_upgrade's.
"""

from __future__ import annotations

import time
from dataclasses import replace

from plugpull import checks
from plugpull.evidence import Outcome, UpgradeEvidence
from plugpull.results import Result, Verdict
from plugpull.scenarios import Settings, kill_mid_tool, make_result, result_ignore
from plugpull.scenarios.kill_mid_tool import clean_run
from plugpull.targets import Target

NAME = "resume-after-upgrade"
POINTS = ("before-effect", "after-effect")

__all__ = ["NAME", "POINTS", "run", "run_point"]


def run(target: Target, points: list[str], settings: Settings) -> list[Result]:
    return [run_point(target, point, settings) for point in points]


def _version(announced: list[dict]) -> str | None:
    return next((a.get("version") for a in announced if a.get("version")), None)


def run_point(target: Target, point: str, settings: Settings | None = None) -> Result:
    """Run resume-after-upgrade at ``point`` against ``target`` (two commands) and judge it."""
    if point not in POINTS:
        raise ValueError(f"unknown point {point!r}; known: {', '.join(POINTS)}")
    if not target.resume_argv:
        raise ValueError("resume-after-upgrade needs a target with two commands (resume_argv for release B)")
    settings = settings or Settings()
    began = time.monotonic()
    ev = UpgradeEvidence(
        point=point,
        start=Outcome(argv=[]),
        start_timeout=settings.timeout,
        resume_timeout=settings.timeout,
        hold=None if settings.hold is None else "{}:{}".format(*settings.hold),
        save_specs=["{}:{}:{}".format(*save) for save in settings.saves],
    )
    ev.clean = clean_run(target, settings)
    ev.clean_resume = clean_run(replace(target, argv=target.resume_argv), settings)
    ev.golden = list(ev.clean_resume.results)
    announced_a, announced_b = list(ev.clean.announced), list(ev.clean_resume.announced)
    ev.from_version, ev.to_version = _version(announced_a), _version(announced_b)
    ev.framework = target.framework or next((a.get("framework") for a in announced_b if a.get("framework")), None)
    ev.result_ignore = result_ignore(target, announced_a + announced_b)
    kept = None
    if checks.check_releases(ev) is None:
        kept = run_faulted(target, point, settings, ev)
    judgement = checks.judge_resume_after_upgrade(ev)
    phase = judgement.show or ("resume" if judgement.verdict is Verdict.FAIL else "")
    shown = {"clean": ev.clean.start, "clean_resume": ev.clean_resume.start, "start": ev.start, "resume": ev.resume}
    result = make_result(NAME, target, point, ev.to_dict(), judgement, announced_b, began, shown.get(phase), kept)
    # The line names both releases; ``version`` is the one the run finished on (B), the evidence has both.
    result.version = ev.to_version
    result.framework = ev.framework
    if target.framework is not None:
        result.target = target.label(f"{ev.from_version or '?'} -> {ev.to_version or '?'}")
    return result


def run_faulted(target: Target, point: str, settings: Settings, ev: UpgradeEvidence):
    """A's start armed at ``point`` and killed; B's resume in the same workdir if the kill is proven."""
    return kill_mid_tool.run_faulted(target, point, settings, ev, resume_argv=target.resume_argv)[1]
