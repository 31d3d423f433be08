"""lost-session-write: the Session store loses one write, or its acknowledgement, mid-run.

The store is a database on another machine (store.py): it keeps exactly what it is given
and numbers every write. The scenario reproduces openai/openai-agents-python#4775, "RunState
pending input can be duplicated when a Session append loses acknowledgement":

1. probe: ``COMMAND start`` with every store call answered, to learn which writes carry the
   input the app staged (the app announces the staged input's token);
2. for each such write N and each point: ``COMMAND start`` with write N dropped at the point
   (``write-lost``: not kept; ``ack-lost``: kept; the call fails either way), then
   ``COMMAND resume`` with the store answering normally, and count what the store holds.

No process is killed: start is expected to see the failed call, save its state and exit
non-zero. Gathers evidence only; the verdicts are checks.prove_probe's and
checks.judge_lost_session_write's.
"""

from __future__ import annotations

import time
from dataclasses import replace

from plugpull import checks
from plugpull.channel import Channel
from plugpull.evidence import Outcome, StoreEvidence, StoreProbe
from plugpull.results import Result
from plugpull.scenarios import Runtime, Settings, make_result, settle, steps, target_env, workdir
from plugpull.scenarios.contract import Scenario
from plugpull.scenarios.faults import LostStoreWrite
from plugpull.store import POINTS, Store, renamed, run_names
from plugpull.targets import Target

NAME = "lost-session-write"

__all__ = ["NAME", "POINTS", "SCENARIO", "LostSessionWrite", "Settings", "run", "run_point", "run_probe"]


def run_phase(
    target: Target, channel: Channel, phase: str, env: dict[str, str], settings: Settings, runtime: Runtime
) -> Outcome:
    """Run ``COMMAND phase`` to its end (no kill; past the timeout its group is SIGKILLed)."""
    channel.phase = phase
    running = runtime.spawn([*target.argv, phase], env=env, cwd=settings.cwd)
    return running if isinstance(running, Outcome) else running.wait(settings.timeout)


def token_of(channel: Channel, phase: str = "start") -> str | None:
    """The staged input's token that ``phase`` announced (the last one, if it announced several)."""
    tokens = [a["staged_input"] for a in channel.announced if a.get("phase") == phase and a.get("staged_input")]
    return str(tokens[-1]) if tokens else None


def named_counts(channel: Channel, store: Store, token: str | None) -> dict[str, int]:
    """The store's counts by identity, with the run's announced tokens and ids named (store.run_names)."""
    values = [str(a["run_value"]) for a in channel.announced if a.get("run_value")]
    return renamed(store.counts(), run_names([w.to_dict() for w in store.writes], token, values))


def run_probe(
    target: Target, settings: Settings | None = None, runtime: Runtime | None = None
) -> tuple[StoreProbe, list[dict]]:
    """Run start once with every write answered; returns the probe and what the agent announced."""
    settings = settings or Settings()
    runtime = runtime or Runtime()
    store = Store()
    with workdir(replace(settings, keep_workdir=False)) as path, Channel(store=store) as channel:
        start = run_phase(target, channel, "start", target_env(channel, path), settings, runtime)
        token = token_of(channel)
        announced = list(channel.announced)
        session = {k: c for k, c in named_counts(channel, store, token).items() if c}
    probe = StoreProbe(
        session=session,
        start=start,
        token=token,
        carrying=store.writes_carrying(token) if token else [],
        writes=[w.to_dict() for w in store.writes],
        start_timeout=settings.timeout,
    )
    return probe, announced


def run_point(
    target: Target,
    write: int,
    point: str,
    probe: StoreProbe,
    settings: Settings | None = None,
    runtime: Runtime | None = None,
) -> Result:
    """Fault write ``write`` at ``point`` during start, resume, and judge it."""
    if point not in POINTS:
        raise ValueError(f"unknown point {point!r}; known: {', '.join(POINTS)}")
    settings = settings or Settings()
    runtime = runtime or Runtime()
    began = time.monotonic()
    fault = LostStoreWrite(write, point)
    store = fault.store()
    ev = StoreEvidence(
        write=write,
        point=point,
        start=Outcome(argv=[]),
        probe_carrying=list(probe.carrying),
        golden=dict(probe.session),
        start_timeout=settings.timeout,
        resume_timeout=settings.timeout,
    )
    with workdir(settings) as path, Channel(store=store) as channel:
        env = target_env(channel, path)
        ev.start = run_phase(target, channel, "start", env, settings, runtime)
        ev.token = token_of(channel)
        ev.writes = [w.to_dict() for w in store.writes]
        ev.carrying = store.writes_carrying(ev.token) if ev.token else []
        if fault.proven(ev) is None:
            ev.resume = run_phase(target, channel, "resume", env, settings, runtime)
        ev.writes = [w.to_dict() for w in store.writes]
        ev.carrying = store.writes_carrying(ev.token) if ev.token else []
        ev.staged_stored = store.occurrences(ev.token) if ev.token else 0
        ev.counts = store.counts()
        ev.session = named_counts(channel, store, ev.token)
        announced = channel.announced
    judgement = checks.judge_lost_session_write(ev)
    kept = path if settings.keep_workdir else None
    return make_result(
        NAME, target, point, ev.to_dict(), judgement, announced, began, steps.shown_outcome(judgement, ev), kept
    )


def run(
    target: Target, points: list[str], settings: Settings | None = None, runtime: Runtime | None = None
) -> list[Result]:
    """The probe, then one result per (write carrying the staged input, point).

    The probe is run once per target and settings (suite.run_plan calls this once per
    point and repeat); every line's evidence names the same probe.
    """
    settings = settings or Settings()
    runtime = runtime or Runtime()
    points = points or list(POINTS)
    began = time.monotonic()
    key = ("probe", target.argv, settings.cwd, settings.timeout)
    probe, announced = runtime.once(key, lambda: run_probe(target, settings, runtime))
    # A probe that already duplicates is one FAIL per target; each other point's probe line is moot.
    unproven = checks.prove_probe(probe)
    if unproven is not None:
        unproven = settle(unproven, runtime, (NAME, *key), points[0], line="probe", target=target)
        shown = probe.start if unproven.show == "start" else None
        return [make_result(NAME, target, "probe", probe.to_dict(), unproven, announced, began, shown, None)]
    return [run_point(target, n, point, probe, settings, runtime) for n in probe.carrying for point in points]


class LostSessionWrite(Scenario):
    name = NAME
    points = POINTS
    fault = "the Session store loses one write carrying the staged input, or its acknowledgement; nothing is killed"
    faults = (LostStoreWrite,)
    evidence = StoreEvidence
    # The probe's proof (a line named "probe" when it fails), then each write's verdict.
    checks = (checks.prove_probe, checks.judge_lost_session_write)

    def run(self, target: Target, point: str, settings: Settings, runtime: Runtime) -> list[Result]:
        return run(target, [point], settings, runtime)


SCENARIO = LostSessionWrite()
