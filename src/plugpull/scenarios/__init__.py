"""Scenarios: ways to break a run. One module each; see plugpull.suite for the interface."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_TIMEOUT = 120.0


@dataclass
class Settings:
    """How a scenario runs its target, shared by every scenario."""

    timeout: float = DEFAULT_TIMEOUT  # per phase: start reaching the fault, resume finishing
    keep_workdir: bool = False
    workdir_root: str | None = None  # parent of each run's PLUGPULL_WORKDIR; None: the temp dir
    cwd: str | None = None  # where the target runs; the caller's directory by default
