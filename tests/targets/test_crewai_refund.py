"""CrewAI Flows on real processes: real SIGKILL inside a flow method, @persist (SQLite), restore_from_state_id.

Not in CI (CrewAI is hundreds of MB and kept out of the default environment): runs where the
`crewai` extra is installed. restore_from_state_id hydrates a new run with the saved state and runs
the flow from its @start method again, so a finished method runs again on restore.
"""

import signal

from installed import requires
from plugpull import run_scenario
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.targets import BUILT_INS

pytestmark = requires("crewai")

SETTINGS = Settings(timeout=600)


def variant(key: str):
    (target,) = [t for t in BUILT_INS["crewai"].variants if t.options["key"] == key]
    return target


def test_restoring_the_saved_state_runs_the_finished_method_again_so_even_its_key_is_new(forked):
    (after,) = run_scenario(variant("checkpointed"), ["after-effect"], settings=SETTINGS, runtime=forked)
    assert after.evidence["start"]["returncode"] == -signal.SIGKILL
    assert after.evidence["resume"]["returncode"] == 0
    start, resume = after.evidence["calls"]
    # draft_refund drew a new request id on restore: the saved one was overwritten.
    assert start["key"] != resume["key"]
    assert after.verdict is Verdict.FAIL
    assert after.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")


def test_resume_of_a_finished_run_reports_its_result_and_refunds_nothing(forked):
    # The recovery protocol plugpull checks first: restoring a finished flow would run it again,
    # so the app remembers the run ended (tests/targets/test_recovery_protocol.py, in CrewAI's environment).
    from plugpull import checks
    from plugpull.evidence import KillEvidence, Outcome
    from plugpull.scenarios.kill_mid_tool import clean_run

    clean = clean_run(variant("none"), SETTINGS, forked)
    ev = KillEvidence(point="", start=Outcome(argv=[]), clean=clean, golden=list(clean.results))
    assert checks.check_clean_run(ev) is None
    assert clean.finished_effects == {} and clean.finished_results == clean.results
