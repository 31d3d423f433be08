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


def short_key(key: str | None) -> str:
    """A key as a line shows it: ``call_3e2b4c1…`` (its first 12 characters: a tool call id's ``call_`` prefix
    leaves 7 of the id), or "no key"."""
    if key is None:
        return "no key"
    return key if len(key) <= 14 else f"{key[:12]}…"


ORDINALS = ("first", "second", "third", "fourth")

#: How many calls of one duplicated effect a line lists before it says how many more there were.
LISTED_CALLS = 4


def duplicate_causes(calls: list[dict]) -> list[str]:
    """Why each effect counted more than once was: its counted calls, each with its key and the phase and
    thread that made it, then what differs between them.

    ``refund counted twice: call_8830d63… (start, held after-effect) vs call_3d68104… (resume): resume used a new
    key: ...``.
    Only calls that added an effect (``recorded``) are listed: a repeat of a known key did not count.
    """
    effects = [c for c in calls if c.get("kind", "effect") == "effect" and c.get("recorded")]
    lines = []
    for name in dict.fromkeys(c["name"] for c in effects):
        mine = sorted((c for c in effects if c["name"] == name), key=lambda c: c["seq"])
        if len(mine) < 2:
            continue
        # The thread is named only when it tells the calls apart: LangGraph's ToolNode runs every tool on its
        # executor, so "background thread" on each call would say nothing.
        mixed = {c.get("main_thread") for c in mine} >= {True, False}
        shown = " vs ".join(describe_call(c, mixed) for c in mine[:LISTED_CALLS])
        if len(mine) > LISTED_CALLS:
            shown += f" vs {len(mine) - LISTED_CALLS} more"
        causes = "; ".join(causes_of(mine))
        lines.append(f"{name} counted {times(len(mine))}: {shown}" + (f": {causes}" if causes else ""))
    return lines


def describe_call(call: dict, thread: bool = True) -> str:
    """One counted call: ``call_3d68104… (resume, background thread, held after-effect)``; ``thread``: name a
    background thread."""
    about = [call["phase"]]
    if thread and call.get("main_thread") is False:
        about.append("background thread")
    if call.get("held_at"):
        about.append(f"held {call['held_at']}")
    return f"{short_key(call.get('key'))} ({', '.join(about)})"


def causes_of(calls: list[dict]) -> list[str]:
    """What tells the counted calls of one effect apart: no key, a new key per phase, a background thread."""
    causes = []
    if all(c.get("key") is None for c in calls):
        causes.append("without a key every call is a new effect")
    else:
        first = calls[0]
        for call in calls[1:]:
            if call.get("key") is None:
                causes.append(f"{call['phase']} called without a key")
            elif call["phase"] != first["phase"]:
                causes.append(
                    f"{call['phase']} used a new key: {short_key(first.get('key'))} ({first['phase']}) vs "
                    f"{short_key(call['key'])} ({call['phase']})"
                )
            else:
                causes.append(f"{call['phase']} called again with a new key")
    threads = {c.get("main_thread") for c in calls}
    if True in threads and False in threads:
        # Which thread made a call is the client's word (record_effect sends it). DBOS, for one, ran the workflow
        # it recovered at launch on a thread of its own where start had run it on the main thread (docs/running.md).
        later = next(i for i, c in enumerate(calls) if c.get("main_thread") is False)
        which = f"the {ORDINALS[later]} call" if later < len(ORDINALS) else f"call {later + 1}"
        causes.append(f"{which} came from a background thread ({calls[later]['phase']})")
    return list(dict.fromkeys(causes))
