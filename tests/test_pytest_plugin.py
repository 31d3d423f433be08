"""The pytest plugin as a user meets it: a test file of theirs, run by pytest (pytester, in this process:
a pytest process of its own costs seconds of start-up on a loaded machine) with the plugin found through
its pytest11 entry point and plugpull run for real on a tiny fake framework."""

import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# pytester drops the modules a test imported when it ends, its runs' and its fixtures' alike: the harness is imported
# at collection, before any pytester, so that every run sees the same classes (a UsageError raised by one copy is
# caught as the other otherwise; a second plugpull.scenarios.registry rejects the first's scenarios).
import plugpull.cli  # noqa: F401
import plugpull.testing  # noqa: F401

AGENTS = Path(__file__).parent / "agents"
COMMAND = shlex.join([sys.executable, str(AGENTS / "fake_framework.py"), "no-key"])
KEYED = shlex.join([sys.executable, str(AGENTS / "fake_framework.py"), "stable-key"])


@pytest.fixture
def pytest_on(pytester, monkeypatch, short_tmp):
    """Runs a user's test file with pytest; plugpull's workdirs and sockets go to a TMPDIR of its own."""
    work = short_tmp
    monkeypatch.setenv("TMPDIR", str(work))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() caches its answer: read TMPDIR again
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)

    def run(source: str) -> pytest.RunResult:
        pytester.makepyfile(test_user_agent=source)
        # The plugins fastaiagent and langsmith register are left out as in this suite (pyproject.toml).
        return pytester.runpytest_inprocess(
            "-p", "no:cacheprovider", "-p", "no:fastaiagent", "-p", "no:langsmith_plugin", "-rfE", "test_user_agent.py"
        )

    run.work = work
    return run


def test_a_passing_agent_passes_and_a_failing_one_fails_with_its_result_line(pytest_on):
    run = pytest_on(
        f"""
        def test_keyed_charge_survives_a_crash(plugpull_run):
            assert all(r.verdict == "PASS" for r in plugpull_run({KEYED!r}))

        def test_unkeyed_charge_survives_a_crash(plugpull_run):
            assert all(r.verdict == "PASS" for r in plugpull_run({COMMAND!r}))
        """
    )
    out = run.stdout.str()
    assert run.ret == 1, out + run.stderr.str()
    run.assert_outcomes(failed=1, passed=1)
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
    assert list(pytest_on.work.iterdir()) == []  # no workdir or socket left behind


def test_the_fixture_takes_the_clis_options_and_returns_result_objects(pytest_on):
    run = pytest_on(
        f"""
        from plugpull import Verdict

        def test_options(plugpull_run):
            results = plugpull_run({COMMAND!r}, points="after-effect", repeat=2)
            assert [(r.point, r.verdict) for r in results] == [("after-effect", Verdict.FAIL)] * 2
            assert results[0].evidence["counts"] == {{"charge": 2}}
            assert not results.passed and len(results.failed()) == 2
            assert repr(results[0]).startswith("FAIL   kill-mid-tool  after-effect charge#1  ")
        """
    )
    assert run.ret == 0, run.stdout.str() + run.stderr.str()


def test_bad_options_raise_the_clis_one_line_message(pytest_on):
    run = pytest_on(
        f"""
        import pytest
        from plugpull.arguments import UsageError

        def test_bad(plugpull_run):
            with pytest.raises(UsageError, match="is not a point of the selected scenario"):
                plugpull_run({COMMAND!r}, points="write-lost")
        """
    )
    assert run.ret == 0, run.stdout.str() + run.stderr.str()


def test_an_equality_on_results_is_explained_with_the_result_lines(pytest_on):
    run = pytest_on(
        f"""
        def test_no_failures(plugpull_run):
            assert plugpull_run({COMMAND!r}, points="after-effect").failed() == []
        """
    )
    assert run.ret == 1
    assert "E       assert plugpull results == []" in run.stdout.str()
    assert "E         FAIL   kill-mid-tool  after-effect charge#1  " in run.stdout.str()


def test_loading_the_plugin_imports_nothing_of_the_harness():
    # pytest loads the plugin in every session of an environment with plugpull (this suite's too).
    code = (
        "import sys, plugpull.pytest_plugin; "
        "print(sorted(m for m in sys.modules if m.startswith(('plugpull.', 'rich')) or m == 'rich'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['plugpull.client', 'plugpull.pytest_plugin']"


TWO_EFFECTS = shlex.join([sys.executable, str(AGENTS / "fake_framework.py"), "email-then-charge"])


def test_kill_points_make_one_test_item_per_point_and_the_assertions_name_the_failing_line(pytest_on):
    run = pytest_on(
        f"""
        import pytest
        from plugpull.testing import kill_points

        @pytest.mark.parametrize("point", kill_points({TWO_EFFECTS!r}), ids=str)
        def test_each_kill_point(plugpull_run, point):
            plugpull_run({TWO_EFFECTS!r}, **point.options).assert_all_pass()

        def test_charge_exactly_once(plugpull_run):
            plugpull_run({COMMAND!r}, points="after-effect").assert_exactly_once("charge")
        """
    )
    out = run.stdout.str()
    run.assert_outcomes(failed=4, passed=1)
    failed = [line.split(" - ")[0] for line in out.splitlines() if line.startswith("FAILED ")]
    assert failed == [
        "FAILED test_user_agent.py::test_each_kill_point[after-effect send_email#1]",
        "FAILED test_user_agent.py::test_each_kill_point[before-effect charge#1]",
        "FAILED test_user_agent.py::test_each_kill_point[after-effect charge#1]",
        "FAILED test_user_agent.py::test_charge_exactly_once",
    ]
    # The assertions' own messages: the line that broke and its evidence (why send_email counted twice).
    said = [line[1:].strip() for line in out.splitlines() if line.startswith("E ")]
    assert "AssertionError: 1 of 1 plugpull lines did not PASS:" in said
    assert (
        "send_email counted twice: no key (start) vs no key (resume): without a key every call is a new effect" in said
    )
    assert "AssertionError: charge not done exactly once on 1 of 1 plugpull lines:" in said
    assert "the provider saw 2 charge:" in said
    assert list(pytest_on.work.iterdir()) == []


def test_kill_points_of_every_boundary_are_each_side_of_each_boundary_and_each_runs_alone(short_tmp, monkeypatch):
    from plugpull.testing import kill_points, run

    monkeypatch.setenv("TMPDIR", str(short_tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    command = shlex.join([sys.executable, str(AGENTS / "boundary_framework.py"), "plain"])
    points = kill_points(command, scenario="every-boundary")
    assert [str(p) for p in points][:4] == [
        "before model-call 1",
        "after model-call 1",
        "before checkpoint-save 1",
        "after checkpoint-save 1",
    ]
    assert len(points) == 2 * 6  # 3 saves, 2 model calls, 1 refund
    (after_refund,) = [p for p in points if p.id == "after effect refund 1"]
    results = run(command, **after_refund.options)
    assert [(r.point, r.verdict.value) for r in results] == [("after effect refund 1", "FAIL")]
    assert list(short_tmp.iterdir()) == []
