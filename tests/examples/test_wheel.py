"""What an installed plugpull ships of the examples: the agents to copy, not README's failing pytest example."""

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.network
def test_the_wheel_ships_the_example_agents_and_the_targets_but_not_the_failing_pytest_example(tmp_path):
    if shutil.which("uv") is None:
        pytest.skip("uv is not on PATH")
    build = subprocess.run(
        ["uv", "build", "--wheel", "--out-dir", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=300
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = tmp_path.glob("plugpull-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert (ROOT / "src/plugpull/examples/test_refund_agent.py").exists()
    assert "plugpull/examples/test_refund_agent.py" not in names
    assert "plugpull/examples/openai_agents_refund_approval.py" in names
    assert {"plugpull/targets/langgraph_refund.py", "plugpull/targets/families/langgraph.py"} <= names
