"""What a scenario breaks: a Target (a command and how its result line names it) and a BuiltIn (``--target NAME``).

Every target speaks the same protocol: ``COMMAND start`` begins a run, ``COMMAND resume``
continues it from what the framework saved in ``$PLUGPULL_WORKDIR`` (docs/agent-protocol.md).
A built-in target is one or more variants of an agent script shipped in this package,
run with the same Python as the harness; the built-ins are declared per framework in
plugpull.targets.families and collected by plugpull.targets.registry.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any

from plugpull.aim import Aim
from plugpull.notes import Note


@dataclass(frozen=True)
class Target:
    """One thing to break: a command plus how to name it in a result line."""

    name: str  # the --target name, or "agent" for --agent
    argv: tuple[str, ...]  # the command; the phase ("start"/"resume") is appended
    framework: str | None = None  # distribution whose version the agent announces
    options: dict[str, Any] = field(default_factory=dict)
    scenario: str = "kill-mid-tool"
    # Upstream issues, doc quotes, causes: each attached to a FAIL line only when its condition
    # over the evidence holds (plugpull.notes).
    notes: tuple[Note, ...] = ()
    # Fields of the run's record_result value that differ run to run by design (ids, timestamps the
    # model makes up), left out when the resumed run's result is compared with the golden one.
    # Dotted paths into objects ("receipt.id"); an agent can add its own: announce(result_ignore="a,b.c").
    result_ignore: tuple[str, ...] = ()
    # The phase commands of a kill-and-recover run, for every-boundary: the phases before the killed
    # one (run to completion), the killed one, the recovering one. kill-mid-tool's protocol is
    # start/resume; an approval agent's run is start (pauses), approve (killed), recover.
    phases: tuple[str, ...] = ("start", "resume")
    # resume-after-upgrade: the command that resumes, in the other environment (release B); ``argv``
    # starts the run on release A. Empty for every other scenario.
    resume_argv: tuple[str, ...] = ()
    # Where a variant's own fault lands (plugpull.aim.Aim): a sibling target's held call and the other tool call's
    # state at the kill, an aimed target's saves; a run's --hold/--sibling and --save replace them (Aim.over).
    aim: Aim = field(default_factory=Aim)
    # A server the run talks to but that is not part of it (Restate): the phase name that starts
    # it (``COMMAND serve``), run before the first phase in a session of its own, never killed with the run,
    # stopped after the last phase (plugpull.sidecar). None: no sidecar.
    sidecar: str | None = None

    def label(self, version: str | None = None) -> str:
        if self.framework is None:
            head = shlex.join(self.argv)
            if self.resume_argv:
                head += " -> " + shlex.join(self.resume_argv)
        else:
            head = f"{self.framework} {version or '?'}"
        opts = " ".join(f"{k}={v}" for k, v in self.options.items())
        return f"{head} {opts}".strip()


@dataclass(frozen=True)
class BuiltIn:
    """A built-in target (``--target NAME``): the framework module that must be importable, and its variants."""

    name: str
    module: str  # import name that must be present (the framework)
    extra: str  # pip extra that installs it
    variants: tuple[Target, ...]
    also: tuple[str, ...] = ()  # further import names the agent needs (e.g. DBOS under Pydantic AI)
    # Programs the agent runs that no pip extra installs (Restate's server: an npm package), each with how to
    # install it. Found on PATH, or named by $PLUGPULL_<NAME> (restate-server: PLUGPULL_RESTATE_SERVER).
    programs: tuple[tuple[str, str], ...] = ()
    # The environment variable that names a server the agent keeps its state on (plugpull.postgres.URL_ENV for
    # the store=postgresql targets); None: the agent needs nothing but its workdir.
    server: str | None = None

    def installed(self) -> bool:
        """Whether the framework's modules can be imported here (a missing program: :meth:`missing_program`)."""
        for module in (self.module, *self.also):
            try:
                if importlib.util.find_spec(module) is None:
                    return False
            except ModuleNotFoundError:  # a dotted name whose parent package is missing (google.adk)
                return False
        return True

    def missing_program(self) -> str | None:
        """The first program of :attr:`programs` not found, said for a user; None when all are there."""
        for program, install in self.programs:
            if not (shutil.which(program) or os.environ.get(program_env(program))):
                return f"{program} is not on PATH ({install})"
        return None

    def server_missing(self) -> str | None:
        """Why this target cannot run here for want of its server (one line), or None."""
        if self.server is None or os.environ.get(self.server):
            return None
        return (
            f"target {self.name!r} keeps its state on PostgreSQL and {self.server} is not set: "
            "run it under a throwaway cluster, python -m plugpull.postgres plugpull ..."
        )

    def stop(self, options: dict[str, Any], *points: str) -> Stop:
        """A stop of the tour (what bare ``plugpull`` runs, docs/cli.md): the one variant whose options are
        ``options``, at ``points``. A declaration that names no variant or several is a mistake, raised here."""
        matching = [v for v in self.variants if v.options == options]
        if len(matching) != 1 or not points:
            raise ValueError(
                f"tour stop of {self.name!r}: options {options!r} name {len(matching)} variants, points {points!r}"
            )
        return Stop(target=self.name, options=tuple(options.items()), points=points)


@dataclass(frozen=True)
class Stop:
    """One line or a few of the tour: a built-in target's variant (its options) and the points bare ``plugpull``
    runs it at. The tour picks lines; their verdicts are measured like any other line's."""

    target: str  # the --target name
    options: tuple[tuple[str, Any], ...]  # the variant's options, in its order
    points: tuple[str, ...]

    def selects(self, target: Target) -> bool:
        """Whether ``target`` is this stop's variant."""
        return target.name == self.target and tuple(target.options.items()) == self.options


def program_env(program: str) -> str:
    """The variable that names a program's path instead of PATH: restate-server -> PLUGPULL_RESTATE_SERVER."""
    return "PLUGPULL_" + program.upper().replace("-", "_")


def python_module(module: str, *args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", module, *args)


def agent(command: str, scenario: str = "kill-mid-tool") -> Target:
    """A user's agent from ``--agent COMMAND`` (split like a POSIX shell would), run under ``scenario``."""
    argv = shlex.split(command)
    if not argv:
        raise ValueError('--agent needs a command, e.g. --agent "python my_agent.py"')
    return Target(name="agent", argv=tuple(argv), scenario=scenario)


def upgrade_agent(start_command: str, resume_command: str) -> Target:
    """resume-after-upgrade for a user's agent: ``start_command`` starts (release A), ``resume_command`` resumes (B)."""
    start, resume = agent(start_command), agent(resume_command)
    return Target(name="agent", argv=start.argv, resume_argv=resume.argv, scenario="resume-after-upgrade")
