"""pytest plugin (entry point ``pytest11``): the ``plugpull_run`` fixture.

    def test_refund_survives_a_crash(plugpull_run):
        results = plugpull_run("python my_agent.py")
        results.assert_all_pass()             # or: results.assert_exactly_once("refund")

One test item per kill point: ``plugpull.testing.kill_points`` (``@pytest.mark.parametrize("point",
kill_points(AGENT), ids=str)``, then ``plugpull_run(AGENT, **point.options)``).

pytest loads this module in every session of an environment where plugpull is installed, so it imports
nothing at load time but pytest and the standard library: the harness is imported when a test first calls
the fixture. A failing test shows every result line (a "Captured plugpull call" section) and its short
summary line names the first line that did not PASS, whatever form the assertion took (``all(...)`` hides
its operands from pytest's assertion rewriting).
"""

from __future__ import annotations

import reprlib
import sys

import pytest

#: Attribute of a test item holding the results of its plugpull_run calls, for its failure summary. An attribute
#: rather than pytest's Stash, and an old-style hookwrapper: the plugin loads in every pytest session of the
#: environment, so it must not break an older pytest than this repo's.
RESULTS = "_plugpull_results"


@pytest.fixture
def plugpull_run(request):
    """Run plugpull on an agent command; returns the results (``plugpull.testing.Results``).

    ``plugpull_run(command, *, target=None, scenario=None, points=None, hold=None, boundary=None, sibling=None,
    timeout=120.0, repeat=1, jobs=1, fork_server=False, workdir=None, keep_workdir=False)``: the CLI's options.
    """

    def run(command=None, **options):
        from plugpull.testing import run as run_plugpull

        results = run_plugpull(command, **options)
        request.node.add_report_section("call", "plugpull", repr(results))
        ran = getattr(request.node, RESULTS, None)
        if ran is None:
            ran = []
            setattr(request.node, RESULTS, ran)
        ran.extend(results)
        return results

    return run


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed assertion in a test that ran plugpull: its summary line names the first line that did not PASS."""
    outcome = yield
    report = outcome.get_result()
    ran = getattr(item, RESULTS, None)
    if not ran or report.when != "call" or not report.failed or call.excinfo is None:
        return
    if not call.excinfo.errisinstance(AssertionError):
        return
    failed = [r for r in ran if r.verdict.value != "PASS"]
    crash = getattr(report.longrepr, "reprcrash", None)
    if failed and crash is not None and isinstance(getattr(crash, "message", None), str):
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        said = crash.message.splitlines()[0] if crash.message else "AssertionError"
        crash.message = f"{failed[0]!r}{more} [{said}]"


def pytest_assertrepr_compare(config, op, left, right):
    """``assert results == ...`` (or a single result): the explanation is plugpull's result lines."""
    testing = sys.modules.get("plugpull.testing")  # never imported here: only a test that ran plugpull has it
    if testing is None:
        return None
    ours = (testing.Results, testing.RunResult)
    if isinstance(left, ours):
        shown, other = left, right
    elif isinstance(right, ours):
        shown, other = right, left
    else:
        return None
    return [f"plugpull results {op} {reprlib.repr(other)}", *repr(shown).splitlines()]
