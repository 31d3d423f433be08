"""A scenario written in the tests runs through plugpull unchanged: one module plus its checks.

interrupt_mid_tool.py (the scenario) and interrupt_checks.py (its checks) are registered here and run
through the suite, the command line (in-process main), the renderings and JUnit against real agent
processes that get a real SIGINT. Its checks are judged on hand-built evidence first.
"""

import json
import shlex
import signal
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from interrupt_checks import InterruptEvidence, judge_interrupt_mid_tool
from interrupt_mid_tool import NAME, SCENARIO

from plugpull import cli, suite
from plugpull.evidence import Outcome
from plugpull.results import Verdict
from plugpull.scenarios import Runtime, Settings
from plugpull.scenarios.registry import REGISTRY

AGENTS = Path(__file__).parent.parent / "agents"


def ended(returncode: int) -> Outcome:
    return Outcome(argv=["agent"], returncode=returncode)


def evidence(**changes) -> InterruptEvidence:
    """An interrupt that landed in the held charge and a resume that finished: the passing case."""
    ev = InterruptEvidence(
        point="interrupted-after-effect",
        timeout=30,
        clean=ended(0),
        owed={"charge": 1},
        held="charge",
        start=ended(-signal.SIGINT),
        asleep=True,
        resume=ended(0),
        counts={"charge": 1},
    )
    return replace(ev, **changes)


def test_one_charge_after_the_resume_passes():
    assert judge_interrupt_mid_tool(evidence()).verdict is Verdict.PASS


def test_a_charge_done_again_by_the_resume_fails_as_duplicated():
    judgement = judge_interrupt_mid_tool(evidence(counts={"charge": 2}))
    assert (judgement.verdict, judgement.message) == (
        Verdict.FAIL,
        "effect duplicated: the provider saw 2 charge (expected 1)",
    )


def test_a_charge_nobody_made_after_the_interrupt_fails_as_lost():
    judgement = judge_interrupt_mid_tool(evidence(counts={}))
    assert judgement.verdict is Verdict.FAIL and judgement.message.startswith("effect lost")


def test_an_agent_that_caught_the_interrupt_and_finished_is_an_error_not_a_pass():
    judgement = judge_interrupt_mid_tool(evidence(start=ended(0)))
    assert judgement.verdict is Verdict.ERROR and "exit code 0" in judgement.message


def test_a_start_that_timed_out_after_an_interrupt_sent_before_it_slept_in_the_call_says_so():
    judgement = judge_interrupt_mid_tool(evidence(start=replace(ended(-signal.SIGKILL), timed_out=True), asleep=False))
    assert judgement.verdict is Verdict.ERROR
    assert judgement.message.startswith("start was interrupted inside charge before its process slept in the call")


def test_a_start_that_slept_in_the_call_and_still_timed_out_is_an_error_about_the_agent():
    judgement = judge_interrupt_mid_tool(evidence(start=replace(ended(-signal.SIGKILL), timed_out=True)))
    assert judgement.verdict is Verdict.ERROR
    assert judgement.message == "start was interrupted inside charge but timed out"


def test_nothing_held_is_an_error():
    judgement = judge_interrupt_mid_tool(evidence(held=None, start=ended(0)))
    assert (judgement.verdict, judgement.show) == (Verdict.ERROR, "start")


def test_a_resume_that_crashed_is_an_error_showing_its_output():
    judgement = judge_interrupt_mid_tool(evidence(resume=ended(1)))
    assert (judgement.verdict, judgement.message, judgement.show) == (Verdict.ERROR, "resume exit code 1", "resume")


def test_a_failed_clean_run_is_an_error():
    assert judge_interrupt_mid_tool(evidence(clean=ended(2))).verdict is Verdict.ERROR


@pytest.fixture
def registered():
    with REGISTRY.registered(SCENARIO) as scenario:
        yield scenario
    assert NAME not in REGISTRY


