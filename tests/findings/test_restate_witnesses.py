"""The Restate witness (findings/kill-mid-tool-more-frameworks/witness/): restate-sdk, hypercorn and a real
restate-server only, the service's own SIGKILL inside a ctx.run action, alone or with the server's."""

import importlib.metadata
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from installed import requires

pytestmark = [requires("restate", "hypercorn"), pytest.mark.witness]
if shutil.which("restate-server") is None:
    pytest.skip("restate-server is not on PATH (npm install -g @restatedev/restate-server)", allow_module_level=True)

SCRIPT = Path(__file__).parents[2] / "findings" / "kill-mid-tool-more-frameworks" / "witness" / "restate_kill_action.py"


@pytest.mark.parametrize("crash", ["service", "server"])
@pytest.mark.parametrize(
    "point, code, verdict, refunds", [("before-effect", 0, "PASS", 1), ("after-effect", 1, "FAIL", 2)]
)
def test_restate_runs_the_action_in_flight_again_whether_the_server_lived_or_restarted(
    tmp_path, crash, point, code, verdict, refunds
):
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--point", point, "--crash", crash],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert (out["witness"], out["version"]) == ("restate_kill_action", importlib.metadata.version("restate-sdk"))
    assert (run.returncode, out["verdict"], out["counts"]) == (code, verdict, {"refund": refunds}), (out, run.stderr)
