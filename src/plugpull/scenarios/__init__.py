"""Scenarios: ways to break a run. One module each, plus its checks (plugpull.checks).

What a scenario is, and what the suite, the CLI and the renderings may know of it, is the contract in
:mod:`plugpull.scenarios.contract`; :mod:`plugpull.scenarios.registry` holds the scenarios there are.
This module holds what every scenario shares: :class:`Settings` (the options a run was given),
:class:`Runtime` (what one run shares between its lines: the once-cache and the fork servers) and the
helpers that make a workdir, a target's environment and a result line.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plugpull.aim import Aim

if TYPE_CHECKING:
    from plugpull.evidence import Outcome
    from plugpull.forkserver import ForkServers
    from plugpull.process import Running

DEFAULT_TIMEOUT = 120.0


@dataclass(slots=True)
class Settings:
    """The options a run was given (the CLI's, a notebook's, a test's): plain values, nothing running.

    A scenario reads the first four; of ``aim`` (plugpull.aim.Aim: where the fault lands) each reads the fields it names
    in ``Scenario.options`` (or ``holds_calls`` for ``hold``), and the CLI refuses an option that no selected scenario
    reads. A scenario's own options (``Scenario.Options``, fields made with :func:`option`) are in ``options``, by
    scenario name:
    ``Scenario.own(settings)`` reads them, its defaults where the run gave none. What a run builds as it goes
    (clean runs, fork servers) is its :class:`Runtime`'s.
    """

    timeout: float = DEFAULT_TIMEOUT  # per phase: start reaching the fault, resume finishing
    keep_workdir: bool = False
    workdir_root: str | None = None  # parent of each run's PLUGPULL_WORKDIR; None: the temp dir
    cwd: str | None = None  # where the target runs; the caller's directory by default
    aim: Aim = field(default_factory=Aim)  # where the fault lands: the held call, its sibling, the boundaries, ...
    # scenario name -> its Options (Scenario.Options): the options a scenario owns and adds itself (add_options)
    options: dict[str, Any] = field(default_factory=dict)

    def aimed(self, **changes: Any) -> Settings:
        """These settings with the aim's fields in ``changes`` replaced (``settings.aimed(hold=("refund", 1))``)."""
        return replace(self, aim=replace(self.aim, **changes))


def option(default: Any, flag: str, help: str, *, least: int | None = None, choices: tuple | None = None) -> Any:
    """A field of a scenario's ``Options`` dataclass: its default, the flag that sets it and what it does.

    ``Scenario.add_options`` adds ``flag`` to the command line from this (as a pytest plugin adds its own options
    in ``pytest_addoption``), typed as the default is (a bool default is a switch); a notebook sets it by a parameter
    named as the field. ``least``: the smallest whole number allowed; ``choices``: the values allowed.
    """
    return field(default=default, metadata={"flag": flag, "help": help, "least": least, "choices": choices})


#: power-loss's --power-cut choices (its own option): plugpull.powercut.durability.Variant's values, named here so
#: that choosing them imports no FUSE module.
POWER_CUTS = ("unsynced", "torn", "namespace", "lazyfs")


class Runtime:
    """What the lines of one run share, beside its :class:`Settings`: the once-cache and the fork servers.

    Runs done once and shared by every point and repeat (kill-mid-tool's clean run, lost-session-write's
    probe, every-boundary's clean run) are kept here under a key that names the target and the settings
    they depend on. With ``forks``, target phases are forked from servers that imported the framework
    once (plugpull.forkserver); :meth:`close` (or leaving a ``with`` block) stops them.
    """

    def __init__(self, forks: ForkServers | None = None) -> None:
        self.forks = forks
        self._once: dict[tuple, Any] = {}
        self._lock = threading.Lock()
        self._planned: dict[str, list[str]] = {}

    def plan(self, runs: list[tuple[Any, str]]) -> None:
        """Remember each target's lines in the order they were planned (suite.run_plan, after expansion).

        :func:`settle` gives a clean run's FAIL to the first planned line of the target, not to the first
        line that happens to finish, so a run with -j says the same as one without.
        """
        with self._lock:
            for target, line in runs:
                lines = self._planned.setdefault(_plan_key(target), [])
                if line not in lines:
                    lines.append(line)

    def planned(self, target: Any) -> list[str]:
        """The lines planned for ``target``, in plan order; empty when no plan was given (a direct run_point)."""
        with self._lock:
            return list(self._planned.get(_plan_key(target), ()))

    def once(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """``compute()`` the first time ``key`` is asked for; its result every later time.

        With -j two threads may compute the same key at once; the first result stored wins,
        so every line still shares one.
        """
        with self._lock:
            if key in self._once:
                return self._once[key]
        value = compute()
        with self._lock:
            return self._once.setdefault(key, value)

    def spawn(self, argv: list[str], *, env: dict[str, str], cwd: str | None) -> Running | Outcome:
        """Start a target phase: forked from a pre-imported server if there are fork servers, else cold."""
        if self.forks is not None:
            return self.forks.spawn(argv, env=env, cwd=cwd)
        from plugpull.process import spawn

        return spawn(argv, env=env, cwd=cwd)

    def close(self) -> None:
        if self.forks is not None:
            self.forks.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _plan_key(target: Any) -> str:
    # A Target is frozen but holds lists and dicts (unhashable); equal targets have equal reprs.
    return repr(target)


@contextmanager
def workdir(settings: Settings) -> Iterator[Path]:
    """A new empty PLUGPULL_WORKDIR for one run; removed afterwards unless --keep-workdir."""
    path = Path(tempfile.mkdtemp(prefix="plugpull-work-", dir=settings.workdir_root))
    try:
        yield path
    finally:
        if not settings.keep_workdir:
            shutil.rmtree(path, ignore_errors=True)


def target_env(channel: Any, workdir_path: Path) -> dict[str, str]:
    """The target's environment: the user's, plus the channel's socket and the workdir."""
    from plugpull.client import WORKDIR_ENV

    env = dict(os.environ)
    env.update(channel.env())
    env[WORKDIR_ENV] = str(workdir_path)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def result_ignore(target: Any, announced: list[dict]) -> list[str]:
    """The result fields the golden comparison leaves out: the target's, plus any the agent announced."""
    fields = list(getattr(target, "result_ignore", ()))
    for info in announced:
        value = info.get("result_ignore")
        if isinstance(value, str):
            fields += [f.strip() for f in value.split(",") if f.strip()]
    return list(dict.fromkeys(fields))


def settle(
    judgement: Any,
    runtime: Runtime,
    key: tuple,
    point: str,
    line: str | None = None,
    *,
    target: Any = None,
) -> Any:
    """The line's judgement once a clean run's FAIL (``Judgement.without_fault``) is counted once per target.

    When the clean (fault-free) run already breaks what a line checks, one line of the target says so
    (FAIL "without any fault: ..."): the first of ``target``'s lines in plan order (:meth:`Runtime.plan`; ``key``
    names the target, its scenario and the settings its clean run depends on), or, with no plan, the first to
    be judged; and every line of that point (``line``: the name its result line has, when that is not the
    point, as lost-session-write's "probe"). The target's other lines are moot:
    FAIL "moot: ...", naming that point, with no output under them, never PASS and never ERROR (no fault of
    theirs could be judged; the exit code follows the FAIL rules). docs/agent-protocol.md.
    """
    from dataclasses import replace

    from plugpull.results import Verdict

    if not getattr(judgement, "without_fault", False):
        return judgement

    def first() -> tuple[str, str]:
        planned = runtime.planned(target) if target is not None else []
        owner = planned[0] if point in planned else point
        return owner, line or owner

    owner, name = runtime.once(("without-fault", *key), first)
    if owner == point:
        return judgement
    return replace(
        judgement,
        verdict=Verdict.FAIL,
        message=f"moot: the clean run already failed without any fault (see {name})",
        show="",
        without_fault=False,
        moot=name,
    )


def make_result(
    scenario: str,
    target: Any,
    point: str,
    evidence: dict,
    judgement: Any,
    announced: list[dict],
    began: float,
    shown: Any,
    kept: Path | None,
) -> Any:
    """One Result line from a judgement, with the version the agent announced from inside its process.

    ``message`` is the judgement's alone; the target's notes whose condition holds on this line's
    evidence go into ``notes`` (plugpull.notes).
    """
    from plugpull.notes import matched
    from plugpull.results import Result

    version = next((a.get("version") for a in announced if a.get("version")), None)
    framework = target.framework or next((a.get("framework") for a in announced if a.get("framework")), None)
    evidence = dict(evidence)
    if getattr(judgement, "without_fault", False):
        evidence["without_fault"] = True
    if getattr(judgement, "moot", ""):
        evidence["moot"] = judgement.moot
    if kept is not None:
        evidence["workdir"] = str(kept)
    result = Result(
        verdict=judgement.verdict,
        scenario=scenario,
        point=point,
        target=target.label(version),
        message=judgement.message,
        framework=framework,
        version=version,
        options=dict(target.options),
        evidence=evidence,
        stderr=shown.stderr if shown is not None else "",
        seconds=round(time.monotonic() - began, 3),
        target_name=target.name,
    )
    result.notes = matched(target.notes, result)
    return result
