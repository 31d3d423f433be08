"""The import graph of src/plugpull, read with ast: one walk for every layering test.

Lazy imports inside functions count (they run too); ``if TYPE_CHECKING:`` blocks do not. ``from a import b``
is an import of ``a.b`` when that is a module, else of ``a``. tests/test_architecture.py checks the whole package
against docs/architecture.md's layers (no cycle, no arrow back up), tests/test_layering.py the scenario shape,
tests/report/test_layers.py report's kernel/harness cut.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import plugpull

SRC = Path(plugpull.__file__).parent.parent


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")


MODULES = {module_name(p): p for p in sorted((SRC / "plugpull").rglob("*.py"))}


def is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


@cache
def imported(name: str) -> frozenset[str]:
    """Every module ``name`` imports, anywhere in it, plugpull's or not."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if is_type_checking(child):
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    found.add(full if full in MODULES else base)
            visit(child)

    visit(ast.parse(path.read_text()))
    return frozenset(found)


@cache
def graph() -> dict[str, set[str]]:
    """plugpull module -> the plugpull modules it imports. Read when a test asks, not when pytest collects the
    modules that import this one (each xdist worker collects every module; the walk parses the whole source)."""
    return {name: {m for m in imported(name) if m in MODULES and m != name} for name in MODULES}


def reachable(start: str) -> set[str]:
    """Every plugpull module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph()[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen
