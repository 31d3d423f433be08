"""The layers of docs/architecture.md, checked on the source: every import of a plugpull module by another points
down (or sideways within a layer), nothing imports itself back through others, and the few arrows the page rules
out are absent. Imports are read with ast by tests/import_graph.py, at the top and inside functions (lazy),
so a lazy import cannot hide an arrow back up."""

from __future__ import annotations

from import_graph import graph

#: docs/architecture.md's layers, bottom to top: a module's layer is its longest matching prefix's.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("plugpull.client", "plugpull.postgres", "plugpull.temporal"),
    ("plugpull.errors", "plugpull.results", "plugpull.evidence", "plugpull.boundaries", "plugpull.hints",
     "plugpull.notes", "plugpull.store", "plugpull.provider", "plugpull.arguments", "plugpull.aim"),
    ("plugpull.reaper", "plugpull.process", "plugpull.forkserver", "plugpull.channel", "plugpull.powercut",
     "plugpull.checks", "plugpull.sidecar"),
    ("plugpull.targets",),
    ("plugpull.scenarios",),
    ("plugpull.suite", "plugpull.rendering", "plugpull.junit", "plugpull.progress", "plugpull.benchmark"),
    ("plugpull", "plugpull.report", "plugpull.report.kernel"),
    ("plugpull.report.harness",),
    ("plugpull.cli",),
    ("plugpull.testing", "plugpull.pytest_plugin"),
    ("plugpull.examples",),  # a user's test (examples/test_*.py): it may use plugpull.testing
)  # fmt: skip

#: The declarations of plugpull.targets (the package itself, and these with what is under them); every other
#: module there is an agent script, or what one framework's agent scripts share.
TARGET_DECLARATIONS = ("plugpull.targets.target", "plugpull.targets.registry", "plugpull.targets.families")

#: Arrows the page rules out even where the layers would allow them.
FORBIDDEN = {
    "plugpull.checks": ("plugpull.reaper", "plugpull.process", "plugpull.forkserver", "plugpull.channel"),
    "plugpull.report.kernel": ("plugpull.report.harness",),
    "plugpull.powercut": ("plugpull.checks", "plugpull.process", "plugpull.channel", "plugpull.forkserver"),
}


def layer(module: str) -> int:
    best, found = -1, None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), index
    assert found is not None, f"{module} is in no layer of docs/architecture.md"
    return found


def is_agent_script(module: str) -> bool:
    in_targets = module.startswith("plugpull.targets.")
    declared = any(module == d or module.startswith(d + ".") for d in TARGET_DECLARATIONS)
    user_test = module.rpartition(".")[2].startswith("test_")
    return (module.startswith("plugpull.examples") and not user_test) or (in_targets and not declared)


#: What an agent script may import of plugpull: the client, the -postgresql targets' database per run and the
#: temporal target's dev server (all standard library only).
AGENT_SIDE = ("plugpull.client", "plugpull.postgres", "plugpull.temporal")


def arrows_up(g: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, targets in sorted(g.items()):
        for target in sorted(targets):
            if module in AGENT_SIDE or is_agent_script(module):
                if target not in AGENT_SIDE and not is_agent_script(target):
                    problems.append(f"{module} -> {target}: the agent side imports plugpull.client only")
                continue
            if target == "plugpull" or is_agent_script(target):
                continue  # the package's own __init__ runs first anyway; agent scripts are run, not imported
            if layer(target) > layer(module):
                problems.append(f"{module} -> {target}: an arrow back up")
            for source, ruled_out in FORBIDDEN.items():
                if module.startswith(source) and target.startswith(ruled_out):
                    problems.append(f"{module} -> {target}: ruled out")
    return problems


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return found


def test_every_import_points_down_the_layers_of_the_architecture_page():
    assert sum(len(t) for t in graph().values()) > 100  # the walk read the imports
    assert arrows_up(graph()) == []


def test_no_plugpull_module_imports_itself_back_through_others():
    assert cycles(graph()) == []


def test_an_arrow_back_up_a_forbidden_one_and_a_cycle_are_each_found():
    g = {
        "plugpull.results": {"plugpull.suite"},
        "plugpull.suite": {"plugpull.results"},
        "plugpull.checks.kill_mid_tool": {"plugpull.process"},
        "plugpull.targets.langgraph_refund": {"plugpull.client", "plugpull.results"},
    }
    assert arrows_up(g) == [
        "plugpull.checks.kill_mid_tool -> plugpull.process: ruled out",
        "plugpull.results -> plugpull.suite: an arrow back up",
        "plugpull.targets.langgraph_refund -> plugpull.results: the agent side imports plugpull.client only",
    ]
    assert cycles(g) == [["plugpull.results", "plugpull.suite"]]
