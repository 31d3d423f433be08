"""DBOS on real processes: real SIGKILL inside a @DBOS.step, SQLite system database, recovery in DBOS.launch().

DBOS docs: a recovered workflow resumes from its last completed step (its saved output is
used); the step in flight runs again.
"""

import dataclasses
import re
import signal

import pytest

from dbos_recovery import pending_watch
from installed import requires
from plugpull import run_scenario
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.targets import BUILT_INS
from plugpull.targets.families.dbos import DBOS_VERSION_NOT_RECOVERED

pytestmark = requires("dbos")

SETTINGS = Settings(timeout=90)


def variant(name: str, key: str):
    (target,) = [t for t in BUILT_INS[name].variants if t.options.get("key") == key]
    return target


# Seconds from DBOS.launch() to the recovered workflow's SUCCESS, as the same-version resumes of this module said.
RECOVERIES: list[float] = []
RECOVERED = re.compile(r"resume: workflow \S+ is SUCCESS ([0-9.]+)s after launch")


def recovered_in(stderr: str) -> float:
    (seconds,) = RECOVERED.findall(stderr)
    return float(seconds)


@pytest.fixture(scope="module")
def watch_pending(forked) -> float:
    """How long resume watches another application version's workflow stay PENDING (the target's --recovery-wait;
    dbos_recovery)."""
    if not RECOVERIES:  # selected alone: measure a same-version recovery first
        (after,) = run_scenario(variant("dbos", "none"), ["after-effect"], settings=SETTINGS, runtime=forked)
        RECOVERIES.append(recovered_in(after.stderr))
    return pending_watch(RECOVERIES)


def test_without_a_key_the_killed_step_runs_again_and_refunds_twice_after_the_effect(forked):
    before, after = run_scenario(variant("dbos", "none"), settings=SETTINGS, runtime=forked)
    assert before.verdict is Verdict.PASS, (before.message, before.stderr)
    RECOVERIES.append(recovered_in(after.stderr))  # a FAIL line: it shows resume's stderr
    assert after.evidence["start"]["returncode"] == -signal.SIGKILL
    assert after.evidence["resume"]["returncode"] == 0
    assert after.verdict is Verdict.FAIL
    assert after.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")


def test_a_key_drawn_in_the_finished_step_is_replayed_from_the_system_database_so_one_refund(forked):
    for result in run_scenario(variant("dbos", "checkpointed"), ["after-effect"], settings=SETTINGS, runtime=forked):
        assert result.verdict is Verdict.PASS, (result.point, result.message, result.stderr)
        start, resume = result.evidence["calls"]
        # draft_refund draws a new request id each time it runs: the same key proves its saved
        # result was used, not a re-run.
        assert (start["phase"], resume["phase"]) == ("start", "resume")
        assert start["key"] == resume["key"] and start["key"].startswith("rf_")


def test_a_recovering_process_of_another_application_version_leaves_the_workflow_pending(forked, watch_pending):
    (changed,) = [t for t in BUILT_INS["dbos"].variants if t.options.get("app_version") == "changed"]
    changed = dataclasses.replace(changed, argv=(*changed.argv, "--recovery-wait", str(watch_pending)))
    (after,) = run_scenario(changed, ["after-effect"], settings=SETTINGS, runtime=forked)
    assert after.evidence["start"]["returncode"] == -signal.SIGKILL
    assert after.evidence["resume"]["returncode"] == 0
    assert after.evidence["counts"] == {"refund": 1}
    assert after.verdict is Verdict.FAIL
    assert after.message == "run did not finish: resume exited 0 without a result"
    assert f"is still PENDING after {watch_pending:g}s: not recovered (recorded under version refunds-1" in after.stderr
    assert [note["text"] for note in after.notes] == [DBOS_VERSION_NOT_RECOVERED.text]
