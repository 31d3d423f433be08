"""The Session store: a fake database on another machine that can lose one write or its ack.

Pure logic, no sockets (the channel module serves it and, on :class:`Drop`, closes the
connection without a reply). Semantics, as a plain remote database table would have:

- one Session call is one store call;
- it keeps exactly the items it is given, in order: no keys, no dedup, no rewriting;
- ``add_items``, ``pop_item`` and ``clear_session`` are *writes* and are numbered 1, 2, 3, ...
  across the whole run (start and resume share one numbering, so a fault aimed at write N
  lands at most once); ``get_items`` is a read and is not numbered.

A fault point drops one chosen write's reply (``fault=(N, point)``):

- ``write-lost``: the store does not keep the items; the call fails;
- ``ack-lost``: the store keeps the items; the call fails.

The caller cannot tell the two apart: it sees a closed connection either way, which is
what a client of a remote database sees when the link dies mid-call. This is the fault of
openai/openai-agents-python#4775 ("RunState pending input can be duplicated when a Session
append loses acknowledgement").
"""

from __future__ import annotations

import copy
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from plugpull.errors import StoreError

POINTS = ("write-lost", "ack-lost")
READ_METHODS = ("get_items",)
WRITE_METHODS = ("add_items", "pop_item", "clear_session")
METHODS = READ_METHODS + WRITE_METHODS


@dataclass(frozen=True)
class Reply:
    """Answer the call with ``result``."""

    result: Any = None
    dropped: bool = False


@dataclass(frozen=True)
class Drop:
    """Close the call without an answer (a lost write or a lost ack)."""

    write: int
    point: str
    result: Any = None
    dropped: bool = True


@dataclass
class Write:
    """One numbered write as the store saw it.

    ``items`` is what the write was about: the items given to ``add_items``, the item
    ``pop_item`` removed (empty if none), the items ``clear_session`` removed.
    """

    number: int
    phase: str
    method: str
    session: str
    items: list[Any]
    kept: bool
    answered: bool
    fault: str | None = None  # the fault point that dropped this write's reply, if any
    pid: int | None = None  # the caller's pid from the socket's peer credentials

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "phase": self.phase,
            "method": self.method,
            "session": self.session,
            "items": copy.deepcopy(self.items),
            "kept": self.kept,
            "answered": self.answered,
            "fault": self.fault,
            "pid": self.pid,
        }


