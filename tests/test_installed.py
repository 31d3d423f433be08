"""tests/installed.py's skip marks find a package without importing it, and no test module imports a package
while it is collected: each xdist worker collects every module, so one ``pytest.importorskip("agents")`` at a
module's top costs every worker the Agents SDK's import (about 2.5 s of CPU) before any test runs."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from installed import found, requires

TESTS = Path(__file__).parent
# Imported at collection on purpose: light, and used by the module's own top-level code.
LIGHT = {"yaml"}


def importorskips_at_the_top(source: str) -> list[str]:
    """The packages a module's top-level statements import through ``pytest.importorskip``."""
    named = []
    for statement in ast.parse(source).body:
        for node in ast.walk(statement):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                break  # runs when called, not when collected
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "importorskip"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                named.append(node.args[0].value)
    return named


def test_a_package_on_the_path_is_found_and_a_missing_one_or_its_missing_child_is_not():
    assert found("json") and found("email.mime")
    assert not found("plugpull_no_such_package") and not found("json.no_such_module")


def test_finding_a_submodule_does_not_import_it_or_its_parent_package():
    # In a fresh interpreter: in this worker a test run before may have imported wsgiref (`import restate` imports
    # hypercorn, which does), and the worker's order changes with every test added.
    probe = (
        "import sys; from installed import found; assert 'wsgiref' not in sys.modules; "
        "assert found('wsgiref.simple_server'); "
        "assert 'wsgiref' not in sys.modules and 'wsgiref.simple_server' not in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=TESTS, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_requires_skips_with_the_missing_packages_named_and_runs_when_all_are_there():
    missing = requires("json", "plugpull_no_such_package", reason="say why")
    assert missing.args == (True,) and missing.kwargs["reason"] == "plugpull_no_such_package not installed: say why"
    assert requires("json").args == (False,)


def test_an_importorskip_at_a_modules_top_is_found_and_one_inside_a_test_is_not():
    source = 'import pytest\nyaml = pytest.importorskip("yaml")\ndef test_x():\n    pytest.importorskip("agents")\n'
    assert importorskips_at_the_top(source) == ["yaml"]


def test_no_test_module_imports_a_framework_while_it_is_collected():
    offenders = {
        path.relative_to(TESTS).as_posix(): heavy
        for path in sorted(TESTS.rglob("test_*.py"))
        if (heavy := [name for name in importorskips_at_the_top(path.read_text()) if name not in LIGHT])
    }
    assert offenders == {}, "use pytestmark = requires(...) from tests/installed.py instead"
