"""lost-session-write on the real OpenAI Agents SDK (the default pin): real RunState, real Runner.

openai/openai-agents-python#4775: the staged input is appended, and only then cleared from
the RunState, so a retry after a lost acknowledgement appends it again.
"""

import importlib.metadata

import pytest

import shared_forks
from installed import requires
from plugpull import suite
from plugpull.checks import prove_probe
from plugpull.results import Verdict
from plugpull.scenarios import Runtime, Settings
from plugpull.scenarios.lost_session_write import run_probe
from plugpull.targets import BUILT_INS

pytestmark = [requires("agents"), shared_forks.group("agents")]


APP = BUILT_INS["openai-agents"].variants[0]
FAST = Settings(timeout=60)
PIN = "0.22.2"


@pytest.fixture(scope="module")
def runtime():
    """The module's tests share the probe, and fork the app from a server that imported the Agents SDK once
    (tests/shared_forks.py; each phase is still a process of its own; the cold start is the CLI tests' and the
    witness's)."""
    with Runtime(forks=shared_forks.FORKS) as runtime:
        yield runtime


@pytest.fixture(scope="module")
def results(runtime):
    return {r.point: r for r in suite.run_scenario(APP, settings=FAST, runtime=runtime)}


def test_the_probe_finds_that_only_the_admission_write_carries_the_staged_input(runtime):
    probe, announced = run_probe(APP, FAST, runtime)
    assert prove_probe(probe) is None
    # user input, tool call, tool output (approved on resume), staged input, final answer
    assert [w["method"] for w in probe.writes] == ["add_items"] * 5
    assert probe.carrying == [4]


@pytest.mark.skipif(importlib.metadata.version("openai-agents") != PIN, reason=f"the finding's numbers are for {PIN}")
def test_a_lost_write_is_appended_once_by_the_resumed_run(results):
    r = results["write-lost"]
    assert r.verdict is Verdict.PASS, r.message
    assert r.message == (
        "write 4: staged input stored once; every other item of the probe's session (4) stored once, none beyond it"
    )
    # The golden session names the run's own tokens and ids, so the probe's items match this run's.
    assert sorted(r.evidence["golden"]) == [
        "function_call:<run value 2>",
        "function_call_output:<run value 2>",
        "message:assistant:Refunded A-1001 (1 later note(s) read; reply <run value 3>).",
        "message:user:Also email the receipt to the customer. [staged-input <staged input>]",
        "message:user:Refund order A-1001, please. [run <run value 1>]",
    ]
    assert r.notes == []
    assert r.evidence["start"]["returncode"] == 1 and r.evidence["resume"]["returncode"] == 0


@pytest.mark.skipif(importlib.metadata.version("openai-agents") != PIN, reason=f"the finding's numbers are for {PIN}")
def test_a_lost_ack_duplicates_the_staged_input_and_cites_4775(results):
    r = results["ack-lost"]
    assert r.verdict is Verdict.FAIL
    assert r.message == "write 4: staged input duplicated: stored 2 times after resume (expected 1)"
    assert [n["url"] for n in r.notes] == [
        "https://github.com/openai/openai-agents-python/issues/4775",
        "https://openai.github.io/openai-agents-python/results/#add-input-before-resuming",
    ]
    assert "one durable InputItem occurrence" in r.notes[1]["text"]
    assert r.evidence["staged_stored"] == 2 and r.version == PIN
    assert [w["number"] for w in r.evidence["writes"] if w["phase"] == "start"] == [1, 2, 3, 4]
