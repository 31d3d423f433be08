"""tests/rewrite_cache.py: the rewritten modules .ci/run writes before the workers collect are the ones pytest reads."""

import marshal
import sys
from pathlib import Path

from _pytest.assertion import rewrite
from _pytest.assertion.rewrite import AssertionRewritingHook

import rewrite_cache

FAILING = """
def test_sum():
    numbers = [1, 2]
    assert sum(numbers) == 4
"""


def run_pytest(pytester):
    return pytester.runpytest_inprocess("--disable-plugin-autoload", "-p", "no:cacheprovider")


def test_pytest_reads_the_module_written_before_it_instead_of_rewriting_it(pytester, monkeypatch):
    module = pytester.makepyfile(test_sum=FAILING)
    assert rewrite_cache.write(module) is None
    rewritten = []  # what pytest's import hook rewrote itself: (source hash, code) a module
    real = rewrite._rewrite_test
    monkeypatch.setattr(
        rewrite, "_rewrite_test", lambda path, config: rewritten.append(real(path, config)) or rewritten[-1]
    )
    result = run_pytest(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*assert 3 == 4", "*where 3 = sum([[]1, 2[]])"])  # the asserts ran rewritten
    assert rewritten == []  # ... as read from the file
    written = rewrite_cache.cached(module).read_bytes()
    rewrite_cache.cached(module).unlink()
    run_pytest(pytester).assert_outcomes(failed=1)
    [(source_hash, code)] = rewritten  # without the file pytest rewrites the module: the same code
    assert written[8:16] == source_hash[:8] and marshal.loads(written[16:]) == code


def test_every_module_pytest_rewrote_in_this_process_is_one_the_cache_writes(pytestconfig):
    # Written without pytest's config: the same code as long as the suite leaves the assertion pass hook off.
    assert not pytestconfig.getini("enable_assertion_pass_hook")
    tests = Path(__file__).parent
    rewritten = {
        Path(module.__file__)
        for module in list(sys.modules.values())
        if isinstance(getattr(module, "__loader__", None), AssertionRewritingHook)
        and Path(module.__file__).is_relative_to(tests)
    }
    assert Path(__file__) in rewritten
    assert rewritten <= set(rewrite_cache.modules(tests)), rewritten - set(rewrite_cache.modules(tests))
