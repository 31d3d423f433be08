"""The checks of the test scenario interrupt-mid-tool: evidence -> verdict, pure (no process, no clock).

Shared checks come from plugpull.checks (judge_effects, check_recovering, error); only what is new for
this scenario is written here, as a new scenario's module under plugpull/checks/ would be.
"""

from __future__ import annotations

import signal
from dataclasses import asdict, dataclass, field
from typing import Any

from plugpull.checks import Judgement, error, judge_effects
from plugpull.checks.judgement import check_recovering
from plugpull.evidence import Outcome


@dataclass
class InterruptEvidence:
    """What an interrupt-mid-tool line observed: the clean run, the interrupted start, the resume."""

    point: str
    timeout: float
    clean: Outcome | None = None  # COMMAND start with nothing held: which effects a whole run owes
    owed: dict[str, int] = field(default_factory=dict)
    held: str | None = None  # the effect call held when SIGINT was sent; None: nothing was held
    asleep: bool | None = None  # the held call's process slept in the kernel (its read) when SIGINT was sent
    start: Outcome | None = None
    resume: Outcome | None = None
    counts: dict[str, int] = field(default_factory=dict)
    calls: list[dict[str, Any]] = field(default_factory=list)
    signal: str = "SIGINT"  # the signal sent (the scenario's own option --interrupt-signal)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def judge_interrupt_mid_tool(ev: InterruptEvidence) -> Judgement:
    """PASS: every effect the clean run made is there exactly once after the resume; FAIL: one is lost or doubled.

    Only once the interrupt is proven to have landed inside the held call, start ended of it, and resume
    ran to its end: anything else is ERROR with the reason.
    """
    if ev.clean is None or ev.clean.returncode != 0 or not ev.owed:
        how = "was not run" if ev.clean is None else f"ended ({ev.clean.describe_exit()})"
        return error(f"a clean run (no interrupt) {how} with {len(ev.owed)} effects", show="clean")
    if ev.start is None or ev.held is None:
        how = "was not run" if ev.start is None else f"ended ({ev.start.describe_exit()})"
        return error(f"start {how} but no call was held at {ev.point}", show="start")
    if ev.start.timed_out and ev.asleep is False:
        return error(
            f"start was interrupted inside {ev.held} before its process slept in the call, and timed out "
            "(the SIGINT may have come before the read it was to interrupt)",
            show="start",
        )
    if ev.start.timed_out or ev.start.returncode != -signal.Signals[ev.signal]:
        # An agent that caught the interrupt and went on did not stop where the line says it did.
        return error(f"start was interrupted inside {ev.held} but {ev.start.describe_exit()}", show="start")
    unfinished = check_recovering("resume", ev.resume)
    if unfinished is not None:
        return unfinished
    if ev.resume.timed_out or ev.resume.returncode != 0:
        return error(f"resume {ev.resume.describe_exit()}", show="resume")
    return judge_effects({**{name: 0 for name in ev.owed}, **ev.counts})
