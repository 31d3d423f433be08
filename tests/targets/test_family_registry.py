"""The registry collects every family's built-ins; the agent scripts they run import none of it."""

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from plugpull.targets import BUILT_INS, FAMILIES, UPGRADES, registry


def scripts() -> dict[str, str]:
    """Each agent script a built-in (or an upgrade) runs, with the built-in that runs it."""
    found = {}
    for built_in in (*BUILT_INS.values(), *UPGRADES.values()):
        for target in built_in.variants:
            assert target.argv[1] == "-m", target.argv
            found[target.argv[2]] = built_in
    return found


def test_every_built_in_runs_an_agent_script_of_plugpull_targets_none_of_the_examples():
    for module in scripts():
        assert module.startswith("plugpull.targets."), module
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin.endswith(module.rsplit(".", 1)[-1] + ".py"), module


def test_a_built_in_name_declared_by_two_families_is_refused():
    built_in = BUILT_INS["langgraph"]
    with pytest.raises(RuntimeError, match="'langgraph' is declared twice"):
        registry._by_name([("langgraph", built_in), ("langgraph", built_in)])


def test_the_upgrades_are_keyed_by_their_family():
    assert list(UPGRADES) == [f.FAMILY.name for f in FAMILIES if f.UPGRADE is not None]
    assert list(UPGRADES) == ["langgraph", "openai-agents", "agent-framework"]


def loaded(code: str) -> list[str]:
    """The plugpull modules a fresh interpreter holds after ``code``."""
    code += "; import sys, json; print(json.dumps(sorted(m for m in sys.modules if m.startswith('plugpull'))))"
    run = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_importing_the_package_loads_neither_the_types_nor_the_registry():
    assert loaded("import plugpull.targets") == ["plugpull", "plugpull.client", "plugpull.targets"]


def plugpull_imports(path: Path) -> set[str]:
    """Every plugpull module a source file imports, at its top or inside a function."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {name for name in names if name.split(".")[0] == "plugpull"}


def test_the_agent_scripts_import_plugpull_client_and_other_agent_scripts_only():
    # Every phase of a run starts one of these: the harness (registry, notes, results) has no place there.
    package = Path(importlib.util.find_spec("plugpull.targets").origin).parent
    harness = {"__init__", "registry", "target", "installation"}
    agent_side = {p.stem for p in package.glob("*.py")} - harness
    assert {m.rsplit(".", 1)[-1] for m in scripts()} <= agent_side
    for stem in sorted(agent_side):
        imported = plugpull_imports(package / f"{stem}.py")
        assert "plugpull.client" in imported or stem.endswith("_support"), stem
        # plugpull.postgres: the -postgresql targets' database per run; plugpull.temporal: the temporal target's dev
        # server (standard library only, like the client).
        others = imported - {"plugpull.client", "plugpull.postgres", "plugpull.temporal"}
        assert {m.rsplit(".", 1)[-1] for m in others} <= agent_side, (stem, others)
        assert all(m.startswith("plugpull.targets.") for m in others), (stem, others)


def test_the_agent_side_server_helpers_import_only_the_client_of_plugpull():
    # Standard library and the client (itself standard library only): their errors share the client's PlugpullError.
    for helper in ("plugpull.postgres", "plugpull.temporal"):
        path = Path(importlib.util.find_spec(helper).origin)
        assert plugpull_imports(path) <= {"plugpull.client"}, helper
