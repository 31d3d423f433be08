"""pytest's rewritten test modules, written to ``__pycache__`` once before the xdist workers collect (.ci/run).

pytest rewrites the asserts of each test module it imports (its assertion-rewriting import hook) and caches the
result beside the module's bytecode only where bytecode may be written. Each xdist worker imports every test module
to collect it, so where ``PYTHONDONTWRITEBYTECODE`` is set (this project's machines), or on a fresh clone where the
workers start together and all miss the cache, every worker rewrote all of them: about 2 CPU-s of a worker's 3.5
for collecting the suite (measured, 2526 asserts in 128 modules). Written once here, a worker reads them (1.4 CPU-s).

What is written is what pytest writes, by pytest's own functions: pytest has no public call for it, so this uses its
``_pytest.assertion.rewrite`` internals (pytest is locked; tests/test_rewrite_cache.py checks that pytest reads these
files instead of rewriting the module, and that they cover every module it rewrote). pytest checks a cached module
against its source's hash (PEP 552) before it reads it, so a test edited afterwards is rewritten again as before.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace

from _pytest.assertion import rewrite

TESTS = Path(__file__).resolve().parent
#: Modules pytest rewrites besides test files and conftest.py: the plugins tests/conftest.py names in pytest_plugins.
PLUGINS = ("xdist_groups.py",)


def modules(tests: Path = TESTS) -> list[Path]:
    """The modules under ``tests`` whose asserts pytest rewrites: test_*.py and *_test.py (pytest's default
    python_files, which pyproject.toml keeps), conftest.py, and :data:`PLUGINS`."""
    return sorted(
        path
        for path in tests.rglob("*.py")
        if path.name.startswith("test_") or path.name.endswith("_test.py") or path.name == "conftest.py"
        or (path.parent == tests and path.name in PLUGINS)
    )  # fmt: skip


def cached(module: Path) -> Path:
    """Where pytest looks for ``module`` rewritten (beside its bytecode, tagged with pytest's version)."""
    return rewrite.get_cache_dir(module) / (module.name[:-3] + rewrite.PYC_TAIL)


def write(module: Path) -> str | None:
    """Rewrite ``module``'s asserts as pytest does and write the result where pytest reads it; None, or why not."""
    source_hash, code = rewrite._rewrite_test(module, None)  # no config: what pytest does without the pass hook
    pyc = cached(module)
    errors: list[str] = []
    if not (
        rewrite.try_makedirs(pyc.parent)
        and rewrite._write_pyc(SimpleNamespace(trace=errors.append), code, source_hash, pyc)
    ):
        return errors[0] if errors else f"cannot create {pyc.parent}"
    return None


def main() -> int:
    """Write every module's; the rewriting is CPU-bound, so one process per core."""
    from concurrent.futures import ProcessPoolExecutor  # here: each pytest worker imports this module to collect

    with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        failed = [why for why in pool.map(write, modules(), chunksize=8) if why]
    if failed:  # not fatal: the workers rewrite what is missing themselves, as they did before this step
        print(f"rewrite_cache: {len(failed)} modules not written, e.g. {failed[0]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
