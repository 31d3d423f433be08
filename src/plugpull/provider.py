"""The effect provider: a fake payment API with idempotency keys, and where it holds a call.

Pure logic, no sockets (the channel module serves it). Semantics, as at a payment API
that takes an idempotency key (e.g. Stripe's ``Idempotency-Key`` header):

- same name and same key: one effect, however often it is asked for;
- the same key under two names: two effects;
- no key: a new effect on every call.

A kill point *holds* one call: at ``before-effect`` the provider holds the call before
recording anything; at ``after-effect`` it records the effect and holds the reply. The
scenario kills the caller's process group while the call is held.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field

POINTS = ("before-effect", "after-effect")

#: What a sibling tool call (another tool of the same model turn) is doing when the held one is
#: killed: "finished": its effect call was recorded and answered; "running": its effect call is
#: held too, at the same point, so both tools are in flight at the kill.
SIBLING_STATES = ("finished", "running")

#: How one save the target marks (``client.boundary`` around its write, e.g. a checkpointer's put)
#: stands when the kill is sent (kill-mid-tool ``--save NAME:N:STATE``): "withheld": the N-th "before"
#: mark of NAME is held unanswered until the kill, so that save never happens; "landed": the kill waits
#: until N "after" marks of NAME have arrived, so N such saves finished. A save written by a background
#: thread (LangGraph's checkpoint writer) otherwise races the kill
#: (docs/DECISIONS.md, "Every boundary and aimed saves").
SAVE_STATES = ("withheld", "landed")


@dataclass
class EffectCall:
    """One ``record_effect`` call as the provider saw it."""

    seq: int
    phase: str
    name: str
    key: str | None
    pid: int | None  # the caller's pid from the socket's peer credentials
    group: int | None = None  # the caller's process group when the call arrived (read by the channel)
    recorded: bool = False  # this call added an effect (False for a repeat of a known key)
    held_at: str | None = None  # the kill point at which it was held, if any
    answered: bool = False
    closed_at: float | None = None  # monotonic time the caller's end of the connection closed
    kind: str = "effect"  # "effect": record_effect; "mark": a boundary mark (client.boundary), never an effect
    edge: str | None = None  # a mark's side of its step: "before" or "after"
    at: float = 0.0  # monotonic time the call arrived (where a random kill landed is read from it)
    main_thread: bool | None = None  # sent from the caller's main thread (None: not said, an older client)
    # cancel-mid-stream: the held call was answered after the client's cancel landed (the run drains);
    # a held before-effect call is recorded then, as a request already sent completes at a real API.
    released: bool = False
    # tool-error: the held call was answered with a fault (the client raised it): "ToolFault", "ToolTimeout".
    # A held before-effect call that fails is never recorded: the request never reached the API.
    faulted: str | None = None
    # tool-error: the caller said it is raising the fault (client.record_effect sends "raised" first)
    raised: bool = False

    def to_dict(self) -> dict:
        return {
            "seq": self.seq,
            "phase": self.phase,
            "name": self.name,
            "key": self.key,
            "pid": self.pid,
            "group": self.group,
            "recorded": self.recorded,
            "held_at": self.held_at,
            "answered": self.answered,
            **(
                {"kind": self.kind, "edge": self.edge, "main_thread": self.main_thread}
                if self.kind != "effect"
                else ({} if self.main_thread is None else {"main_thread": self.main_thread})
            ),
            **({"released": True} if self.released else {}),
            **({"faulted": self.faulted} if self.faulted else {}),
            **({"raised": True} if self.raised else {}),
        }


@dataclass
class Provider:
    """Counts effects by idempotency key and, once armed, holds one call (the first, or the N-th of a name)."""

    calls: list[EffectCall] = field(default_factory=list)
    phase: str = "start"
    _armed: str | None = None
    _hold: tuple[str, int] | None = None
    _hold_seen: int = 0  # calls of the held name since arm()
    _effects: dict[tuple[str, str], int] = field(default_factory=dict)
    _anonymous: dict[str, int] = field(default_factory=dict)
    _seq: itertools.count = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    held: EffectCall | None = None
    held_event: threading.Event = field(default_factory=threading.Event)
    # tool-error: the held call's caller said it raises the fault (its process is past the call, in the tool)
    raised_event: threading.Event = field(default_factory=threading.Event)
    # Boundary marks (client.boundary), apart from ``calls`` so effect counts never see them; they
    # share ``seq`` with the effect calls, so the two merge into the run's trace.
    marks: list[EffectCall] = field(default_factory=list)
    _step: tuple[str, str, int, str] | None = None  # (kind, name, N, side) armed by arm_step
    _step_seen: int = 0
    # Sibling tool calls: (NAME, state) armed with arm(); the sibling's first effect call from arm().
    sibling_want: tuple[str, str] | None = None
    sibling: EffectCall | None = None
    sibling_event: threading.Event = field(default_factory=threading.Event)
    # Saves asked for with arm(saves=...): (NAME, N, STATE) each, the marks of each name and edge
    # seen since arm(), and per save the mark that matched (the held "before" or the N-th "after").
    saves_want: tuple[tuple[str, int, str], ...] = ()
    _save_seen: dict[tuple[str, str], int] = field(default_factory=dict)
    save_marks: list[EffectCall | None] = field(default_factory=list)

    def arm(
        self,
        point: str | None,
        hold: tuple[str, int] | None = None,
        sibling: tuple[str, str] | None = None,
        saves: tuple[tuple[str, int, str], ...] = (),
    ) -> None:
        """Hold a call at ``point`` (one of :data:`POINTS`); None answers every call.

        ``hold`` (NAME, N) picks the N-th call of effect NAME from now on; without it, the next
        call of any effect. With parallel tool calls either tool may call first, so only a
        named hold says which effect the kill lands in.

        ``sibling`` (NAME, state) names another tool's effect whose state the kill waits for
        (:meth:`sibling_ready`): "finished" answers its first call as usual; "running" holds its
        first call at ``point`` as well, so the kill finds both calls held.

        ``saves`` (NAME, N, STATE) each: how a save the target marks must stand at the kill
        (:data:`SAVE_STATES`, :meth:`saves_ready`); the marks are counted from now on. Unarmed
        (``point`` None), nothing is withheld.
        """
        if point is not None and point not in POINTS:
            raise ValueError(f"unknown kill point {point!r}; known: {', '.join(POINTS)}")
        if sibling is not None and (sibling[1] not in SIBLING_STATES or hold is None or sibling[0] == hold[0]):
            raise ValueError(f"cannot wait for sibling {sibling!r} with hold {hold!r}")
        for name, nth, state in saves:
            if not name or nth < 1 or state not in SAVE_STATES:
                raise ValueError(f"cannot hold save {name!r} {nth!r} {state!r}")
        with self._lock:
            self._armed, self._hold, self._hold_seen = point, hold, 0
            self._step = None
            self.sibling_want, self.sibling = (sibling if point is not None else None), None
            self.sibling_event.clear()
            self.saves_want = tuple(saves) if point is not None else ()
            self._save_seen = {}
            self.save_marks = [None] * len(self.saves_want)

    def arm_step(self, kind: str, name: str, nth: int, side: str) -> None:
        """Hold the N-th occurrence (from now on) of one step, on one side of it (every-boundary).

        ``kind`` "effect": the N-th ``record_effect`` call of ``name``, held at before-effect (side
        "before") or after-effect ("after"). ``kind`` "mark": the N-th boundary mark of ``name``
        with that edge. Every other call is answered.
        """
        if kind not in ("effect", "mark") or side not in ("before", "after") or nth < 1:
            raise ValueError(f"cannot hold {kind} {name} {nth} {side}")
        with self._lock:
            self._armed, self._hold, self._hold_seen = None, None, 0
            self._step, self._step_seen = (kind, name, nth, side), 0
            # A double crash arms again in the same run: the first kill's held call is done with.
            self.held = None
            self.held_event.clear()

    def _holds_step(self, kind: str, name: str, edge: str | None) -> str | None:
        """The point to hold this call at, when it is the armed step; else None."""
        if self._step is None:
            return None
        want_kind, want_name, nth, side = self._step
        if kind != want_kind or name != want_name or (kind == "mark" and edge != side):
            return None
        self._step_seen += 1
        if self._step_seen != nth:
            return None
        self._step = None
        return side if kind == "mark" else f"{side}-effect"

    def receive_mark(self, name: str, edge: str, pid: int | None, group: int | None = None) -> tuple[EffectCall, bool]:
        """Take one boundary mark. Returns it and whether to hold it (True) or answer now."""
        with self._lock:
            mark = EffectCall(
                seq=next(self._seq), phase=self.phase, name=name, key=None, pid=pid, group=group, kind="mark", edge=edge
            )
            mark.at = time.monotonic()
            self.marks.append(mark)
            point = self._holds_step("mark", name, edge)
            if point is not None:
                mark.held_at = point
                self.held = mark
                self.held_event.set()
                return mark, True
            return mark, self._take_save(mark)

    def _take_save(self, mark: EffectCall) -> bool:
        """Count a mark toward the asked-for saves; True to hold it (the withheld save's "before")."""
        if not self.saves_want:
            return False
        seen = self._save_seen[(mark.name, mark.edge)] = self._save_seen.get((mark.name, mark.edge), 0) + 1
        hold = False
        for i, (name, nth, state) in enumerate(self.saves_want):
            if name != mark.name or seen != nth or self.save_marks[i] is not None:
                continue
            if state == "withheld" and mark.edge == "before":
                mark.held_at = "withheld"
                self.save_marks[i], hold = mark, True
            elif state == "landed" and mark.edge == "after":
                self.save_marks[i] = mark
        return hold

    def saves_ready(self) -> bool:
        """True when every asked-for save stands as asked: withheld (its held "before" mark still
        open) or landed (its N-th "after" mark arrived); True when none is asked for."""
        with self._lock:
            return all(self._save_ready(i) for i in range(len(self.saves_want)))

    def _save_ready(self, i: int) -> bool:
        mark = self.save_marks[i]
        if mark is None:
            return False
        return mark.closed_at is None if self.saves_want[i][2] == "withheld" else True

    def saves_at_kill(self) -> list[dict]:
        """Each asked-for save as it stood just before SIGKILL: its spec, whether it was ready, its mark."""
        with self._lock:
            return [
                {
                    "name": name,
                    "n": nth,
                    "state": state,
                    "ready": self._save_ready(i),
                    "mark": None if self.save_marks[i] is None else self.save_marks[i].to_dict(),
                    # the withheld mark's connection still open: the save was still held
                    "open": self.save_marks[i] is not None and self.save_marks[i].closed_at is None,
                    # marks of that name and edge seen since arm (how far the run got)
                    "seen": self._save_seen.get((name, "before" if state == "withheld" else "after"), 0),
                }
                for i, (name, nth, state) in enumerate(self.saves_want)
            ]

    def trace(self) -> list[EffectCall]:
        """Effect calls and boundary marks in arrival order."""
        with self._lock:
            return sorted([*self.calls, *self.marks], key=lambda c: c.seq)

    def _holds(self, name: str) -> bool:
        if self._step is not None:
            return False
        if self._armed is None:
            return False
        if self._hold is None:
            return True
        if name != self._hold[0]:
            return False
        self._hold_seen += 1
        return self._hold_seen == self._hold[1]

    def receive(
        self, name: str, key: str | None, pid: int | None, group: int | None = None, main_thread: bool | None = None
    ) -> tuple[EffectCall, bool]:
        """Take one call. Returns the call and whether to hold it (True) or answer now.

        ``group`` is the caller's process group read by the channel before this call: it is on
        the call before ``held_event`` fires, so a kill can never come before the caller is known.
        ``main_thread``: what the client said of the calling thread (None: it said nothing).
        """
        with self._lock:
            call = EffectCall(
                seq=next(self._seq), phase=self.phase, name=name, key=key, pid=pid, group=group, main_thread=main_thread
            )
            call.at = time.monotonic()
            self.calls.append(call)
            point, hold = self._armed, self._holds(name)
            step_point = self._holds_step("effect", name, None)
            if step_point is not None:
                point, hold = step_point, True
            if not hold and self._is_sibling(call):
                return self._take_sibling(call)
            if hold:
                self._armed = None
                call.held_at = point
            if not (hold and point == "before-effect"):
                self._record(call)
            if hold:
                self.held = call
                self.held_event.set()
            return call, hold

    def _is_sibling(self, call: EffectCall) -> bool:
        return self.sibling_want is not None and self.sibling is None and call.name == self.sibling_want[0]

    def _take_sibling(self, call: EffectCall) -> tuple[EffectCall, bool]:
        """The sibling's first call: held at the kill point ("running"), else recorded and answered."""
        self.sibling = call
        running = self.sibling_want[1] == "running"
        if running:
            # The held call's point, or the one armed if the sibling comes first.
            call.held_at = self.held.held_at if self.held is not None else self._armed
        if not (running and call.held_at == "before-effect"):
            self._record(call)
        if running:
            self.sibling_event.set()
        return call, running

    def sibling_ready(self) -> bool:
        """True when no sibling is asked for, or the sibling is where the kill wants it.

        "running": its call is held. "finished": its call was answered (the reply is on its way
        to the tool; the framework may still be saving the tool's output when the kill lands).
        """
        with self._lock:
            if self.sibling_want is None:
                return True
            if self.sibling is None:
                return False
            return self.sibling.held_at is not None if self.sibling_want[1] == "running" else self.sibling.answered

    def _record(self, call: EffectCall) -> None:
        if call.key is None:
            self._anonymous[call.name] = self._anonymous.get(call.name, 0) + 1
            call.recorded = True
            return
        ident = (call.name, call.key)
        if ident not in self._effects:
            self._effects[ident] = 0
            call.recorded = True
        self._effects[ident] += 1

    def release(self, call: EffectCall) -> None:
        """Let a held call go on (cancel-mid-stream, after the cancel landed): a held ``before-effect``
        call is recorded now, as the request it stands for completes at the API; the channel answers it."""
        with self._lock:
            call.released = True
            if call.kind == "effect" and call.held_at == "before-effect" and not call.recorded:
                self._record(call)

    def fail(self, call: EffectCall, fault: str) -> None:
        """Answer a held call with ``fault`` (tool-error): the caller raises it. Nothing is recorded now: a
        before-effect call stays unrecorded (the request failed before the API did anything), an after-effect
        one was recorded when it arrived (the API did the work; the reply was lost)."""
        with self._lock:
            call.faulted = fault
            call.answered = True

    def note_raised(self, name: str) -> bool:
        """The caller of the faulted held call says it raises now; False when no held call of ``name`` faulted."""
        with self._lock:
            call = self.held
            if call is None or not call.faulted or call.name != name:
                return False
            call.raised = True
        self.raised_event.set()
        return True

    def answer(self, call: EffectCall) -> dict:
        """The reply to an answered call: what the provider now knows of that effect."""
        with self._lock:
            call.answered = True
            return {"name": call.name, "key": call.key, "new": call.recorded, "count": self.count(call.name)}

    def mark_closed(self, call: EffectCall) -> None:
        with self._lock:
            call.closed_at = time.monotonic()

    def count(self, name: str) -> int:
        """How many distinct effects named ``name`` the provider has recorded."""
        return self._anonymous.get(name, 0) + sum(1 for (n, _k) in self._effects if n == name)

    def counts(self) -> dict[str, int]:
        """Effects per name, for every name any call used (0 for a name never recorded)."""
        with self._lock:
            return {name: self.count(name) for name in dict.fromkeys(c.name for c in self.calls)}
