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

import shutil
import tempfile
import time
from pathlib import Path

from plugpull import checks
from plugpull.channel import Channel
from plugpull.evidence import StoreEvidence, StoreProbe
from plugpull.process import Outcome, spawn
from plugpull.results import Result
from plugpull.scenarios import Settings
from plugpull.scenarios.kill_mid_tool import target_env
from plugpull.store import POINTS, Store
from plugpull.targets import Target

NAME = "lost-session-write"

__all__ = ["NAME", "POINTS", "Settings", "run", "run_probe", "run_point"]


def run_phase(target: Target, channel: Channel, phase: str, env: dict[str, str], logs: Path, settings: Settings) -> Outcome:
    """Run ``COMMAND phase`` to its end (no kill; past the timeout its group is SIGKILLed)."""
    channel.phase = phase
    running = spawn([*target.argv, phase], env=env, cwd=settings.cwd, log_dir=logs, name=phase)
    return running if isinstance(running, Outcome) else running.wait(settings.timeout)


def token_of(channel: Channel, phase: str = "start") -> str | None:
    """The staged input's token that ``phase`` announced (the last one, if it announced several)."""
    tokens = [a["staged_input"] for a in channel.announced if a.get("phase") == phase and a.get("staged_input")]
    return str(tokens[-1]) if tokens else None


def run_probe(target: Target, settings: Settings | None = None) -> tuple[StoreProbe, list[dict]]:
    """Run start once with every write answered; returns the probe and what the agent announced."""
    settings = settings or Settings()
    workdir = Path(tempfile.mkdtemp(prefix="plugpull-work-"))
    logs = Path(tempfile.mkdtemp(prefix="plugpull-logs-"))
    store = Store()
    try:
        with Channel(store=store) as channel:
            start = run_phase(target, channel, "start", target_env(channel, workdir), logs, settings)
            token = token_of(channel)
            announced = list(channel.announced)
    finally:
        shutil.rmtree(logs, ignore_errors=True)
        shutil.rmtree(workdir, ignore_errors=True)
    probe = StoreProbe(
        start=start,
        token=token,
        carrying=store.writes_carrying(token) if token else [],
        writes=[w.to_dict() for w in store.writes],
        start_timeout=settings.timeout,
    )
    return probe, announced


def run_point(target: Target, write: int, point: str, probe: StoreProbe, settings: Settings | None = None) -> Result:
    """Fault write ``write`` at ``point`` during start, resume, and judge it."""
    if point not in POINTS:
        raise ValueError(f"unknown point {point!r}; known: {', '.join(POINTS)}")
    settings = settings or Settings()
    began = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="plugpull-work-"))
    logs = Path(tempfile.mkdtemp(prefix="plugpull-logs-"))
    store = Store(fault=(write, point))
    ev = StoreEvidence(
        write=write, point=point, start=Outcome(argv=[]), probe_carrying=list(probe.carrying),
        start_timeout=settings.timeout, resume_timeout=settings.timeout,
    )
    try:
        with Channel(store=store) as channel:
            env = target_env(channel, workdir)
            ev.start = run_phase(target, channel, "start", env, logs, settings)
            ev.token = token_of(channel)
            ev.writes = [w.to_dict() for w in store.writes]
            ev.carrying = store.writes_carrying(ev.token) if ev.token else []
            if checks.prove_store_fault(ev) is None:
                ev.resume = run_phase(target, channel, "resume", env, logs, settings)
            ev.writes = [w.to_dict() for w in store.writes]
            ev.carrying = store.writes_carrying(ev.token) if ev.token else []
            ev.staged_stored = store.occurrences(ev.token) if ev.token else 0
            ev.counts = store.counts()
            announced = channel.announced
    finally:
        shutil.rmtree(logs, ignore_errors=True)
        if not settings.keep_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    judgement = checks.judge_lost_session_write(ev)
    return make_result(target, point, ev.to_dict(), judgement, announced, began, ev,
                       workdir if settings.keep_workdir else None)


def run(target: Target, points: list[str], settings: Settings | None = None) -> list[Result]:
    """The probe, then one result per (write carrying the staged input, point).

    suite.run_scenario calls this once per point, so each point has its own probe: a
    probe is one more start, and it keeps every line's evidence from one sequence of runs.
    """
    settings = settings or Settings()
    points = points or list(POINTS)
    began = time.monotonic()
    probe, announced = run_probe(target, settings)
    unproven = checks.prove_probe(probe)
    if unproven is not None:
        return [make_result(target, "probe", probe.to_dict(), unproven, announced, began, probe, None)]
    return [run_point(target, n, point, probe, settings) for n in probe.carrying for point in points]


def make_result(target, point, evidence, judgement, announced, began, ev, kept: Path | None) -> Result:
    # What the agent announced, read inside its own process (importlib.metadata there).
    version = next((a.get("version") for a in announced if a.get("version")), None)
    framework = target.framework or next((a.get("framework") for a in announced if a.get("framework")), None)
    message = judgement.message
    note = target.notes.get(point)
    if note and judgement.verdict.value == "FAIL":
        message = f"{message}; {note}"
    shown = {"start": ev.start, "resume": getattr(ev, "resume", None)}.get(judgement.show)
    evidence = dict(evidence)
    if kept is not None:
        evidence["workdir"] = str(kept)
    return Result(
        verdict=judgement.verdict,
        scenario=NAME,
        point=point,
        target=target.label(version),
        message=message,
        framework=framework,
        version=version,
        options=dict(target.options),
        evidence=evidence,
        stderr=shown.stderr if shown is not None else "",
        seconds=round(time.monotonic() - began, 3),
    )
