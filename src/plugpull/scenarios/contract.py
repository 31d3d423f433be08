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

from plugpull.aim import FIELDS as AIM_FIELDS
from plugpull.errors import ScenarioError, UsageError
from plugpull.hints import call_summary, held_point
from plugpull.results import Result
from plugpull.scenarios import Runtime, Settings
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
    #: The faults it composes (plugpull.scenarios.faults: ``HeldCallKill``, ``BoundaryKill``, ``PowerCut``,
    #: ``ToolRaise``, or a fault of its own): classes whose ``name`` says what they do and whose ``holds_call`` says
    #: that they hold one effect call in the provider, so that ``--hold`` chooses it (:attr:`holds_calls`).
    faults: ClassVar[tuple[type, ...]] = ()
    #: The fields of a run's :class:`~plugpull.aim.Aim` it reads (beyond ``hold``, read when a fault of its holds a
    #: call: :attr:`holds_calls`): the CLI refuses an option that no selected scenario reads.
    options: ClassVar[frozenset[str]] = frozenset()
    #: The options it owns, a frozen dataclass whose fields are made with :func:`plugpull.scenarios.option` (a default
    #: and a flag): :meth:`add_options` puts them on the command line, a notebook sets them by parameters named as the
    #: fields, :meth:`own` reads a run's values. None: it has none.
    Options: ClassVar[type | None] = None
    #: How ``--agent`` is given for it, when not once per agent (``--help``): "give it exactly twice, ...".
    agent_usage: ClassVar[str] = ""
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
    #: For a scenario whose point is one line: the function that runs and judges it, ``(target, point, settings,
    #: runtime) -> Result`` (as ``staticmethod(run_point)``); the default :meth:`run` calls it.
    line: ClassVar[Callable[..., Any] | None] = None

    # --- in a finding's notebook (plugpull.report.kernel.notebook reads these and names no scenario) ------------
    #: The notebook parameter that makes a finding's lines this scenario's (finding.toml ``[parameters]``:
    #: every-boundary's ``boundaries``, power-loss's ``cuts``, resume-after-upgrade's ``from_python``). None: a
    #: finding's targets run the scenarios their variants were made for.
    finding_parameter: ClassVar[str | None] = None
    #: With a list-valued :attr:`finding_parameter`, the field of :attr:`Options` it lists values of: each target
    #: variant becomes one line per value, the value in its options (power-loss: ``cuts`` -> ``power_cut``), so one
    #: record holds a variant under every value and a claim names the one it is about. None: no such list.
    lines_per: ClassVar[str | None] = None
    #: What a finding's notebook shows of its lines, in order: names of the kernel's views
    #: (``plugpull.report.kernel.notebook.VIEWS``): a table and the FAIL-rate plot by default.
    views: ClassVar[tuple[str, ...]] = ("table", "plot")
    #: A finding's lines of this scenario run through the fork server by default (every-boundary's map is many
    #: short lines; each is still a real start, SIGKILL and resume). A notebook's ``fork_server`` parameter wins.
    finding_forks: ClassVar[bool] = False
    #: The Run section's sentence on what one line is, in a finding's notebook; "" for the kernel's own.
    finding_text: ClassVar[str] = ""

    def finding_targets(
        self, names: Sequence[str], options: Mapping[str, Any], parameters: Mapping[str, Any]
    ) -> tuple[list[Target], list[str]] | None:
        """A finding's targets when this scenario makes them itself (resume-after-upgrade: each framework's upgrade
        variants, started under release A's interpreter), with one line per name saying what runs or why not; None:
        the kernel's installed built-ins, as this scenario adopts them."""
        return None

    def finding_aim(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        """The :class:`~plugpull.aim.Aim` fields a finding's parameters set for its lines: a parameter named as a
        field this scenario reads (every-boundary's ``boundaries``), as a tuple when it is a list."""
        return {
            name: tuple(value) if isinstance(value, list) else value
            for name, value in parameters.items()
            if name in self.options
        }

    # --- running -------------------------------------------------------------------------------------

    def run(self, target: Target, point: str, settings: Settings, runtime: Runtime) -> list[Result]:
        """Run one line (``point`` as :meth:`expand` made it) against ``target`` and judge it.

        Usually one result; a scenario whose one point covers several faults (lost-session-write: each
        write carrying the staged input) returns one per fault. The verdict comes from ``checks`` only.
        Runs shared by every line (a clean run) go through ``runtime.once``; target phases start with
        ``runtime.spawn``.
        """
        if self.line is None:
            raise NotImplementedError(f"scenario {self.name!r} defines neither run() nor line")
        return [self.line(target, point, settings, runtime)]

    def expand(self, target: Target, points: Sequence[str], settings: Settings, runtime: Runtime) -> list[str]:
        """The lines of ``points`` for ``target``, when some are known only after a clean run.

        every-boundary makes "after model-call 2" of "after" for each boundary its clean run passed;
        by default each point is one line.
        """
        return list(points)

    def has_line(self, target: Target, point: str) -> bool:
        """Whether ``point`` makes a line for ``target`` in a finding that lists it for several targets (tool-error's
        parallel-one-raised needs a target with two tool calls in one turn). By default every point does; asked
        for on the command line, a point without a line for the target is that line's ERROR, saying why."""
        return True

    def points_for(self, points: Sequence[str], settings: Settings) -> list[str]:
        """The points asked for (``--point``; none: the defaults) as this scenario reads them with ``settings``.

        Raises :class:`~plugpull.errors.UsageError` for points and options that contradict each other
        (every-boundary: ``--point random`` needs ``--random-kills``).
        """
        return list(points)

    # --- its own options ------------------------------------------------------------------------------

    def add_options(self, parser: Any) -> None:
        """Add its own options to the command line (an ``argparse`` parser), as ``pytest_addoption`` does for a
        pytest plugin: one argument group, one flag per field of :attr:`Options`. Each is stored under
        :meth:`dest` with None as its default, so the CLI knows which were given (:meth:`options_given`)."""
        if self.Options is None:
            return
        group = parser.add_argument_group(f"{self.name} options")
        for f in dataclasses.fields(self.Options):
            meta = f.metadata
            shown = f"{self.name}: {meta['help']}"
            if isinstance(f.default, bool):
                group.add_argument(meta["flag"], dest=self.dest(f.name), action="store_true", default=None, help=shown)
                continue
            group.add_argument(
                meta["flag"],
                dest=self.dest(f.name),
                type=type(f.default),
                choices=meta["choices"],
                default=None,
                metavar=None if meta["choices"] else ("N" if type(f.default) is int else f.name.upper()),
                help=f"{shown} (default {f.default})",
            )

    def dest(self, field: str) -> str:
        """Where argparse keeps option ``field``: the scenario's name with it, so no two scenarios' options meet."""
        return f"{self.name}:{field}"

    def options_given(self, args: Any) -> dict[str, Any]:
        """The own options given on a command line (an argparse namespace), by field."""
        if self.Options is None:
            return {}
        given = {f.name: getattr(args, self.dest(f.name), None) for f in dataclasses.fields(self.Options)}
        return {name: value for name, value in given.items() if value is not None}

    def flag(self, field: str) -> str:
        return next(f.metadata["flag"] for f in dataclasses.fields(self.Options) if f.name == field)

    def options_from(self, values: Mapping[str, Any]) -> Any:
        """Its :attr:`Options` with ``values`` (fields by name) over the defaults; bad values are a
        :class:`~plugpull.errors.UsageError` of one line naming the flag."""
        fields = {f.name: f for f in dataclasses.fields(self.Options)} if self.Options is not None else {}
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise UsageError(f"{self.name} has no option {unknown[0]!r}; its options: {', '.join(fields) or 'none'}")
        for name, value in values.items():
            meta = fields[name].metadata
            if meta["least"] is not None and (not isinstance(value, int) or value < meta["least"]):
                raise UsageError(f"{meta['flag']} must be a whole number >= {meta['least']}")
            if meta["choices"] is not None and value not in meta["choices"]:
                raise UsageError(f"{meta['flag']} {value!r}: one of {', '.join(map(str, meta['choices']))}")
        return self.Options(**values)

    def line_settings(self, settings: Settings, target: Target) -> Settings:
        """``settings`` for one of ``target``'s lines: a target option named as a field of :attr:`Options` sets it for
        that line (a finding's power-loss line carries its cut so: ``power_cut = "lazyfs"``), so one record holds
        the same variant under several values as separate lines."""
        names = {f.name for f in dataclasses.fields(self.Options)} if self.Options is not None else set()
        given = {name: value for name, value in target.options.items() if name in names}
        if not given:
            return settings
        values = {**dataclasses.asdict(self.own(settings)), **given}
        return dataclasses.replace(settings, options={**settings.options, self.name: self.options_from(values)})

    def own(self, settings: Settings) -> Any:
        """This run's values of its own options: ``settings.options[name]``, else the defaults."""
        mine = settings.options.get(self.name)
        return mine if mine is not None else self.Options()

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
    def holds_calls(self) -> bool:
        """One of its faults holds an effect call in the provider, so ``--hold`` chooses which."""
        return any(getattr(f, "holds_call", False) for f in self.faults)

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
    aim_fields = set(AIM_FIELDS)
    if not set(scenario.options) <= aim_fields - {"hold"}:
        problems.append(
            f"options {sorted(scenario.options)!r} must be among {sorted(aim_fields - {'hold'})} "
            "(hold: a fault that holds a call)"
        )
    if not set(scenario.refuses) <= aim_fields:
        problems.append(f"refuses {sorted(scenario.refuses)!r} must be among {sorted(aim_fields)}")
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
    problems += _options_problems(scenario)
    if scenario.lines_per is not None:
        fields = {f.name for f in dataclasses.fields(scenario.Options)} if scenario.Options is not None else set()
        if scenario.finding_parameter is None or scenario.lines_per not in fields:
            problems.append("lines_per needs a finding_parameter and must be a field of its Options")
    if not scenario.views or not all(isinstance(v, str) and v for v in scenario.views):
        problems.append("views must name at least one view of a finding's notebook")
    if type(scenario).run is Scenario.run and not callable(scenario.line):
        problems.append("neither run() nor line is defined")
    if not scenario.fault:
        problems.append("fault is empty: say in one line what breaks the run")
    if not all(isinstance(f, type) and getattr(f, "name", "") for f in scenario.faults):
        problems.append("faults must be fault classes with a name (plugpull.scenarios.faults.Fault)")
    if problems:
        raise ScenarioError(f"scenario {name!r} breaks the contract: " + "; ".join(problems))


def _options_problems(scenario: Scenario) -> list[str]:
    """What is wrong with a scenario's own options (Scenario.Options), as verify says it."""
    options = scenario.Options
    if options is None:
        return []
    if not dataclasses.is_dataclass(options) or not options.__dataclass_params__.frozen:
        return ["Options must be a frozen dataclass"]
    problems = []
    settings = {f.name for f in dataclasses.fields(Settings)} | set(AIM_FIELDS)
    for f in dataclasses.fields(options):
        meta = f.metadata
        if not str(meta.get("flag", "")).startswith("--") or not meta.get("help"):
            problems.append(f"option {f.name!r} needs a flag and a help line: make it with plugpull.scenarios.option")
        elif f.default is dataclasses.MISSING:
            problems.append(f"option {f.name!r} needs a default")
        if f.name in settings:
            problems.append(f"option {f.name!r} is a Settings or an Aim field already")
    return problems


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
        # A notebook sets an option by a parameter named as its field and the command line by its flag: one
        # scenario's each, or two scenarios would read one value.
        mine = {(f.name, f.metadata["flag"]) for f in dataclasses.fields(scenario.Options or _NoOptions)}
        for other in self._scenarios.values():
            theirs = {(f.name, f.metadata["flag"]) for f in dataclasses.fields(other.Options or _NoOptions)}
            clash = {n for n, _ in mine} & {n for n, _ in theirs} or {g for _, g in mine} & {g for _, g in theirs}
            if clash:
                raise ScenarioError(
                    f"scenario {scenario.name!r}: option {sorted(clash)[0]!r} is {other.name}'s already"
                )
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


@dataclasses.dataclass(frozen=True)
class _NoOptions:
    """The Options of a scenario that has none."""


_UNKNOWN = Scenario()
