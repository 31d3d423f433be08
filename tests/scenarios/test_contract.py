"""The scenario contract: a scenario that breaks it is refused when it is registered, with what breaks it;
the registry's defaults render results of scenarios it does not know; Settings holds options only."""

import threading
from dataclasses import dataclass, field

import pytest

from plugpull.checks import Judgement, error
from plugpull.errors import ScenarioError, UsageError
from plugpull.results import Result, Verdict
from plugpull.scenarios import Runtime, Settings, option
from plugpull.scenarios.contract import Recovery, Registry, Scenario
from plugpull.scenarios.faults import HeldCallKill
from plugpull.targets import Target


@dataclass
class Evidence:
    point: str

    def to_dict(self) -> dict:
        return {"point": self.point}


def judge(ev: Evidence) -> Judgement:
    return error("never run")


class Sound(Scenario):
    name = "sound"
    points = ("first", "second")
    default_points = ("first",)
    fault = "nothing at all"
    recovery = {"*": Recovery("resume", "resume")}
    evidence = Evidence
    checks = (judge,)

    def run(self, target: Target, point: str, settings: Settings, runtime: Runtime) -> list[Result]:
        return [Result(Verdict.ERROR, self.name, point, target.label(), "never run")]


@dataclass(frozen=True)
class Colour:
    colour: str = option("red", "--colour", "the colour of the fault", choices=("red", "blue"))


@dataclass(frozen=True)
class Tries:
    tries: int = option(3, "--tries", "how many tries", least=1)


@dataclass
class Unfrozen:
    colour: str = option("red", "--colour", "the colour")


@dataclass(frozen=True)
class Bare:
    colour: str = field(default="red")


@dataclass(frozen=True)
class Shadowing:
    timeout: float = option(1.0, "--timeout-again", "a Settings field's name")


def broken(**attributes) -> Scenario:
    return type("Broken", (Sound,), attributes)()


def test_a_sound_scenario_is_registered_and_found_by_name():
    registry = Registry([Sound()])
    assert registry.names() == ["sound"] and registry["sound"].points_by_default == ("first",)


@pytest.mark.parametrize(
    ("attributes", "says"),
    [
        ({"name": "Not A Name"}, "is not lowercase words joined by hyphens"),
        ({"points": ()}, "points () must be distinct words"),
        ({"points": ("a", "a")}, "must be distinct words"),
        ({"points": ("before model-call",)}, "must be distinct words"),
        ({"default_points": ("third",)}, "default_points ('third',) are not all among its points"),
        ({"options": frozenset({"colour"})}, "options ['colour'] must be among"),
        ({"options": frozenset({"hold"})}, "(hold: a fault that holds a call)"),
        ({"faults": (HeldCallKill,), "refuses": {"hold": "why"}}, "refuses an option it reads"),
        ({"faults": (object,)}, "faults must be fault classes with a name"),
        ({"faults": ("SIGKILL",)}, "faults must be fault classes with a name"),
        ({"selected_by": ("random_kills",)}, "selected_by names an option it does not read"),
        ({"recovery": {"third": Recovery("resume", "resume")}}, "recovery keys ['third'] are not points or '*'"),
        ({"recovery": {"*": ("resume", "resume")}}, "recovery values must be Recovery(phase, who)"),
        ({"checks": ()}, "checks must name at least one pure check"),
        ({"evidence": dict}, "evidence must be the dataclass its lines carry"),
        ({"run": Scenario.run}, "neither run() nor line is defined"),
        ({"fault": ""}, "fault is empty"),
        ({"kill_and_recover": ("start",)}, "kill_and_recover needs the killed phase and the recovering one"),
        ({"Options": Unfrozen}, "Options must be a frozen dataclass"),
        ({"Options": Bare}, "option 'colour' needs a flag and a help line"),
        ({"Options": Shadowing}, "option 'timeout' is a Settings or an Aim field already"),
    ],
)
def test_a_scenario_that_breaks_the_contract_is_refused_when_registered(attributes, says):
    registry = Registry()
    with pytest.raises(ScenarioError) as refused:
        registry.register(broken(**attributes))
    assert says in str(refused.value)
    assert registry.names() == []


def test_a_name_is_registered_once():
    registry = Registry([Sound()])
    with pytest.raises(ScenarioError, match="registered already"):
        registry.register(Sound())


def test_a_scenario_registered_for_a_block_is_gone_after_it():
    registry = Registry()
    with registry.registered(Sound()):
        assert "sound" in registry
    assert "sound" not in registry
    with pytest.raises(ScenarioError, match="unknown scenario 'sound'; known: "):
        registry["sound"]


def test_the_points_of_every_scenario_are_listed_once_in_order():
    registry = Registry([Sound(), broken(name="other", points=("second", "third"), default_points=())])
    assert registry.points() == ["first", "second", "third"]


def test_by_default_a_line_shows_its_held_call_and_summarises_its_recovery_phase():
    calls = [
        {"seq": 1, "phase": "start", "name": "refund", "key": None, "recorded": True, "held_at": 1.0},
        {"seq": 2, "phase": "resume", "name": "refund", "key": None, "recorded": True, "held_at": None},
    ]
    result = Result(Verdict.FAIL, "sound", "first", "t", "m", evidence={"calls": calls})
    assert Sound().shown_point(result) == "first refund#1"
    assert Sound().call_summary(result) == "resume called refund once"
    assert Scenario().call_summary(result) is None  # no recovery phase declared: no summary line


def test_by_default_an_agent_command_is_one_target_of_the_scenario_and_a_built_in_runs_as_made():
    (target,) = Sound().agents(["python agent.py --fast"])
    assert (target.argv, target.scenario) == (("python", "agent.py", "--fast"), "sound")
    built_in = Target(name="x", argv=("x",))
    assert Sound().adopt(built_in, None) is built_in


def test_settings_hold_options_only_and_the_runtime_holds_what_a_run_builds():
    settings = Settings(timeout=5)
    with pytest.raises(AttributeError):
        settings.forks = object()  # fork servers are the Runtime's
    assert settings.aimed(hold=("refund", 1)).aim.hold == ("refund", 1) and settings.aim.hold is None
    runtime, computed = Runtime(), []

    def compute():
        computed.append(1)
        return len(computed)

    threads = [threading.Thread(target=lambda: runtime.once(("clean",), compute)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert runtime.once(("clean",), compute) == runtime.once(("clean",), lambda: "never")
    assert Runtime().once(("clean",), lambda: "fresh") == "fresh"  # another run shares nothing


def test_a_scenarios_own_options_are_read_with_their_defaults_and_checked_as_declared():
    scenario = broken(name="colourful", Options=Tries)
    assert scenario.own(Settings()) == Tries(3)
    assert scenario.own(Settings(options={"colourful": Tries(5)})) == Tries(5)
    assert scenario.options_from({"tries": 2}) == Tries(2)
    with pytest.raises(UsageError, match=r"^--tries must be a whole number >= 1$"):
        scenario.options_from({"tries": 0})
    with pytest.raises(UsageError, match="colourful has no option 'colour'; its options: tries"):
        scenario.options_from({"colour": "red"})


def test_two_scenarios_cannot_own_one_option():
    registry = Registry([broken(name="one", Options=Colour)])
    with pytest.raises(ScenarioError, match="option 'colour' is one's already"):
        registry.register(broken(name="two", Options=Colour))