def fake_framework(body: str, forked: bool = False):
    """The fake framework under this scenario; ``forked``: as ``python -m``, for a runtime with the module's fork
    server (tests/forked_agents.py), whose child runs Python's own SIGINT handler as a cold interpreter does."""
    from plugpull.targets import agent

    script = ["-m", "fake_framework"] if forked else [str(AGENTS / "fake_framework.py")]
    return agent(shlex.join([sys.executable, *script, body]), NAME)


def test_the_suite_runs_it_against_real_processes_interrupted_inside_the_held_call(registered, agent_forks):
    runtime = Runtime(forks=agent_forks)
    no_key = suite.run_scenario(fake_framework("no-key", forked=True), settings=Settings(timeout=30), runtime=runtime)
    keyed = suite.run_scenario(
        fake_framework("stable-key", forked=True), settings=Settings(timeout=30), runtime=runtime
    )
    assert [(r.point, r.verdict) for r in no_key] == [
        ("interrupted-before-effect", Verdict.PASS),
        ("interrupted-after-effect", Verdict.FAIL),
    ]
    assert [r.verdict for r in keyed] == [Verdict.PASS, Verdict.PASS]
    for result in no_key + keyed:
        assert result.scenario == NAME
        assert result.evidence["start"]["returncode"] == -signal.SIGINT
        assert result.evidence["held"] == "charge"
        assert result.evidence["asleep"] is True
    # The agent's own KeyboardInterrupt ran: its traceback is under the interrupted start.
    assert "KeyboardInterrupt" in no_key[1].evidence["start"]["stderr"]


@pytest.fixture(params=["ignored", "blocked"])
def sigint_off_in_the_harness(request):
    """The harness as a script's background job (``cmd &`` without job control) or a CI runner may start it."""
    if request.param == "ignored":
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        yield
        signal.signal(signal.SIGINT, previous)
    else:
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
        yield
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


def test_a_harness_with_sigint_ignored_or_blocked_still_interrupts_the_target(registered, sigint_off_in_the_harness):
    # Both survive exec, so without process.sigint_reset the target would never see the SIGINT and
    # interrupted-before-effect would be an ERROR about the launcher, not the framework. Cold: what is proven is
    # what an exec'd target inherits.
    results = suite.run_scenario(fake_framework("no-key"), settings=Settings(timeout=30), runtime=Runtime())
    assert [(r.point, r.verdict) for r in results] == [
        ("interrupted-before-effect", Verdict.PASS),
        ("interrupted-after-effect", Verdict.FAIL),
    ]
    assert all(r.evidence["start"]["returncode"] == -signal.SIGINT for r in results)


def test_the_command_line_knows_it_without_a_change(registered, plugpull_forking, tmp_path):
    command = shlex.join([sys.executable, "-m", "fake_framework", "no-key"])
    junit = tmp_path / "report.xml"
    argv = ["--agent", command, "--scenario", NAME, "--point", "interrupted-after-effect", "--hold", "charge"]
    run = plugpull_forking(*argv)
    out = run.stdout.splitlines()
    assert run.returncode == 0
    # The line shows the held call and, under the FAIL, what resume asked for (the scenario's own hints).
    assert out[0].startswith(f"FAIL   {NAME}  interrupted-after-effect charge#1  ")
    assert out[0].endswith("effect duplicated: the provider saw 2 charge (expected 1)")
    assert out[1] == "    resume called charge once"
    run = plugpull_forking("--agent", command, "--scenario", NAME, "--json", "--junit", str(junit))
    doc = json.loads(run.stdout)
    # With the messages: a line that is not what it should be shows why (an ERROR's reason).
    assert [(r["scenario"], r["point"], r["verdict"], r["message"]) for r in doc["results"]] == [
        (NAME, "interrupted-before-effect", "PASS", "the provider saw exactly 1 charge"),
        (NAME, "interrupted-after-effect", "FAIL", "effect duplicated: the provider saw 2 charge (expected 1)"),
    ]
    (testsuite,) = ET.parse(junit).getroot()
    assert (testsuite.get("name"), testsuite.get("tests"), testsuite.get("failures")) == (NAME, "2", "1")


