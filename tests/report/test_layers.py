"""report/ is cut by where code runs: the kernel side (what a notebook imports, in the pin set's environment)
never imports the harness side and loads nothing heavy when imported. The graph is tests/import_graph.py's
(lazy imports counted); that no module imports itself back, in report/ or anywhere, is tests/test_layering.py's."""

from __future__ import annotations

import subprocess
import sys

from import_graph import MODULES as ALL_MODULES
from import_graph import imported

MODULES = {name: path for name, path in ALL_MODULES.items() if name.startswith("plugpull.report")}


def imports(name: str) -> set[str]:
    """Every plugpull.report module ``name`` imports, at the top or inside a function."""
    return {m for m in imported(name) if m.startswith("plugpull.report")}


def test_the_kernel_side_imports_nothing_of_the_harness_side():
    kernel = [name for name in MODULES if name.startswith("plugpull.report.kernel")]
    assert set(kernel) >= {f"plugpull.report.kernel.{m}" for m in ("notebook", "claims", "record", "versions")}
    crossing = {name: sorted(m for m in imports(name) if not m.startswith("plugpull.report.kernel")) for name in kernel}
    assert {name: found for name, found in crossing.items() if found} == {}


def test_importing_the_kernel_side_loads_no_harness_module_and_nothing_it_draws_with():
    code = (
        "import sys, plugpull.report.kernel.notebook, plugpull.report.kernel.claims, plugpull.report.kernel.record; "
        "print(sorted(m for m in sys.modules if m.startswith(('plugpull.report.harness', 'papermill', 'nbconvert', "
        "'pandas', 'matplotlib', 'nbformat', 'jupyter_client'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
