"""Evidence: what a scenario observed, before any verdict (checks.py turns it into one).

Plain data so tests can build it by hand (Jepsen's ok-op / info-op style) and hit every
branch of the checks without running a process.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from plugpull.process import Outcome


@dataclass
class KillProof:
    """What the harness saw around the SIGKILL of start's process group."""

    group: int  # the process group that was killed (start's pgid)
    caller_pid: int | None  # the held call's pid from SO_PEERCRED; None if the OS could not say
    caller_group: int | None  # os.getpgid(caller_pid) just before the kill; None if gone or unknown
    held_open_at_kill: bool  # the provider was still holding the call when SIGKILL was sent
    closed_after_kill: float | None  # seconds from SIGKILL to the held connection closing; None: never
    survivors: list[int] = field(default_factory=list)  # live pids left in the group after the kill


@dataclass
class KillEvidence:
    """kill-mid-tool at one point: start (killed while a call was held), then resume."""

    point: str
    start: Outcome
    proof: KillProof | None = None  # None: no call was ever held
    resume: Outcome | None = None  # None: resume was not run (the kill was not proven)
    counts_at_kill: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # effects per name after resume
    calls: list[dict[str, Any]] = field(default_factory=list)
    held_name: str | None = None
    start_timeout: float = 0.0
    resume_timeout: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for phase in ("start", "resume"):
            if data.get(phase):
                # Output is shown under the line (Result.stderr), not repeated in evidence.
                data[phase] = {k: v for k, v in data[phase].items() if k not in ("stdout", "stderr")}
        return data