def test_the_command_line_refuses_what_it_does_not_read(registered, capsys):
    command = shlex.join([sys.executable, "-c", "pass"])
    code = cli.main(["--agent", command, "--scenario", NAME, "--hold", "charge", "--sibling", "email:running"])
    assert code == 2
    assert (
        capsys.readouterr().err.strip()
        == "plugpull: --sibling applies to kill-mid-tool, tool-error; no selected target runs one"
    )
    code = cli.main(["--agent", command, "--scenario", NAME, "--point", "before-effect"])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "plugpull: --point before-effect is not a point of the selected scenario: "
        f"{NAME} has interrupted-before-effect, interrupted-after-effect"
    )


def test_unregistered_it_is_unknown_to_the_command_line(capsys):
    assert cli.main(["--agent", "python x.py", "--scenario", NAME]) == 2
    assert f"invalid choice: '{NAME}'" in capsys.readouterr().err


def test_its_own_option_reaches_the_command_line_json_and_junit_through_add_options(
    registered, plugpull_forking, tmp_path
):
    # --interrupt-signal is declared in interrupt_mid_tool.py only (Options, added by Scenario.add_options).
    command = shlex.join([sys.executable, "-m", "fake_framework", "no-key"])
    junit = tmp_path / "report.xml"
    argv = ["--agent", command, "--scenario", NAME, "--interrupt-signal", "SIGTERM", "--json", "--junit", str(junit)]
    run = plugpull_forking(*argv)
    assert run.returncode == 0, run.stdout
    results = json.loads(run.stdout)["results"]
    assert [(r["point"], r["verdict"]) for r in results] == [
        ("interrupted-before-effect", "PASS"),
        ("interrupted-after-effect", "FAIL"),
    ]
    # SIGTERM's default action ends start without Python's KeyboardInterrupt: the signal sent was the option's.
    assert {r["evidence"]["signal"] for r in results} == {"SIGTERM"}
    assert {r["evidence"]["start"]["returncode"] for r in results} == {-signal.SIGTERM}
    assert all("KeyboardInterrupt" not in r["evidence"]["start"]["stderr"] for r in results)
    (testsuite,) = ET.parse(junit).getroot()
    assert (testsuite.get("name"), testsuite.get("tests"), testsuite.get("failures")) == (NAME, "2", "1")


def test_its_own_option_is_refused_where_it_changes_nothing_and_checked_as_declared(registered, capsys):
    command = shlex.join([sys.executable, "-c", "pass"])
    assert cli.main(["--agent", command, "--interrupt-signal", "SIGTERM"]) == 2
    assert (
        capsys.readouterr().err.strip() == f"plugpull: --interrupt-signal applies to {NAME}; no selected target runs it"
    )
    assert cli.main(["--agent", command, "--scenario", NAME, "--interrupt-signal", "SIGHUP"]) == 2
    assert "invalid choice: 'SIGHUP'" in capsys.readouterr().err


def test_a_notebook_sets_its_own_option_by_a_parameter_named_as_the_field(registered, agent_forks):
    from plugpull.report.kernel import notebook

    owned = notebook.scenario_options({"repeats": 1, "interrupt_signal": "SIGTERM"})
    assert owned == {NAME: SCENARIO.Options(interrupt_signal="SIGTERM")}
    results, _ = notebook.run_lines(
        [fake_framework("no-key", forked=True)], ["interrupted-after-effect"], 1, None, 30.0, scenario_options=owned
    )
    assert [(r.verdict, r.evidence["signal"], r.evidence["start"]["returncode"]) for r in results] == [
        (Verdict.FAIL, "SIGTERM", -signal.SIGTERM)
    ]