@dataclass
class Store:
    """Session contents per session id, a log of every write, and at most one armed fault."""

    fault: tuple[int, str] | None = None
    phase: str = "start"
    writes: list[Write] = field(default_factory=list)
    reads: list[dict[str, Any]] = field(default_factory=list)
    contents: dict[str, list[Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if self.fault is not None:
            number, point = self.fault
            if point not in POINTS:
                raise ValueError(f"unknown store fault point {point!r}; known: {', '.join(POINTS)}")
            if not isinstance(number, int) or number < 1:
                raise ValueError(f"the faulted write must be a number >= 1, not {number!r}")

    def call(
        self, method: str, session: str, args: dict[str, Any], *, pid: int | None = None, phase: str | None = None
    ) -> Reply | Drop:
        """Take one Session call; returns the reply to send or :class:`Drop` to send none.

        Raises :class:`StoreError` for a call no Session makes (unknown method, items
        not a list); nothing is numbered or kept then.
        """
        if method not in METHODS:
            raise StoreError(f"unknown store method {method!r}; known: {', '.join(METHODS)}")
        with self._lock:
            phase = phase if phase is not None else self.phase
            items = self.contents.setdefault(session, [])
            if method == "get_items":
                limit = args.get("limit")
                if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
                    raise StoreError(f"get_items: limit must be an integer or null, not {limit!r}")
                # As SQLiteSession: the latest ``limit`` items in chronological order; None is all.
                got = items if limit is None else (items[-limit:] if limit > 0 else [])
                self.reads.append(
                    {"phase": phase, "session": session, "limit": limit, "returned": len(got), "pid": pid}
                )
                return Reply(copy.deepcopy(got))
            if method == "add_items":
                given = args.get("items")
                if not isinstance(given, list):
                    raise StoreError("add_items: items must be a list")
                about, result = copy.deepcopy(given), None
            elif method == "pop_item":
                about = items[-1:]
                result = copy.deepcopy(items[-1]) if items else None
            else:  # clear_session
                about, result = list(items), None
            number = len(self.writes) + 1
            point = self.fault[1] if self.fault is not None and self.fault[0] == number else None
            keep = point != "write-lost"
            if keep:
                if method == "add_items":
                    items.extend(copy.deepcopy(about))
                elif method == "pop_item":
                    del items[-1:]
                else:
                    items.clear()
            self.writes.append(
                Write(
                    number,
                    phase,
                    method,
                    session,
                    copy.deepcopy(about),
                    kept=keep,
                    answered=point is None,
                    fault=point,
                    pid=pid,
                )
            )
            if point is not None:
                return Drop(number, point)
            return Reply(result)

    def items(self, session: str) -> list[Any]:
        """What the store holds for ``session`` now, oldest first."""
        with self._lock:
            return copy.deepcopy(self.contents.get(session, []))

    def counts(self) -> dict[str, int]:
        """Stored occurrences of every item any ``add_items`` ever carried, by :func:`identity`.

        0 means an item handed to the store is no longer there (lost); 2 or more means the
        same item was stored again (duplicated).
        """
        with self._lock:
            written = [identity(i) for w in self.writes if w.method == "add_items" for i in w.items]
            stored: dict[str, int] = {}
            for items in self.contents.values():
                for item in items:
                    key = identity(item)
                    stored[key] = stored.get(key, 0) + 1
            return {key: stored.get(key, 0) for key in dict.fromkeys(written)}

    def writes_carrying(self, token: str) -> list[int]:
        """Numbers of the writes that carry the user input marked with ``token``."""
        with self._lock:
            return [w.number for w in self.writes if any(carries(i, token) for i in w.items)]

    def occurrences(self, token: str, session: str | None = None) -> int:
        """How many stored items are the user input marked with ``token``."""
        with self._lock:
            sessions = [session] if session is not None else list(self.contents)
            return sum(1 for s in sessions for i in self.contents.get(s, []) if carries(i, token))


STAGED = "<staged input>"


def run_names(writes: list[dict[str, Any]], staged: str | None, values: list[str]) -> dict[str, str]:
    """Per-run value -> the name it has in every run, so two runs' sessions can be compared item by item.

    A run draws its own tokens and ids (the staged input's token, ids the model makes up); the
    app announces them (``staged_input=``, ``run_value=``). The staged token is named
    ``<staged input>``; every other announced value ``<run value N>``, N by its first appearance
    in the write log, so the same item in the probe and in a faulted run gets the same identity.
    """
    names = {staged: STAGED} if staged else {}
    pending = [v for v in dict.fromkeys(values) if v and v not in names]
    for write in writes:
        for item in write.get("items", []):
            text = text_of(item)
            for _, value in sorted((text.find(v), v) for v in pending if v in text):
                names[value] = f"<run value {len(names) + (0 if staged else 1)}>"
            pending = [v for v in pending if v not in names]
    return names


def renamed(counts: dict[str, int], names: dict[str, str]) -> dict[str, int]:
    """``counts`` (keyed by :func:`identity`) with every per-run value replaced by its name."""
    ordered = sorted(names, key=len, reverse=True)
    out: dict[str, int] = {}
    for key, count in counts.items():
        for value in ordered:
            key = key.replace(value, names[value])
        out[key] = out.get(key, 0) + count
    return out


def carries(item: Any, token: str) -> bool:
    """Whether ``item`` is a user message whose text holds ``token``.

    Only the user's own message counts: a model reply that quotes the user is another item.
    """
    return (
        isinstance(item, dict)
        and item.get("role") == "user"
        and item.get("type") in (None, "message")
        and token in _text(item.get("content"))
    )


def text_of(item: Any) -> str:
    """The item as canonical JSON text, for substring search."""
    return json.dumps(item, sort_keys=True, ensure_ascii=False)


def identity(item: Any) -> str:
    """Which logical item a stored item is, so a rewrite that changes its form still matches.

    A framework may write the same logical item twice in different shapes (a user message's
    ``content`` as a string, then as ``[{"type": "input_text", ...}]``; an ``id`` added or
    dropped; ``status`` filled in). Counting by raw JSON would call those two different items,
    each stored once, and hide a duplicate. So:

    - a tool call or tool output is its ``type`` and ``call_id`` (the model's id for the call);
    - a message is its ``role`` and its text, whatever the content's shape;
    - anything else is its canonical JSON.
    """
    if isinstance(item, dict):
        kind = item.get("type")
        if isinstance(item.get("call_id"), str) and kind:
            return f"{kind}:{item['call_id']}"
        role = item.get("role")
        if isinstance(role, str) and (kind in (None, "message")):
            return f"message:{role}:{_text(item.get('content'))}"
    return "json:" + text_of(item)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, dict) and isinstance(part.get("refusal"), str):
                parts.append(part["refusal"])
            else:
                parts.append(text_of(part))
        return "".join(parts)
    return text_of(content)
