"""The pytest plugin as a user meets it: a test file of theirs, run by pytest in its own process, with the
plugin found through its pytest11 entry point and plugpull run for real on a tiny fake framework."""

import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

AGENTS = Path(__file__).parent / "agents"
COMMAND = shlex.join([sys.executable, str(AGENTS / "fake_framework.py"), "no-key"])
KEYED = shlex.join([sys.executable, str(AGENTS / "fake_framework.py"), "stable-key"])


def pytest_on(source: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_user_agent.py").write_text(textwrap.dedent(source))
    work = tmp_path / "tmp"
    work.mkdir()
    env = {**os.environ, "TMPDIR": str(work), "COLUMNS": "400"}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfE", *args, "test_user_agent.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_a_passing_agent_passes_and_a_failing_one_fails_with_its_result_line(tmp_path):
    run = pytest_on(
        f"""
        def test_keyed_charge_survives_a_crash(plugpull_run):
            assert all(r.verdict == "PASS" for r in plugpull_run({KEYED!r}))

        def test_unkeyed_charge_survives_a_crash(plugpull_run):
            assert all(r.verdict == "PASS" for r in plugpull_run({COMMAND!r}))
        """,
        tmp_path,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    out = run.stdout
    assert "1 failed, 1 passed" in out
    # The short summary names the line that failed, not just "assert False".
    summary = next(line for line in out.splitlines() if line.startswith("FAILED "))
    assert summary.startswith(
        "FAILED test_user_agent.py::test_unkeyed_charge_survives_a_crash - FAIL   kill-mid-tool  after-effect charge#1  "
    )
    assert "effect duplicated: the provider saw 2 charge (expected 1) [assert False]" in summary
    # Every line, with plugpull's details, in the failure's own section.
    section = out.split("Captured plugpull call")[1]
    assert "PASS   kill-mid-tool  before-effect charge#1" in section
    assert "    resume called charge once" in section
    assert list((tmp_path / "tmp").iterdir()) == []  # no workdir or socket left behind


def test_the_fixture_takes_the_clis_options_and_returns_result_objects(tmp_path):
    run = pytest_on(
        f"""
        from plugpull import Verdict

        def test_options(plugpull_run):
            results = plugpull_run({COMMAND!r}, points="after-effect", repeat=2)
            assert [(r.point, r.verdict) for r in results] == [("after-effect", Verdict.FAIL)] * 2
            assert results[0].evidence["counts"] == {{"charge": 2}}
            assert not results.passed and len(results.failed()) == 2
            assert repr(results[0]).startswith("FAIL   kill-mid-tool  after-effect charge#1  ")
        """,
        tmp_path,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_bad_options_raise_the_clis_one_line_message(tmp_path):
    run = pytest_on(
        f"""
        import pytest
        from plugpull.arguments import UsageError

        def test_bad(plugpull_run):
            with pytest.raises(UsageError, match="is not a point of the selected scenario"):
                plugpull_run({COMMAND!r}, points="write-lost")
        """,
        tmp_path,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_an_equality_on_results_is_explained_with_the_result_lines(tmp_path):
    run = pytest_on(
        f"""
        def test_no_failures(plugpull_run):
            assert plugpull_run({COMMAND!r}, points="after-effect").failed() == []
        """,
        tmp_path,
    )
    assert run.returncode == 1
    assert "E       assert plugpull results == []" in run.stdout
    assert "E         FAIL   kill-mid-tool  after-effect charge#1  " in run.stdout


def test_loading_the_plugin_imports_nothing_of_the_harness():
    # pytest loads the plugin in every session of an environment with plugpull (this suite's too).
    code = (
        "import sys, plugpull.pytest_plugin; "
        "print(sorted(m for m in sys.modules if m.startswith(('plugpull.', 'rich')) or m == 'rich'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['plugpull.client', 'plugpull.pytest_plugin']"
