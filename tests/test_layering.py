"""The import graph of src/plugpull, read with ast (lazy imports inside functions count; TYPE_CHECKING
blocks do not): no module imports itself back through others, the checks stay pure, the agent side stays
alone, and nothing about a scenario lives outside its own module."""

from __future__ import annotations

import ast
from pathlib import Path

import plugpull

SRC = Path(plugpull.__file__).parent.parent


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")


MODULES = {module_name(p): p for p in sorted((SRC / "plugpull").rglob("*.py"))}


def is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imported(name: str) -> set[str]:
    """Every module ``name`` imports, anywhere in it (``from a import b`` is ``a.b`` when that is a module)."""
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
    return found


GRAPH = {name: {m for m in imported(name) if m in MODULES and m != name} for name in MODULES}


def reachable(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in GRAPH[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def cycles() -> list[list[str]]:
    """The groups of modules that import each other, each group once (its members, sorted)."""
    found = []
    for name in MODULES:
        if name in reachable(name):
            group = sorted(m for m in reachable(name) if name in reachable(m))
            if group not in found:
                found.append(group)
    return found


def test_no_module_of_plugpull_imports_itself_back_through_others():
    # A cycle inside report/ alone is report's own layering test's (tests/report/test_layers.py, issue 21).
    assert [group for group in cycles() if not all(m.startswith("plugpull.report.") for m in group)] == []


def test_the_checks_never_reach_process_control():
    # Checks are pure: evidence in, verdict out (docs/architecture.md). Nothing they import, however
    # indirectly, starts, signals or waits for a process or opens a socket.
    process_control = {
        "plugpull.process",
        "plugpull.reaper",
        "plugpull.forkserver",
        "plugpull.channel",
        "plugpull.suite",
        "plugpull.cli",
    }
    checks = [name for name in MODULES if name.startswith("plugpull.checks")]
    reached = {name: sorted(reachable(name) & process_control) for name in checks}
    reached |= {
        name: sorted(m for m in reachable(name) if m.startswith(("plugpull.scenarios", "plugpull.powercut")))
        for name in checks
        if any(m.startswith(("plugpull.scenarios", "plugpull.powercut")) for m in reachable(name))
    }
    assert {name: found for name, found in reached.items() if found} == {}
    stdlib = {"subprocess", "signal", "socket", "threading", "multiprocessing", "time", "os"}
    assert {name: sorted(imported(name) & stdlib) for name in checks if imported(name) & stdlib} == {}


def test_the_agent_side_client_imports_nothing_of_plugpull():
    assert {m for m in imported("plugpull.client") if m.startswith("plugpull")} == set()


def test_errors_sit_at_the_bottom_beside_the_client():
    assert GRAPH["plugpull.errors"] <= {"plugpull.client"}


def test_only_the_registry_names_the_scenario_modules():
    # The suite, the command line and the renderings know scenarios through the registry and the contract.
    # (report/ is checked by its own layering test: the notebooks' kernel side runs every-boundary through
    # the registry once issue 21's parts are merged.)
    scenario_modules = {
        name
        for name in MODULES
        if name.startswith("plugpull.scenarios.")
        and name not in ("plugpull.scenarios.contract", "plugpull.scenarios.registry", "plugpull.scenarios.held_kill")
    }
    importers = {
        name
        for name in MODULES
        if GRAPH[name] & scenario_modules and not name.startswith(("plugpull.scenarios", "plugpull.report"))
    }
    assert importers == set()
