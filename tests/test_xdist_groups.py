"""tests/xdist_groups.py: under ``--dist loadgroup`` the tests of one xdist group run on one worker, as .ci/run
relies on for the fork servers a framework's tests share (tests/shared_forks.py), whichever modules they are in."""

import re
from pathlib import Path

GROUPED = """
import pytest

pytestmark = pytest.mark.xdist_group("family")


@pytest.mark.parametrize("n", range(4))
def test_grouped(n):
    pass
"""

LOOSE = """
import pytest


@pytest.mark.parametrize("n", range(4))
def test_loose(n):
    pass
"""


def test_the_tests_of_one_group_in_two_modules_run_on_one_worker(pytester, monkeypatch):
    pytester.makepyfile(test_a=GROUPED, test_b=GROUPED, test_c=LOOSE, test_d=LOOSE)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))  # xdist_groups, for the workers too
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    result = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "loadgroup", "--disable-plugin-autoload", "-p", "xdist.plugin", "-p", "xdist_groups",
        "-p", "no:cacheprovider", "-v",
    )  # fmt: skip
    result.assert_outcomes(passed=16)
    ran = re.findall(r"\[(gw\d)\][^\n]*PASSED (test_\w)\.py", result.stdout.str())
    assert len(ran) == 16, result.stdout.str()
    grouped = {worker for worker, module in ran if module in ("test_a", "test_b")}
    assert len(grouped) == 1, ran
    # Two workers did run: the group is what kept its eight tests together.
    assert {worker for worker, _ in ran} == {"gw0", "gw1"}, ran
