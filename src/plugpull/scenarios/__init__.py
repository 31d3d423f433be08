"""Scenarios: ways to break a run. One module each; see plugpull.suite for the interface."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_TIMEOUT = 120.0


@dataclass
class Settings:
    """How a scenario runs its target, shared by every scenario."""

    timeout: float = DEFAULT_TIMEOUT  # per phase: start reaching the fault, resume finishing
    keep_workdir: bool = False
    workdir_root: str | None = None  # parent of each run's PLUGPULL_WORKDIR; None: the temp dir
    cwd: str | None = None  # where the target runs; the caller's directory by default
    forks: Any = None  # a forkserver.ForkServers: fork `python -m` targets from a pre-imported server

    def spawn(self, argv: list[str], *, env: dict[str, str], cwd: str | None):
        """Start a target phase: forked from a pre-imported server if enabled, else cold."""
        if self.forks is not None:
            return self.forks.spawn(argv, env=env, cwd=cwd)
        from plugpull.process import spawn

        return spawn(argv, env=env, cwd=cwd)
