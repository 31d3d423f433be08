"""The Restate witness (findings/kill-mid-tool-more-frameworks/witness/): restate-sdk, hypercorn and a real
restate-server only, the service's own SIGKILL inside a ctx.run action, alone or with the server's.

One line runs cold through the report's witness runner, each service a new interpreter, as a reader and the records
run it: the server crash, whose cold path also hands the server's process group to the service in its environment.
The other three run with ``--fork`` (each service forked from the witness, SIGKILLed for real), the witness itself
forked from the module's server that imported restate-sdk and hypercorn once (witness_server): a cold line costs two
service interpreters, and the server, requests and verdict code are the same either way.
"""

import importlib.metadata
import shutil
import sys
from pathlib import Path

import pytest

from installed import requires
from plugpull.report.harness.witness import run_once
from witness_server import WitnessServer

pytestmark = [requires("restate", "hypercorn"), pytest.mark.witness]
if shutil.which("restate-server") is None:
    pytest.skip("restate-server is not on PATH (npm install -g @restatedev/restate-server)", allow_module_level=True)

SCRIPT = Path(__file__).parents[2] / "findings" / "kill-mid-tool-more-frameworks" / "witness" / "restate_kill_action.py"


@pytest.fixture(scope="module")
def server():
    with WitnessServer([SCRIPT]) as server:
        yield server


@pytest.mark.parametrize(
    "point, crash, fork, code, verdict, refunds",
    [
        ("before-effect", "service", True, 0, "PASS", 1),
        ("after-effect", "service", True, 1, "FAIL", 2),
        ("before-effect", "server", True, 0, "PASS", 1),
        ("after-effect", "server", False, 1, "FAIL", 2),
    ],
    ids=[
        "before-effect-service-forked",
        "after-effect-service-forked",
        "before-effect-server-forked",
        "after-effect-server-cold",
    ],
)
def test_restate_runs_the_action_in_flight_again_whether_the_server_lived_or_restarted(
    request, point, crash, fork, code, verdict, refunds
):
    args = ["--point", point, "--crash", crash]
    if fork:
        run = request.getfixturevalue("server").run(SCRIPT, *args, "--fork")
    else:
        run = run_once([sys.executable, str(SCRIPT), *args], timeout=300)
    out = run["output"]
    assert out is not None, run
    assert (out["witness"], out["version"]) == ("restate_kill_action", importlib.metadata.version("restate-sdk"))
    assert (run["exit_code"], out["verdict"], out["counts"]) == (code, verdict, {"refund": refunds}), run
