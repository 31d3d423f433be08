"""The steps a scenario's line is made of, shared so that no scenario copies another's: start a phase, wait for its
end, count the effects, spell the aim in the evidence, pick the outcome shown under the line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugpull.scenarios import Runtime, Settings


def spawn_phase(
    runtime: Runtime, argv: list[str], phase: str, channel: Any, env: dict[str, str], settings: Settings, into: list
) -> Any:
    """Start ``argv`` as ``phase`` (what the channel files its calls under), kept in ``into`` for reaping."""
    channel.phase = phase
    running = runtime.spawn(argv, env=env, cwd=settings.cwd)
    into.append(running)
    return running


def finished(running: Any, settings: Settings) -> Any:
    """How a started phase ended: its Outcome (past the timeout its group is SIGKILLed)."""
    from plugpull.evidence import Outcome

    return running if isinstance(running, Outcome) else running.wait(settings.timeout)


def run_to_end(
    runtime: Runtime, argv: list[str], phase: str, channel: Any, env: dict[str, str], settings: Settings, into: list
) -> Any:
    """Start ``argv`` as ``phase`` and wait for its end: a recovering phase, nothing held."""
    return finished(spawn_phase(runtime, argv, phase, channel, env, settings, into), settings)


def count_effects(ev: Any, channel: Any) -> None:
    """The provider's counts and calls onto ``ev``: every effect the clean run owed is counted, 0 for one nobody
    asked for after the fault (agent-framework#8292: customer B is never charged), so the evidence shows what the
    verdict reads."""
    ev.counts = {**{name: 0 for name in ev.clean.counts}, **channel.provider.counts()}
    ev.calls = [c.to_dict() for c in channel.provider.calls]


def killed_line(point: str, settings: Settings) -> dict[str, Any]:
    """The evidence fields every line with a start and a resume phase opens with: its point, a start not run yet, and
    the phases' timeouts."""
    from plugpull.evidence import Outcome

    return {
        "point": point,
        "start": Outcome(argv=[]),
        "start_timeout": settings.timeout,
        "resume_timeout": settings.timeout,
    }


def held_specs(settings: Settings, evidence: type) -> dict[str, Any]:
    """The held call, sibling and saves a line was aimed with, as its evidence spells them (``refund:1``): those of
    them ``evidence`` (a dataclass) has fields for."""
    import dataclasses

    specs = settings.aim.specs()
    has = {f.name for f in dataclasses.fields(evidence)}
    return {name: value for name, value in specs.items() if name in has}


def shown_outcome(judgement: Any, ev: Any, fail_phase: str = "resume", more: dict | None = None) -> Any:
    """The phase's outcome shown under a line: the one its judgement names (``show``), else under a FAIL
    ``fail_phase``'s, the agent's own account of what it did; None for no phase. The phases every scenario names
    are clean (the clean run's start), clean-resume (the clean run's finishing resume), start and resume; ``more``
    adds a scenario's own (every-boundary's final)."""
    from plugpull.results import Verdict

    phase = judgement.show or (fail_phase if judgement.verdict is Verdict.FAIL else "")
    clean = getattr(ev, "clean", None)
    outcomes = {
        "clean": getattr(clean, "start", None),
        "clean-resume": getattr(clean, "finished_resume", None),
        "start": getattr(ev, "start", None),
        "resume": getattr(ev, "resume", None),
        **(more or {}),
    }
    return outcomes.get(phase)
