"""The Node client (clients/js) against plugpull's real channel server: its own `node --test` suite, run here.

The suite starts clients/js/test/harness.py (plugpull.channel.Channel) with this interpreter, so it tests the
client against the server every scenario runs; without Node the test skips, saying why (.ci/run installs
Debian's nodejs when it is missing).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parent.parent / "clients" / "js"


def test_the_node_client_passes_its_own_suite_against_the_real_server():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH: the Node client's tests need Node 18 or later (.ci/run installs nodejs)")
    files = sorted(str(p) for p in (CLIENT / "test").glob("*.test.mjs"))
    assert files, "clients/js/test has no *.test.mjs"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUGPULL_")}
    env["PLUGPULL_PYTHON"] = sys.executable
    proc = subprocess.run(
        [node, "--test", *files], cwd=CLIENT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    summary = dict(re.findall(r"^# (pass|fail|cancelled) (\d+)$", proc.stdout, re.M))
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert int(summary.get("pass", 0)) >= 15 and summary.get("fail") == "0", proc.stdout[-3000:]
