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
from plugpull.errors import UsageError
from plugpull.evidence import UpgradeEvidence
from plugpull.results import Result
from plugpull.scenarios import Runtime, Settings, kill_mid_tool, make_result, result_ignore, settle, steps
from plugpull.scenarios.contract import Scenario
from plugpull.scenarios.faults import HeldCallKill
from plugpull.scenarios.kill_mid_tool import clean_run
from plugpull.targets import Target, upgrade_agent

NAME = "resume-after-upgrade"
POINTS = ("before-effect", "after-effect")

__all__ = ["NAME", "POINTS", "SCENARIO", "ResumeAfterUpgrade", "run_point"]

USAGE = f'--scenario {NAME} takes exactly two commands: --agent "CMD_A" --agent "CMD_B" (A starts, B resumes)'


def _version(announced: list[dict]) -> str | None:
    return next((a.get("version") for a in announced if a.get("version")), None)


def run_point(target: Target, point: str, settings: Settings | None = None, runtime: Runtime | None = None) -> Result:
    """Run resume-after-upgrade at ``point`` against ``target`` (two commands) and judge it."""
    if point not in POINTS:
        raise ValueError(f"unknown point {point!r}; known: {', '.join(POINTS)}")
    if not target.resume_argv:
        raise ValueError("resume-after-upgrade needs a target with two commands (resume_argv for release B)")
    settings = settings or Settings()
    runtime = runtime or Runtime()
    began = time.monotonic()
    # The sibling is kill-mid-tool's: an upgrade line holds one call, and its saves.
    ev = UpgradeEvidence(
        **steps.killed_line(point, settings), **steps.held_specs(settings.aimed(sibling=None), UpgradeEvidence)
    )
    ev.clean = clean_run(target, settings, runtime)
    ev.clean_resume = clean_run(replace(target, argv=target.resume_argv), settings, runtime)
    ev.golden = list(ev.clean_resume.results)
    announced_a, announced_b = list(ev.clean.announced), list(ev.clean_resume.announced)
    ev.from_version, ev.to_version = _version(announced_a), _version(announced_b)
    ev.framework = target.framework or next((a.get("framework") for a in announced_b if a.get("framework")), None)
    ev.result_ignore = result_ignore(target, announced_a + announced_b)
    kept = None
    if checks.check_releases(ev) is None:
        kept = run_faulted(target, point, settings, runtime, ev)
    judgement = checks.judge_resume_after_upgrade(ev)
    judgement = settle(
        judgement,
        runtime,
        (NAME, target.argv, target.resume_argv, settings.cwd, settings.timeout),
        point,
        target=target,
    )
    # "clean-on-b": the clean run on the resume release (B), a phase of this scenario's own.
    shown = steps.shown_outcome(judgement, ev, more={"clean-on-b": ev.clean_resume.start})
    result = make_result(NAME, target, point, ev.to_dict(), judgement, announced_b, began, shown, kept)
    # The line names both releases; ``version`` is the one the run finished on (B), the evidence has both.
    result.version = ev.to_version
    result.framework = ev.framework
    if target.framework is not None:
        result.target = target.label(f"{ev.from_version or '?'} -> {ev.to_version or '?'}")
    return result


def run_faulted(target: Target, point: str, settings: Settings, runtime: Runtime, ev: UpgradeEvidence):
    """A's start armed at ``point`` and killed; B's resume in the same workdir if the kill is proven."""
    return kill_mid_tool.run_faulted(target, point, settings, runtime, ev, resume_argv=target.resume_argv)[1]


class ResumeAfterUpgrade(Scenario):
    name = NAME
    points = POINTS
    phases = ("start", "resume")  # start on release A's command, resume on release B's
    fault = "SIGKILL of release A's start while the provider holds an effect call; release B resumes the same workdir"
    faults = (HeldCallKill,)  # of release A's start, as kill-mid-tool's
    agent_usage = (
        "give it exactly twice, one command per environment: the first starts (release A), the second resumes "
        "(release B)"
    )
    # Built-in upgrade targets need two environments built from pin sets: plugpull report runs them.
    default_targets = ()
    # No call summary under a FAIL line (none before this contract either).
    evidence = UpgradeEvidence
    checks = (checks.judge_resume_after_upgrade,)

    # A finding run on an upgrade pair (a pin set with ``from = ...``) is given release A's interpreter as
    # ``from_python``: its targets are the frameworks' upgrade variants, started there and resumed in the kernel (B).
    finding_parameter = "from_python"

    line = staticmethod(run_point)

    def finding_targets(self, names, options, parameters) -> tuple[list[Target], list[str]]:
        """The built-in upgrade targets (targets.UPGRADES) of each framework this kernel (B) can import, each starting
        under ``from_python`` (A); one line per name saying what runs or why not. ``options`` keeps the variants whose
        options take one of the listed values; an option applies to the targets that carry it (``variant`` to
        agent-framework only)."""
        import importlib.util
        import sys

        from plugpull.targets import UPGRADES, upgrade_targets

        unknown = [n for n in names if n not in UPGRADES]
        if unknown:
            raise ValueError(f"no built-in {NAME} target {unknown[0]!r}; known: {', '.join(UPGRADES)}")
        from_python = parameters["from_python"]
        chosen: list[Target] = []
        said: list[str] = []
        for name in names:
            module = UPGRADES[name].module
            if importlib.util.find_spec(module) is None:
                said.append(f"{name}: skipped, {module} is not installed in this environment")
                continue
            mine = [
                t
                for t in upgrade_targets(name, from_python)
                if all(str(t.options.get(k)) in {str(v) for v in vals} for k, vals in options.items() if k in t.options)
            ]
            chosen += mine
            said.append(f"{name}: {len(mine)} variant(s), start under {from_python}, resume here ({sys.executable})")
        if not chosen:
            raise RuntimeError(
                f"none of {', '.join(names)} can run here: this environment has none of their frameworks"
            )
        return chosen, said

    def adopt(self, target: Target, source: Scenario | None) -> Target | None:
        raise UsageError(f"{USAGE}, not --target; built-in targets: plugpull report --finding {NAME}")

    def agents(self, commands) -> list[Target]:
        """The user's two commands, one per environment: the first starts (release A), the second resumes (B)."""
        if len(commands) != 2:
            raise UsageError(f"{USAGE}; got {len(commands)}")
        try:
            return [upgrade_agent(*commands)]
        except ValueError as exc:
            raise UsageError(str(exc)) from None


SCENARIO = ResumeAfterUpgrade()
