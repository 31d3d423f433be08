"""Boundaries: the holdable steps of a run, read from the clean run's trace. Pure functions.

A *boundary* is a step a crash can land next to (docs/architecture.md): an effect call
(``record_effect``) or a step the agent marks with ``plugpull.boundary(name)`` (a model call, a
checkpoint save, a store call). Each is named by its kind, name and occurrence in its phase
("model-call 2", "effect refund 1"), not by its position, so a run whose parallel steps arrive in
another order still finds the same step. A kill lands *before* or *after* one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plugpull.evidence import asdict

SIDES = ("before", "after")


@dataclass(frozen=True)
class Step:
    """One boundary of the clean run: its place in the list, what it is, and when it began."""

    index: int  # 1-based place among the run's boundaries
    kind: str  # "effect" or "mark"
    name: str
    n: int  # occurrence of (kind, name) in the phase, from 1
    seq: int  # its first call's sequence number in the clean run's trace
    t: float = 0.0  # seconds from the clean start's spawn to its first call
    # False: marked from a background thread (a checkpoint writer), so holding it does not stop the
    # run; None: an effect call, or a client that did not say.
    main_thread: bool | None = None

    @property
    def label(self) -> str:
        return f"effect {self.name} {self.n}" if self.kind == "effect" else f"{self.name} {self.n}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "label": self.label}


def steps_of(trace: list[dict[str, Any]]) -> list[Step]:
    """The boundaries of a trace (effect calls and marks in arrival order), in order of their first call.

    An effect call is one step; a mark's "before" opens a step; its "after" closes the oldest open
    step of that name. An "after" with no open "before" is a step of its own.
    """
    steps: list[Step] = []
    seen: dict[tuple[str, str], int] = {}
    open_marks: dict[str, int] = {}
    for entry in sorted(trace, key=lambda e: e["seq"]):
        kind, name = entry.get("kind", "effect"), entry["name"]
        if kind == "mark" and entry.get("edge") == "after" and open_marks.get(name, 0) > 0:
            open_marks[name] -= 1
            continue
        if kind == "mark" and entry.get("edge") == "before":
            open_marks[name] = open_marks.get(name, 0) + 1
        seen[(kind, name)] = seen.get((kind, name), 0) + 1
        steps.append(
            Step(
                index=len(steps) + 1,
                kind=kind,
                name=name,
                n=seen[(kind, name)],
                seq=entry["seq"],
                t=float(entry.get("t", 0.0)),
                main_thread=entry.get("main_thread"),
            )
        )
    return steps


def selected(steps: list[Step], wanted: list[str]) -> tuple[list[Step], list[str]]:
    """The steps ``--boundary`` picks, and the selectors that matched none.

    A selector is a place in the list (``7``), a label (``model-call 2``, ``effect refund 1``), a
    name (``model-call``: every occurrence) or ``effect`` (every effect call). No selector: every step.
    """
    if not wanted:
        return list(steps), []
    picked: set[int] = set()
    unmatched = []
    for spec in wanted:
        spec = spec.strip()
        hits = [
            s.index
            for s in steps
            if spec in (str(s.index), s.label, s.name, f"effect {s.name}") or (spec == "effect" and s.kind == "effect")
        ]
        if not hits:
            unmatched.append(spec)
        picked.update(hits)
    return [s for s in steps if s.index in picked], unmatched


def edges_of(trace: list[dict[str, Any]]) -> list[tuple[float, str]]:
    """Every call of a trace as (seconds since spawn, "before model-call 1" / "after effect refund 1")."""
    out = []
    seen: dict[tuple[str, str, str], int] = {}
    for entry in sorted(trace, key=lambda e: e["seq"]):
        kind, name = entry.get("kind", "effect"), entry["name"]
        edge = entry.get("edge") or "call"
        seen[(kind, name, edge)] = seen.get((kind, name, edge), 0) + 1
        n = seen[(kind, name, edge)]
        what = f"effect {name} {n}" if kind == "effect" else f"{name} {n}"
        out.append((float(entry.get("t", 0.0)), f"{edge} {what}" if kind == "mark" else f"call of {what}"))
    return out


def around(
    trace: list[dict[str, Any]], killed_at: float, clean: list[dict[str, Any]] | None = None
) -> tuple[str | None, str | None]:
    """The calls either side of a kill at ``killed_at`` seconds after spawn: (last one done, next one).

    The killed run never makes its next call, so that one is named from the ``clean`` run's trace
    when given.
    """
    edges = edges_of(trace)
    done = [label for t, label in edges if t <= killed_at]
    following = [label for t, label in edges if t > killed_at]
    if done and not following and clean is not None:
        names = [label for _, label in edges_of(clean)]
        if done[-1] in names and names.index(done[-1]) + 1 < len(names):
            following = [names[names.index(done[-1]) + 1]]
    return (done[-1] if done else None), (following[0] if following else None)


def landing(trace: list[dict[str, Any]], killed_at: float | None, clean: list[dict[str, Any]] | None = None) -> str:
    """Where a kill at ``killed_at`` seconds after spawn landed among the killed phase's calls.

    "before any boundary" (the process was still starting: imports, setup), "between after
    model-call 1 and call of effect refund 1", "after the last boundary (after model-call 2)", or
    "after the run ended" (``killed_at`` None: the phase exited before the kill).
    """
    if killed_at is None:
        return "after the run ended"
    done, following = around(trace, killed_at, clean)
    if done is None:
        return "before any boundary"
    if following is None:
        return f"after the last boundary ({done})"
    return f"between {done} and {following}"


def _step(edge: str) -> tuple[str, str]:
    """An edge of edges_of as (step label, "call" | "before" | "after"): "call of effect refund 1" ->
    ("effect refund 1", "call"); "after model-call 2" -> ("model-call 2", "after")."""
    if edge.startswith("call of "):
        return edge.removeprefix("call of "), "call"
    side, _, label = edge.partition(" ")
    return label, side


def aimed_kill(
    trace: list[dict[str, Any]], killed_at: float | None, clean: list[dict[str, Any]] | None = None
) -> tuple[str, str] | None:
    """The aimed kill (``--boundary LABEL --point SIDE``) that leaves a run as a random kill left it.

    Right after an effect call (the provider records it on arrival): that effect's "after". Else
    the next step's "before": nothing of it had begun, or it had begun and left nothing (a kill
    inside a step: a model call, an atomic save). After the last boundary: that step's own side.
    None when nothing was killed or the kill came before any boundary.
    """
    if killed_at is None:
        return None
    done, following = around(trace, killed_at, clean)
    if done is None:
        return None
    label, edge = _step(done)
    if edge == "call":
        return label, "after"
    if following is not None:
        return _step(following)[0], "before"
    return label, edge
