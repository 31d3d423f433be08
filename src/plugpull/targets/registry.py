"""The built-in targets: every framework family's, in one place (``--target NAME``, the notebooks).

A family module (plugpull.targets.families.<name>) declares ``FAMILY``, ``BUILT_INS`` and ``UPGRADE``
(its resume-after-upgrade target, or None); adding a framework is one module and one entry in FAMILIES.
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
    pydantic_ai,
    restate,
)
from plugpull.targets.target import BuiltIn, Target

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
)


def _by_name(built_ins: list[tuple[str, BuiltIn]]) -> dict[str, BuiltIn]:
    table: dict[str, BuiltIn] = {}
    for name, built_in in built_ins:
        if name in table:
            raise RuntimeError(f"built-in target {name!r} is declared twice")
        table[name] = built_in
    return table


BUILT_INS: dict[str, BuiltIn] = _by_name([(b.name, b) for family in FAMILIES for b in family.BUILT_INS])

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
