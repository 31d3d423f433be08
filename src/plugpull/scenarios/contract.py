"""The scenario contract: everything the rest of plugpull may know about a scenario, in one typed place.

Modelled on pytest's hook specifications (``src/_pytest/hookspec.py``): one module declares, with types
and docstrings, what a plugin may provide, and pluggy checks a plugin against it when the plugin is
registered (``PluginManager._verify_hook``), not when a hook is first called. Here:

- a scenario is a subclass of :class:`Scenario` in one module under ``plugpull/scenarios/`` that gathers
  evidence, plus its pure checks under ``plugpull/checks/`` that turn evidence into verdicts;
- :class:`Registry` checks it against this contract on :meth:`Registry.register` (a mistake is a
  :class:`~plugpull.errors.ScenarioError` at import, never a surprise in a user's run);
- the suite (plugpull.suite), the command line (plugpull.cli) and the renderings (plugpull.rendering,
  plugpull.junit, the findings notebooks) read nothing about a scenario but what is declared here.

So a new scenario is one module and its checks, registered (docs/scenarios.md shows the steps, and
tests/scenarios/interrupt_mid_tool.py is one written and registered by a test). Faults other than
SIGKILL fit the same shape: ``run`` does whatever the fault is (lost-session-write drops a store write;
the test scenario sends SIGINT; a cancelled stream or a power cut over a FUSE-mounted workdir would do
theirs), ``phases`` and ``recovery`` name the phase that recovers (a "next turn" is such a phase), and
``checks`` judge it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, NamedTuple

from plugpull.errors import ScenarioError, UsageError
from plugpull.hints import call_summary, held_point
from plugpull.results import Result
from plugpull.scenarios import COMMON_SETTINGS, Runtime, Settings
from plugpull.targets import Target, agent


class Recovery(NamedTuple):
    """The phase whose record_effect calls a FAIL line summarises, and how the line names it."""

    phase: str  # the channel's phase name (Call.phase): "resume", "approve-2", "race", ...
    who: str  # "resume", "the second approve", "the racing approvers"


class Scenario:
    """One way to break a run. Subclass it, fill in the class attributes, write :meth:`run`, register it.

    Every attribute below is read by something outside the scenario's module; nothing else is.
    """

    #: ``--scenario NAME`` and every result line's ``scenario``: lowercase words joined by hyphens.
    name: ClassVar[str] = ""
    #: Every point it has, in output order: ``--point`` choices. A point names where the fault lands.
    points: ClassVar[tuple[str, ...]] = ()
    #: The points that run without ``--point``; () means every point.
    default_points: ClassVar[tuple[str, ...]] = ()
    #: The protocol commands one line runs, in order (docs/agent-protocol.md): ``COMMAND start`` ...
    phases: ClassVar[tuple[str, ...]] = ("start", "resume")
    #: One line in words: what breaks the run (``--help``, docs/cli.md).
    fault: ClassVar[str] = ""
    #: Its fault points hold one effect call in the provider (the held-call kill), so ``--hold`` chooses it.
    holds_calls: ClassVar[bool] = False
    #: The other :class:`~plugpull.scenarios.Settings` it reads (beyond ``COMMON_SETTINGS`` and ``hold``):
    #: the CLI refuses an option that no selected scenario reads.
    options: ClassVar[frozenset[str]] = frozenset()
    #: Options it refuses outright, with why (one line): "--hold does not apply to NAME (why)".
    refuses: ClassVar[Mapping[str, str]] = {}
    #: Options that, given without ``--scenario``, select this scenario (``--random-kills``: every-boundary).
    selected_by: ClassVar[tuple[str, ...]] = ()
    #: The phases of a kill-and-recover run of its targets, for every-boundary: the phases run to the end
    #: first, the killed one, the recovering one. () when its targets have no such run.
    kill_and_recover: ClassVar[tuple[str, ...]] = ()
    #: The built-in targets ``--scenario NAME`` alone runs; None: those whose variants are made for it.
    default_targets: ClassVar[tuple[str, ...] | None] = None
    #: Point (or "*" for every other point) -> the phase a FAIL line's call summary is about. {}: none.
    recovery: ClassVar[Mapping[str, Recovery]] = {}
    #: The evidence dataclass its lines carry in ``Result.evidence`` (plugpull.evidence, docs/json-schema.md).
    evidence: ClassVar[type | None] = None
    #: The pure functions that give its lines their verdicts (evidence -> Judgement): no process, no
    #: socket, no clock. Tests judge them on hand-built evidence (tests/checks/).
    checks: ClassVar[tuple[Callable[..., Any], ...]] = ()

    # --- running -------------------------------------------------------------------------------------

    def run(self, target: Target, point: str, settings: Settings, runtime: Runtime) -> list[Result]:
        """Run one line (``point`` as :meth:`expand` made it) against ``target`` and judge it.

        Usually one result; a scenario whose one point covers several faults (lost-session-write: each
        write carrying the staged input) returns one per fault. The verdict comes from ``checks`` only.
        Runs shared by every line (a clean run) go through ``runtime.once``; target phases start with
        ``runtime.spawn``.
        """
        raise NotImplementedError(f"scenario {self.name!r} does not define run()")

    def expand(self, target: Target, points: Sequence[str], settings: Settings, runtime: Runtime) -> list[str]:
        """The lines of ``points`` for ``target``, when some are known only after a clean run.

        every-boundary makes "after model-call 2" of "after" for each boundary its clean run passed;
        by default each point is one line.
        """
        return list(points)

    def points_for(self, points: Sequence[str], settings: Settings) -> list[str]:
        """The points asked for (``--point``; none: the defaults) as this scenario reads them with ``settings``.

        Raises :class:`~plugpull.errors.UsageError` for points and options that contradict each other
        (every-boundary: ``--point random`` needs ``--random-kills``).
        """
        return list(points)

    # --- choosing targets ----------------------------------------------------------------------------

    def adopt(self, target: Target, source: Scenario | None) -> Target | None:
        """A built-in variant named under ``--scenario NAME``, as this scenario runs it.

        ``source`` is the scenario the variant was made for. None: leave the variant out. Raises
        :class:`~plugpull.errors.UsageError` when the variant cannot run it. By default a built-in runs
        the scenario it was made for.
        """
        return target

    def agents(self, commands: Sequence[str]) -> list[Target]:
        """The targets of ``--agent COMMAND`` (each repeatable) under ``--scenario NAME``: one per command."""
        chosen = []
        for command in commands:
            try:
                chosen.append(agent(command, self.name))
            except ValueError as exc:
                raise UsageError(f"--agent {command!r}: {exc}") from None
        return chosen

    # --- rendering hints -----------------------------------------------------------------------------

    def shown_point(self, result: Result) -> str:
        """The point as a line prints it: by default with the held call (``after-effect charge_card#1``)."""
        return held_point(result)

    def call_summary(self, result: Result) -> str | None:
        """The line under a FAIL: what the recovering phase asked the provider for; None for no such line."""
        calls = result.evidence.get("calls")
        recovery = self.recovery.get(result.point) or self.recovery.get("*")
        if recovery is None or calls is None:
            return None
        return call_summary(calls, recovery.phase, recovery.who)

    # --- derived -------------------------------------------------------------------------------------

    @property
    def points_by_default(self) -> tuple[str, ...]:
        """What runs without ``--point``: ``default_points``, or every point."""
        return self.default_points or self.points

    @property
    def read_options(self) -> frozenset[str]:
        """Every option it reads beyond the common ones, ``hold`` included when it holds calls."""
        return self.options | ({"hold"} if self.holds_calls else set())

    def __repr__(self) -> str:
        return f"<scenario {self.name}>"


_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


def verify(scenario: Scenario) -> None:
    """Check ``scenario`` against the contract; :class:`~plugpull.errors.ScenarioError` naming what breaks it."""
    if not isinstance(scenario, Scenario):
        raise ScenarioError(f"{scenario!r} is not a plugpull.scenarios.contract.Scenario")
    name = scenario.name
    problems = []
    if not _NAME.fullmatch(name or ""):
        problems.append(f"name {name!r} is not lowercase words joined by hyphens")
    points = scenario.points
    if not points or len(set(points)) != len(points) or any(not p or p.split() != [p] for p in points):
        problems.append(f"points {points!r} must be distinct words, at least one")
    if not set(scenario.default_points) <= set(points):
        problems.append(f"default_points {scenario.default_points!r} are not all among its points")
    if not scenario.phases:
        problems.append("phases is empty")
    if scenario.kill_and_recover and len(scenario.kill_and_recover) < 2:
        problems.append("kill_and_recover needs the killed phase and the recovering one")
    settings = {f.name for f in dataclasses.fields(Settings)} - set(COMMON_SETTINGS)
    if not set(scenario.options) <= settings - {"hold"}:
        problems.append(
            f"options {sorted(scenario.options)!r} must be among {sorted(settings - {'hold'})} (hold: holds_calls)"
        )
    if not set(scenario.refuses) <= settings:
        problems.append(f"refuses {sorted(scenario.refuses)!r} must be among {sorted(settings)}")
    if scenario.read_options & set(scenario.refuses):
        problems.append("refuses an option it reads")
    if not set(scenario.selected_by) <= scenario.read_options:
        problems.append("selected_by names an option it does not read")
    if not set(scenario.recovery) <= {*points, "*"}:
        problems.append(f"recovery keys {sorted(scenario.recovery)!r} are not points or '*'")
    if not all(isinstance(r, Recovery) for r in scenario.recovery.values()):
        problems.append("recovery values must be Recovery(phase, who)")
    if not scenario.checks or not all(callable(c) for c in scenario.checks):
        problems.append("checks must name at least one pure check (evidence -> Judgement)")
    evidence = scenario.evidence
    if evidence is None or not dataclasses.is_dataclass(evidence) or not callable(getattr(evidence, "to_dict", None)):
        problems.append("evidence must be the dataclass its lines carry, with to_dict()")
    if type(scenario).run is Scenario.run:
        problems.append("run() is not defined")
    if not scenario.fault:
        problems.append("fault is empty: say in one line what breaks the run")
    if problems:
        raise ScenarioError(f"scenario {name!r} breaks the contract: " + "; ".join(problems))


class Registry:
    """The scenarios plugpull knows, by name, in registration order (``--scenario`` lists them so)."""

    def __init__(self, scenarios: Sequence[Scenario] = ()) -> None:
        self._scenarios: dict[str, Scenario] = {}
        for scenario in scenarios:
            self.register(scenario)

    def register(self, scenario: Scenario) -> Scenario:
        """Add ``scenario`` after checking it against the contract; it is returned."""
        verify(scenario)
        if scenario.name in self._scenarios:
            raise ScenarioError(f"scenario {scenario.name!r} is registered already")
        self._scenarios[scenario.name] = scenario
        return scenario

    def unregister(self, name: str) -> None:
        self._scenarios.pop(name, None)

    @contextmanager
    def registered(self, scenario: Scenario) -> Iterator[Scenario]:
        """``scenario`` registered for the ``with`` block (a test's own scenario)."""
        self.register(scenario)
        try:
            yield scenario
        finally:
            self.unregister(scenario.name)

    def __getitem__(self, name: str) -> Scenario:
        try:
            return self._scenarios[name]
        except KeyError:
            raise ScenarioError(f"unknown scenario {name!r}; known: {', '.join(self._scenarios)}") from None

    def get(self, name: str) -> Scenario | None:
        return self._scenarios.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._scenarios

    def __iter__(self) -> Iterator[Scenario]:
        return iter(list(self._scenarios.values()))

    def names(self) -> list[str]:
        return list(self._scenarios)

    def points(self) -> list[str]:
        """Every point of every scenario, in order, each once: the CLI's ``--point`` choices."""
        return list(dict.fromkeys(p for scenario in self for p in scenario.points))

    def hints(self, name: str) -> Scenario:
        """The scenario that renders a result of ``name``: itself, or the contract's defaults for a
        result of a scenario not registered here (a record written by another release)."""
        return self._scenarios.get(name) or _UNKNOWN

    def adopt(self, name: str, target: Target) -> Target | None:
        """``target`` as scenario ``name`` runs it (:meth:`Scenario.adopt`), e.g. a built-in as every-boundary."""
        return self[name].adopt(target, self.get(target.scenario))


_UNKNOWN = Scenario()
