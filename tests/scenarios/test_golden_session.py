"""lost-session-write's fault-free baseline with real processes: the probe's session is the golden one."""

import pytest

from plugpull import suite
from plugpull.results import Verdict
from plugpull.scenarios import Runtime, Settings

FAST = Settings(timeout=30)


@pytest.fixture(scope="module")
def runtime(agent_forks):
    """The module's tests share their probes; the app's phases fork from the module's server (tests/forked_agents.py)."""
    return Runtime(forks=agent_forks)


def test_a_store_target_that_duplicates_without_a_fault_fails_and_its_other_probe_line_is_moot(session_app, runtime):
    results = suite.run_scenario(session_app("duplicates"), settings=FAST, runtime=runtime)
    # One probe line per point asked for (both points share the one probe): the first fails, the second is moot.
    assert [(r.point, r.verdict) for r in results] == [("probe", Verdict.FAIL), ("probe", Verdict.FAIL)]
    assert results[0].message.startswith("without any fault: item duplicated: the probe (every store call answered) ")
    assert "message:assistant:Refunded A-1001. x2" in results[0].message
    assert results[1].message == "moot: the clean run already failed without any fault (see probe)"


def test_a_resumed_session_equal_to_the_probe_passes_at_both_points(session_app, runtime):
    results = suite.run_scenario(session_app("correct"), settings=FAST, runtime=runtime)
    assert [(r.point, r.verdict) for r in results] == [("write-lost", Verdict.PASS), ("ack-lost", Verdict.PASS)]
    assert results[0].message == (
        "write 2: staged input stored once; every other item of the probe's session (2) stored once, none beyond it"
    )
    # The run id differs per run and is named, so the probe's items match this run's.
    assert "message:user:Refund order A-1001. [run <run value 1>]" in results[0].evidence["golden"]


def test_an_item_the_fault_free_run_never_stores_fails_as_beyond_the_session(session_app, runtime):
    results = suite.run_scenario(session_app("extra-on-resume"), settings=FAST, runtime=runtime)
    assert {r.verdict for r in results} == {Verdict.FAIL}
    assert results[0].message == (
        "write 2: 1 item(s) beyond the probe's session: message:assistant:Resumed after a failure."
    )
