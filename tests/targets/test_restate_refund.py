"""Restate on real processes: a real restate-server (the npm package's binary) on loopback, the service's
process SIGKILLed inside a ctx.run action, alone (the server is plugpull's sidecar) or with the server.

Restate journals a ctx.run action's result once it returns; the action in flight when the process
died has none, and the server's retry runs it again.
"""

import signal
import subprocess

import pytest

from installed import requires
from plugpull import run_scenario
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.targets import BUILT_INS

pytestmark = requires("restate", "hypercorn")

SETTINGS = Settings(timeout=120)

absent = BUILT_INS["restate"].missing_program()
if absent is not None:
    pytest.skip(f"the Restate server cannot run here: {absent}", allow_module_level=True)


def variant(server: str, key: str):
    (target,) = [t for t in BUILT_INS["restate"].variants if t.options == {"server": server, "key": key}]
    return target


def servers_left() -> list[str]:
    """restate-server processes whose data directory is a plugpull workdir: what a run could leave behind."""
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if "restate-server" in line and "plugpull-work-" in line]


@pytest.mark.parametrize("server", ["sidecar", "in-run"])
def test_without_a_key_the_action_killed_after_its_effect_runs_again_on_the_retry(forked, server):
    before, after = run_scenario(variant(server, "none"), settings=SETTINGS, runtime=forked)
    assert before.verdict is Verdict.PASS, (before.message, before.stderr)
    shown = (after.message, after.stderr)
    assert after.evidence["start"]["returncode"] == -signal.SIGKILL, shown
    assert after.evidence["resume"]["returncode"] == 0, shown
    assert after.verdict is Verdict.FAIL, shown
    assert after.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")
    assert "refund action runs with key None" in after.stderr
    assert servers_left() == []


@pytest.mark.parametrize("server", ["sidecar", "in-run"])
def test_the_request_id_journaled_by_the_finished_action_keys_the_retried_refund_so_one_refund(forked, server):
    (result,) = run_scenario(variant(server, "journaled"), ["after-effect"], settings=SETTINGS, runtime=forked)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    start, resume = result.evidence["calls"]
    # draft draws a new request id each time it runs: the same key proves the server replayed its journaled
    # result, across a restart of the server itself for server=in-run.
    assert (start["phase"], resume["phase"]) == ("start", "resume")
    assert start["key"] == resume["key"] and start["key"].startswith("rf_")
    assert servers_left() == []


def test_a_sidecar_variant_names_its_serve_phase_and_the_in_run_one_none():
    assert {t.options["server"]: t.sidecar for t in BUILT_INS["restate"].variants} == {
        "sidecar": "serve",
        "in-run": None,
    }


@pytest.mark.parametrize("scenario", ["every-boundary", "power-loss"])
def test_scenarios_that_start_no_sidecar_leave_the_sidecar_variants_out_and_keep_the_in_run_ones(scenario):
    from plugpull.scenarios.registry import REGISTRY

    adopted = [REGISTRY.adopt(scenario, t) for t in BUILT_INS["restate"].variants]
    assert [t.options["server"] for t in adopted if t is not None] == ["in-run", "in-run"]


def test_a_phase_that_fails_before_its_service_starts_stops_without_hiding_why():
    # A resume whose in-run server exited while starting (seen once in a full run under load) crashed in its cleanup
    # with "cannot join thread before it is started", which replaced the server's own message in its stderr.
    from plugpull.targets.restate_refund import Service

    Service(port=1).stop()  # never started: nothing to join, nothing raised
