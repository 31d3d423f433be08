"""Targets: what a scenario breaks. Built-in framework agents and a user's ``--agent COMMAND``.

- plugpull.targets.target: the types, ``Target`` (a command and how its result line names it) and
  ``BuiltIn`` (a ``--target NAME``: its framework module and variants); ``agent()`` for ``--agent``.
- plugpull.targets.families: one module per framework family declaring its built-ins, their variants
  and the upstream notes their FAIL lines may carry; plugpull.targets.registry collects them
  (``BUILT_INS``, ``UPGRADES``, ``TOUR``: what bare ``plugpull`` runs).
- plugpull.targets.<script>: the agent scripts the built-ins run (``python -m plugpull.targets.<script>
  start|resume``), each written as a user of its framework would write it, lines marked ``# plugpull``.

The names below load on first use: an agent script of this package imports this package first, and
must pay for neither the types nor the registry (it imports plugpull.client and its framework only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugpull.targets.registry import BUILT_INS, FAMILIES, TOUR, UPGRADES, tour_plan, upgrade_targets
    from plugpull.targets.target import BuiltIn, Target, agent, python_module, upgrade_agent

_FROM = {
    "Target": "target",
    "BuiltIn": "target",
    "python_module": "target",
    "agent": "target",
    "upgrade_agent": "target",
    "BUILT_INS": "registry",
    "UPGRADES": "registry",
    "FAMILIES": "registry",
    "TOUR": "registry",
    "tour_plan": "registry",
    "upgrade_targets": "registry",
}

__all__ = [
    "BUILT_INS",
    "FAMILIES",
    "TOUR",
    "UPGRADES",
    "BuiltIn",
    "Target",
    "agent",
    "python_module",
    "tour_plan",
    "upgrade_agent",
    "upgrade_targets",
]


def __getattr__(name: str) -> Any:
    if name not in _FROM:
        raise AttributeError(f"module 'plugpull.targets' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"plugpull.targets.{_FROM[name]}"), name)
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value
