"""report/ is cut by where code runs: the kernel side (what a notebook imports, in the pin set's environment)
never imports the harness side, loads nothing heavy when imported, and no module of report/ imports itself
back through others (no import cycle, lazy imports counted)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import plugpull.report

REPORT = Path(plugpull.report.__file__).parent
SRC = REPORT.parents[1]


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")


MODULES = {module_name(p): p for p in sorted(REPORT.rglob("*.py"))}


def imports(path: Path) -> set[str]:
    """Every plugpull.report module ``path`` imports, at the top or inside a function (``from a import b``
    counts as ``a.b`` when that is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                found.add(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in MODULES else node.module)
    return {m for m in found if m.startswith("plugpull.report")}


def test_the_kernel_side_imports_nothing_of_the_harness_side():
    kernel = {name: path for name, path in MODULES.items() if name.startswith("plugpull.report.kernel")}
    assert set(kernel) >= {f"plugpull.report.kernel.{m}" for m in ("notebook", "claims", "record", "versions")}
    crossing = {
        name: sorted(m for m in imports(path) if not m.startswith("plugpull.report.kernel"))
        for name, path in kernel.items()
    }
    assert {name: found for name, found in crossing.items() if found} == {}


def test_importing_the_kernel_side_loads_no_harness_module_and_nothing_it_draws_with():
    code = (
        "import sys, plugpull.report.kernel.notebook, plugpull.report.kernel.claims, plugpull.report.kernel.record; "
        "print(sorted(m for m in sys.modules if m.startswith(('plugpull.report.harness', 'papermill', 'nbconvert', "
        "'pandas', 'matplotlib', 'nbformat', 'jupyter_client'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_module_of_report_imports_itself_back_through_others():
    graph = {name: imports(path) - {name} for name, path in MODULES.items()}
    cycles = []

    def visit(name: str, path: list[str], done: set[str]) -> None:
        for nxt in sorted(graph.get(name, ())):
            if nxt in path:
                cycles.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in done:
                done.add(nxt)
                visit(nxt, [*path, nxt], done)

    for name in sorted(graph):
        visit(name, [name], {name})
    assert cycles == []
