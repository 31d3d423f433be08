"""The built-in targets: every framework family's, in one place (``--target NAME``, the notebooks).

A family module (plugpull.targets.families.<name>) declares ``FAMILY``, ``BUILT_INS``, ``UPGRADE``
(its resume-after-upgrade target, or None) and ``TOUR`` (the lines bare ``plugpull`` runs of its targets);
adding a framework is one module and one entry in FAMILIES.
"""

from __future__ import annotations

from plugpull.targets.families import (
    agent_framework,
    crewai,
    dbos,
    fastaiagent,
    google_adk,
    langgraph,
    llama_index,
    openai_agents,
    openai_agents_temporal,
    pydantic_ai,
    pydantic_ai_temporal,
    restate,
    temporal,
)
from plugpull.targets.target import BuiltIn, Stop, Target

#: In the order `plugpull` lists and runs them.
FAMILIES = (
    langgraph,
    openai_agents,
    agent_framework,
    fastaiagent,
    google_adk,
    dbos,
    pydantic_ai,
    crewai,
    llama_index,
    restate,
    temporal,
    pydantic_ai_temporal,
    openai_agents_temporal,
)


def _by_name(built_ins: list[tuple[str, BuiltIn]]) -> dict[str, BuiltIn]:
    table: dict[str, BuiltIn] = {}
    for name, built_in in built_ins:
        if name in table:
            raise RuntimeError(f"built-in target {name!r} is declared twice")
        table[name] = built_in
    return table


BUILT_INS: dict[str, BuiltIn] = _by_name([(b.name, b) for family in FAMILIES for b in family.BUILT_INS])

#: The tour: what bare ``plugpull`` runs (docs/cli.md, "The default run"), in FAMILIES order; ``--all`` runs
#: every line instead.
TOUR: tuple[Stop, ...] = tuple(stop for family in FAMILIES for stop in family.TOUR)


def tour_plan(targets: list[Target], repeat: int = 1) -> list[tuple[Target, str]]:
    """The (target, point) runs of the tour among ``targets`` (the built-ins chosen: those installed), in
    their order, each point ``repeat`` times."""
    runs = []
    for target in targets:
        for stop in TOUR:
            if stop.selects(target):
                for point in stop.points:
                    runs.extend([(target, point)] * repeat)
    return runs


#: resume-after-upgrade, built in: per framework family, the variants that start on release A and resume on
#: release B. The same target module runs in both environments; only the interpreter differs
#: (docs/agent-protocol.md, "resume-after-upgrade").
UPGRADES: dict[str, BuiltIn] = _by_name(
    [(family.FAMILY.name, family.UPGRADE) for family in FAMILIES if family.UPGRADE is not None]
)


def upgrade_targets(name: str, from_python: str) -> list[Target]:
    """The built-in resume-after-upgrade variants of framework ``name``: start under ``from_python``
    (release A's environment), resume under this interpreter (release B's)."""
    if name not in UPGRADES:
        raise ValueError(f"no built-in resume-after-upgrade target {name!r}; known: {', '.join(UPGRADES)}")
    return [
        Target(
            name=variant.name,
            argv=(from_python, *variant.argv[1:]),
            framework=variant.framework,
            options=dict(variant.options),
            scenario="resume-after-upgrade",
            notes=variant.notes,
            result_ignore=variant.result_ignore,
            resume_argv=variant.argv,
        )
        for variant in UPGRADES[name].variants
    ]
