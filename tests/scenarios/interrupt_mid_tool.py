"""interrupt-mid-tool, a scenario written and registered by the tests: Ctrl-C instead of SIGKILL.

The proof that a new scenario is one module plus its checks: this module and
interrupt_checks.py, registered with ``REGISTRY.registered(SCENARIO)``, run through plugpull's suite,
command line, renderings and JUnit without a line of those changed. Its fault is not SIGKILL: SIGINT
reaches start's process group while the provider holds an effect call, so the agent's own
KeyboardInterrupt handling runs (finally blocks, atexit) before it dies; then ``COMMAND resume`` runs
(the next turn) and the effects are counted. It reuses kill-mid-tool's clean run for what a run owes.

The SIGINT is sent once the held call's process sleeps in the kernel (waiting for the answer), not as soon as
the provider has the call. CPython runs a Python handler only when the interpreter next checks for signals
(https://docs.python.org/3/library/signal.html#execution-of-python-signal-handlers), and a blocking socket
read checks only when the kernel interrupts it (EINTR, PEP 475). A SIGINT that arrives after the client sent
the call but before its read blocks (the client preempted in between: 3 of 1,650 lines under a concurrent full test run)
is taken by the C handler, the read then blocks with nothing left to interrupt it, and start waits out the
timeout: the race of plugpull's own client, not the framework's handling of Ctrl-C. A sleeping reader is
interrupted by the signal, so its KeyboardInterrupt is certain.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from typing import ClassVar

from interrupt_checks import InterruptEvidence, judge_interrupt_mid_tool

from plugpull.channel import Channel
from plugpull.process import Running, reaping
from plugpull.reaper import read_proc
from plugpull.results import Result, Verdict
from plugpull.scenarios import Runtime, Settings, make_result, option, target_env, workdir
from plugpull.scenarios.contract import Recovery, Scenario
from plugpull.scenarios.faults import Fault
from plugpull.scenarios.kill_mid_tool import clean_run
from plugpull.targets import Target

NAME = "interrupt-mid-tool"
POINTS = ("interrupted-before-effect", "interrupted-after-effect")


@dataclass(frozen=True)
class Options:
    """Its own option, added to the command line by Scenario.add_options and set by a notebook's parameter of the
    same name: neither cli.py nor the notebook kernel names it."""

    interrupt_signal: str = option(
        "SIGINT", "--interrupt-signal", "the signal sent to start's process group", choices=("SIGINT", "SIGTERM")
    )


@dataclass(frozen=True)
class HeldCallInterrupt(Fault):
    """Its fault, a value of its own on plugpull.scenarios.faults' interface: a signal (SIGINT by default) to the
    phase's process group once the held call's process sleeps waiting for the answer. No other fault changes."""

    name: ClassVar[str] = "a signal at a held effect call"
    holds_call: ClassVar[bool] = True

    side: str
    signal: str
    hold: tuple[str, int] | None = None

    def arm(self, provider) -> None:
        provider.arm(self.side, hold=self.hold)

    def strike(self, channel: Channel, started: Running, ev: InterruptEvidence, deadline: float) -> None:
        """Wait for the held call; once its process sleeps in the kernel, signal start's group."""
        while not channel.provider.held_event.wait(0.01):
            if started.poll() is not None or time.monotonic() > deadline:
                break
        held = channel.provider.held
        if held is not None:
            ev.held = held.name
            ev.asleep = sleeping(held.pid or started.pid, deadline)
            os.killpg(started.pgid, signal.Signals[self.signal])


class InterruptMidTool(Scenario):
    name = NAME
    points = POINTS
    phases = ("start", "resume")
    fault = "SIGINT (Ctrl-C) to start's process group while the provider holds an effect call"
    faults = (HeldCallInterrupt,)
    Options = Options
    recovery = {"*": Recovery("resume", "resume")}
    evidence = InterruptEvidence
    checks = (judge_interrupt_mid_tool,)

    def run(self, target: Target, point: str, settings: Settings, runtime: Runtime) -> list[Result]:
        began = time.monotonic()
        ev = InterruptEvidence(point=point, timeout=settings.timeout, signal=self.own(settings).interrupt_signal)
        clean = clean_run(target, settings, runtime)
        ev.clean, ev.owed, announced = clean.start, dict(clean.counts), clean.announced
        if clean.start.returncode == 0 and clean.counts:
            announced = interrupt(target, point, settings, runtime, ev)
        judgement = judge_interrupt_mid_tool(ev)
        phase = judgement.show or ("resume" if judgement.verdict is Verdict.FAIL else "")
        shown = {"clean": ev.clean, "start": ev.start, "resume": ev.resume}.get(phase)
        return [make_result(NAME, target, point, ev.to_dict(), judgement, announced, began, shown, None)]


def interrupt(target: Target, point: str, settings: Settings, runtime: Runtime, ev: InterruptEvidence) -> list[dict]:
    """Start armed at ``point``; SIGINT its group once a call is held; resume; count. Fills ``ev``."""
    with workdir(settings) as path, Channel() as channel, reaping() as spawned:
        env = target_env(channel, path)
        channel.phase = "start"
        fault = HeldCallInterrupt(point.removeprefix("interrupted-"), ev.signal, hold=settings.aim.hold)
        fault.arm(channel.provider)
        started = runtime.spawn([*target.argv, "start"], env=env, cwd=settings.cwd)
        spawned.append(started)
        if isinstance(started, Running):
            fault.strike(channel, started, ev, time.monotonic() + settings.timeout)
            ev.start = started.wait(settings.timeout)
        else:
            ev.start = started
        if ev.held is not None and not ev.start.timed_out:
            channel.provider.arm(None)
            channel.phase = "resume"
            resumed = runtime.spawn([*target.argv, "resume"], env=env, cwd=settings.cwd)
            spawned.append(resumed)
            ev.resume = resumed.wait(settings.timeout) if isinstance(resumed, Running) else resumed
        ev.counts = dict(channel.provider.counts())
        ev.calls = [c.to_dict() for c in channel.provider.calls]
        return list(channel.announced)


def sleeping(pid: int, deadline: float) -> bool:
    """Wait until ``pid`` (its main thread: /proc/PID/stat) sleeps in the kernel; False if it did not by ``deadline``."""
    while True:
        proc = read_proc(pid)
        if proc is None or not proc.alive:
            return False
        if proc.state == "S":
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)


SCENARIO = InterruptMidTool()
