"""Skip marks for tests that need a package, found without importing it.

``pytest.importorskip`` at the top of a module imports the package in every pytest process that collects the
module, and each xdist worker collects every module: each worker imported every framework of the suite (the
Agents SDK alone takes 2.6 s of CPU) to run tests that mostly start the framework in processes of their own.
``requires`` only looks the module up on the path, its parent packages included, without running them.
"""

from __future__ import annotations

from importlib.machinery import PathFinder

import pytest


def found(module: str) -> bool:
    """Whether ``module`` (dotted) is on the path, looked up without importing it or its parents."""
    path = None
    for part in module.split("."):
        spec = PathFinder.find_spec(part, path)
        if spec is None:
            return False
        path = spec.submodule_search_locations
    return True


def requires(*modules: str, reason: str = "") -> pytest.MarkDecorator:
    """A mark that skips the test (or module, as ``pytestmark``) when one of ``modules`` is not installed."""
    missing = [module for module in modules if not found(module)]
    because = f"{', '.join(missing)} not installed" + (f": {reason}" if reason else "")
    return pytest.mark.skipif(bool(missing), reason=because)
