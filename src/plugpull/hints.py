"""What a result line shows beside its verdict, read from its evidence: the held call, a phase's calls.

Pure functions of a result's evidence. A scenario's rendering hints (``Scenario.shown_point``,
``Scenario.call_summary`` in plugpull.scenarios.contract) are built from them; plugpull.rendering
prints what the scenario's hints say.
"""

from __future__ import annotations

from plugpull.results import Result


def times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def call_summary(calls: list[dict], phase: str, who: str) -> str:
    """One line on what ``phase`` asked the provider for, e.g. "resume called refund twice".

    Says "made 0 record_effect calls" when it asked for nothing (the agent thought the run was
    done, or never reached the tool), and which calls a key already recorded kept from counting,
    so "the provider saw exactly 1 refund" under a FAIL is not read as a contradiction.
    """
    mine = [c for c in calls if c.get("phase") == phase]
    if not mine:
        return f"{who} made 0 record_effect calls"
    parts = []
    for name in dict.fromkeys(c["name"] for c in mine):
        of_name = [c for c in mine if c["name"] == name]
        kept = sum(1 for c in of_name if c.get("key") is not None and not c.get("recorded"))
        part = f"{name} {times(len(of_name))}"
        if kept:
            part += f" ({kept} with a key already recorded, so not counted again)"
        parts.append(part)
    return f"{who} called " + ", ".join(parts)


def held_call(calls: list[dict], name: str | None = None) -> str | None:
    """The held call as NAME#N (the N-th call of NAME in its phase), or None if none was held.

    ``name``: the call the kill was aimed at, when another call was held beside it (a sibling held
    with --sibling NAME:running may arrive first).
    """
    held = next((c for c in calls if c.get("held_at") and name in (None, c["name"])), None)
    if held is None:
        return None
    n = sum(1 for c in calls if c["phase"] == held["phase"] and c["name"] == held["name"] and c["seq"] <= held["seq"])
    return f"{held['name']}#{n}"


def held_point(result: Result) -> str:
    """The point, with the held call when one was held: ``after-effect charge_card#1``.

    With --save, the saves the kill was aimed at: ``after-effect refund#1 [checkpoint-save 2 withheld]``.
    """
    held = held_call(result.evidence.get("calls") or [], result.evidence.get("held_name"))
    shown = result.point if held is None else f"{result.point} {held}"
    saves = [spec.split(":") for spec in result.evidence.get("save_specs") or []]
    return shown + (" [" + ", ".join(" ".join(parts) for parts in saves) + "]" if saves else "")
