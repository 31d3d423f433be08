"""The import graph of src/plugpull, read with ast (lazy imports inside functions count; TYPE_CHECKING
blocks do not; tests/test_architecture.py checks it has no cycle): the checks stay pure, the agent side stays
alone, and nothing about a scenario lives outside its own module."""

from __future__ import annotations

from import_graph import MODULES, graph, imported, reachable

#: From the top down: a module may import the ones in layers below its own, never one above (no arrow
#: back up). Each entry is a module and the modules under it; the most specific entry wins.
LAYERS = (
    ("plugpull.examples",),  # agents and tests written as a user would: they may use any of it
    ("plugpull.pytest_plugin", "plugpull.testing"),  # the pytest plugin: runs the command
    ("plugpull.cli",),
    ("plugpull.report",),
    ("plugpull.junit", "plugpull.benchmark", "plugpull.progress"),
    ("plugpull.suite",),
    ("plugpull.rendering",),
    ("plugpull.scenarios.registry",),
    ("plugpull.scenarios.",),  # each scenario module (a trailing dot: the modules under it only)
    ("plugpull.scenarios.contract",),
    ("plugpull.scenarios",),  # what scenarios share: Settings, Runtime, workdirs
    ("plugpull.targets",),
)
#: The package's own __init__ re-exports the public API from every layer; it is imported by none of them.
FACADE = "plugpull"


def layer_of(name: str) -> int | None:
    """The index in LAYERS of the most specific entry ``name`` is or is under; None below them all."""
    matches = [
        (len(entry), index)
        for index, entries in enumerate(LAYERS)
        for entry in entries
        if (name.startswith(entry) if entry.endswith(".") else name == entry or name.startswith(entry + "."))
    ]
    return max(matches)[1] if matches else None


def test_the_cli_suite_scenarios_and_targets_import_only_downwards():
    assert FACADE not in {m for imports in graph().values() for m in imports}
    upward = sorted(
        (name, other)
        for name in MODULES
        for other in graph()[name]
        if layer_of(name) is not None and layer_of(other) is not None and layer_of(other) < layer_of(name)
    )
    assert upward == []
    # And the bottom: nothing under the layers (results, evidence, process, checks, ...) imports any of them.
    below = sorted(
        (name, other)
        for name in MODULES
        if layer_of(name) is None and name != FACADE
        for other in graph()[name]
        if layer_of(other) is not None
    )
    assert below == []


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


def test_errors_sit_at_the_bottom_beside_the_agent_side():
    # client.py, postgres.py and temporal.py run in agent processes and define their own errors; errors re-exports them.
    assert graph()["plugpull.errors"] <= {"plugpull.client", "plugpull.postgres", "plugpull.temporal"}


def test_only_the_registry_names_the_scenario_modules():
    # The suite, the command line, the renderings and the notebooks' kernel side know scenarios through the
    # registry and the contract.
    scenario_modules = {
        name
        for name in MODULES
        if name.startswith("plugpull.scenarios.")
        and name not in ("plugpull.scenarios.contract", "plugpull.scenarios.registry", "plugpull.scenarios.held_kill")
    }
    importers = {
        name for name in MODULES if graph()[name] & scenario_modules and not name.startswith("plugpull.scenarios")
    }
    assert importers == set()
