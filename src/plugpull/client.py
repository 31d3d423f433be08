"""The agent side of plugpull: report effects and talk to the fake Session store.

This module runs inside the agent on every start and resume, so it imports only the
standard library (docs/architecture.md, "The agent side stays light").

Wire format (docs/protocol.md): a Unix stream socket whose path is in the environment
variable ``PLUGPULL_SOCKET``; one request at a time per connection (one connection per process
and thread), one line of UTF-8 JSON ending in ``\\n``; one reply line of the same form. The
harness may hold a request without answering (a kill point) or close the connection without
answering (a lost store write or a lost ack): the caller sees that as :class:`ChannelClosed`.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from typing import Any

SOCKET_ENV = "PLUGPULL_SOCKET"
WORKDIR_ENV = "PLUGPULL_WORKDIR"

#: The exit codes of an approval agent's ``approve`` / ``recover`` besides 0 (finished), for
#: resume-after-approval (docs/agent-protocol.md): the framework refused the approval (the pause was
#: claimed already, or there is none), and the run ended paused at an approval again instead of finished.
REFUSED_EXIT = 3
PAUSED_AGAIN_EXIT = 5
# Set by the every-boundary scenario only: other scenarios' runs send no boundary marks, so marking
# a run's steps changes nothing of their timing (a background checkpoint writer races the kill).
BOUNDARIES_ENV = "PLUGPULL_BOUNDARIES"
# Set by a test that must run under plugpull: every agent-side call outside a run raises NotInRun
# instead of doing nothing, so a wrapper that lost PLUGPULL_SOCKET fails loudly.
STRICT_ENV = "PLUGPULL_STRICT"
PROTOCOL_VERSION = 1


class PlugpullError(RuntimeError):
    """The harness refused a request or is not there."""


class NotInRun(PlugpullError):
    """Called outside a plugpull run (``PLUGPULL_SOCKET`` is not set) with ``PLUGPULL_STRICT=1``."""


class ChannelClosed(PlugpullError, ConnectionError):
    """The harness closed the call without an answer.

    For the store this is the fault a client of a remote database sees when its write or
    the write's acknowledgement is lost: it cannot tell which of the two happened.
    """


class ToolFault(ConnectionError):
    """The outside call failed, as a real client library's call fails: raised by :func:`record_effect` when the
    tool-error scenario answers the held call with a fault (a reset connection, a 5xx). Whether the effect happened
    before the failure is what the line's point says; the caller cannot tell, as a real caller cannot.

    Not a :class:`PlugpullError`: an agent that catches plugpull's own errors must not catch the fault it is tested
    with. A ``ConnectionError``, so a tool that handles network errors handles this one.
    """


class ToolTimeout(TimeoutError):
    """The outside call timed out: the reply never came in time (a socket's read timeout, ``TimeoutError``).

    Not a :class:`ToolFault`, as a socket timeout is no ``ConnectionError``: retry policies that retry connection
    errors only (LangGraph's default ``retry_on``) do not retry it. Both are ``OSError``s, as socket errors are.
    """


#: The faults the harness may answer an effect call with, by the name the reply carries (docs/protocol.md).
TOOL_FAULTS = {"ToolFault": ToolFault, "ToolTimeout": ToolTimeout}


def recv_line(sock: socket.socket) -> bytes | None:
    """Read one ``\n``-terminated line; None when the peer closes before the line is complete."""
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    return buf


def strict() -> bool:
    """``PLUGPULL_STRICT`` is set (to anything but "", "0"): a call outside a run raises :class:`NotInRun`."""
    return os.environ.get(STRICT_ENV, "") not in ("", "0")


def in_run(call: str) -> bool:
    """Whether this process runs under plugpull (``PLUGPULL_SOCKET`` set).

    Outside a run every agent-side call does nothing and returns what it would return, so instrumented
    code can ship unchanged; with ``PLUGPULL_STRICT=1`` it raises :class:`NotInRun` instead.
    """
    if os.environ.get(SOCKET_ENV):
        return True
    if strict():
        raise NotInRun(
            f"plugpull: {call} called outside a plugpull run ({SOCKET_ENV} is not set and {STRICT_ENV} is); "
            "run the agent through `plugpull --agent`"
        )
    return False


class _Local:
    """What the provider and the store would answer, kept in this process, for calls outside a run.

    The provider's rules (docs/protocol.md, "Effect semantics") and the store's methods, with nothing
    held or dropped: code that reads ``record_effect``'s reply or a Session over ``call_store`` keeps
    working when it runs without plugpull.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.keys: dict[str, set[str]] = {}
        self.anonymous: dict[str, int] = {}
        self.sessions: dict[str, list[Any]] = {}

    def effect(self, name: str, key: str | None) -> dict[str, Any]:
        with self.lock:
            keys = self.keys.setdefault(name, set())
            if key is None:
                self.anonymous[name] = self.anonymous.get(name, 0) + 1
                new = True
            else:
                new = key not in keys
                keys.add(key)
            return {"name": name, "key": key, "new": new, "count": self.anonymous.get(name, 0) + len(keys)}

    def store(self, method: str, session: str, args: dict[str, Any]) -> Any:
        with self.lock:
            items = self.sessions.setdefault(session, [])
            if method == "get_items":
                limit = args.get("limit")
                got = items if limit is None else (items[-limit:] if limit > 0 else [])
                return json.loads(json.dumps(got))
            if method == "add_items":
                items.extend(json.loads(json.dumps(args.get("items") or [])))
                return None
            if method == "pop_item":
                return items.pop() if items else None
            if method == "clear_session":
                items.clear()
                return None
        raise PlugpullError(f"plugpull refused the store call: unknown store method {method!r}")


_local = _Local()


class _Connections(threading.local):
    """This thread's open connection to the harness, reused for its next request (docs/protocol.md)."""

    key: tuple[int, str] | None = None
    sock: socket.socket | None = None


_connections = _Connections()
#: Every connection this process opened, so a forked child closes its copies (below).
_opened: list[socket.socket] = []
_opened_lock = threading.Lock()


def _forget_connections() -> None:
    # A child forked by the agent must not hold its parent's connections: a held call's connection
    # closing when its process dies is part of the kill's proof (docs/agent-protocol.md).
    for sock in _opened:
        try:
            sock.close()
        except OSError:
            pass
    _opened.clear()
    _connections.key = _connections.sock = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_connections)


def _connection(path: str) -> socket.socket:
    key = (os.getpid(), path)
    if _connections.sock is None or _connections.key != key:
        _drop_connection()  # one to another run's socket (a test process running many)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
        except OSError:
            sock.close()
            raise
        with _opened_lock:
            _opened.append(sock)
        _connections.key, _connections.sock = key, sock
    return _connections.sock


def _drop_connection() -> None:
    sock, _connections.key, _connections.sock = _connections.sock, None, None
    if sock is not None:
        with _opened_lock:
            if sock in _opened:
                _opened.remove(sock)
        sock.close()


def _request(payload: dict[str, Any]) -> dict[str, Any]:
    path = os.environ.get(SOCKET_ENV)
    if not path:
        raise NotInRun(
            f"plugpull: {payload.get('op')} called outside a plugpull run "
            f"({SOCKET_ENV} is not set); run the agent through `plugpull --agent`"
        )
    payload = {"v": PROTOCOL_VERSION, **payload}
    # One connection per process and thread, one request at a time on it: a connect and a harness
    # thread per request were most of a request's cost (docs/performance.md, "Throughput").
    sock = _connection(path)
    try:
        sock.sendall(json.dumps(payload).encode() + b"\n")
        buf = recv_line(sock)
    except BaseException:
        _drop_connection()
        raise
    if buf is None:
        _drop_connection()  # the harness closed it: a fault point, or the run is over
        raise ChannelClosed(f"plugpull closed the {payload.get('op')} call without an answer")
    reply = json.loads(buf)
    if not reply.get("ok"):
        _drop_connection()  # the harness closes the connection after a refusal
        raise PlugpullError(f"plugpull refused the {payload.get('op')} call: {reply.get('error')}")
    return reply


def record_effect(name: str, *, key: str | None = None) -> dict[str, Any]:
    """Report one outside action (a charge, a refund, a sent message) to the provider.

    Same ``name`` and same ``key`` is one effect, however often it is called (an
    idempotency key at a payment API); the same key under two names is two effects;
    ``key=None`` is a new effect on every call. Blocks until the provider answers, which
    at a kill point is never: the harness SIGKILLs the caller's process group while the
    call is held. Returns the provider's answer: ``{"name", "key", "new", "count"}``.

    Outside a plugpull run it returns the answer a fresh provider would give, counted in this process,
    and sends nothing (``PLUGPULL_STRICT=1``: raises :class:`NotInRun`). In the tool-error scenario the held
    call raises :class:`ToolFault` (or :class:`ToolTimeout`) instead of returning, before or after the provider
    recorded the effect: what the tool sees when its outside call fails.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("record_effect: name must be a non-empty string")
    if key is not None and not isinstance(key, str):
        raise ValueError("record_effect: key must be a string or None")
    if not in_run("record_effect"):
        return _local.effect(name, key)
    # Which thread asked: a duplicate made by a background thread is named under its FAIL line.
    main = threading.current_thread() is threading.main_thread()
    reply = _request({"op": "effect", "name": name, "key": key, "main_thread": main})
    fault = reply.get("fault")
    if fault is not None:  # tool-error: the call fails as a client library's would
        # Said first, so the harness knows the raise reached the tool (a kill aimed right after it waits for this).
        _request({"op": "raised", "name": name})
        raise TOOL_FAULTS.get(fault.get("raise"), ToolFault)(fault.get("message") or f"{name}: the call failed")
    return reply["effect"]


def call_store(method: str, session: str, **args: Any) -> Any:
    """One call to the fake Session store (a database on another machine).

    ``method`` is one of ``get_items``, ``add_items``, ``pop_item``, ``clear_session``;
    ``args`` are JSON values (``items=[...]``, ``limit=N``). Raises :class:`ChannelClosed`
    when the store drops the call at a fault point. Outside a plugpull run, a store kept in this
    process answers (``PLUGPULL_STRICT=1``: raises :class:`NotInRun`).
    """
    if not in_run("call_store"):
        return _local.store(method, session, args)
    return _request({"op": "store", "method": method, "session": session, **args})["result"]


def gate() -> None:
    """Wait at plugpull's start line, then return: call it right before the racing call.

    In ``resume-after-approval``'s ``racing-resumers``, plugpull starts N ``approve``
    processes and answers their ``gate()`` calls together once all N are waiting, so their
    approvals race for real instead of being spread out by N framework imports. Outside
    that point (and outside a plugpull run) it returns at once.
    """
    if not in_run("gate"):
        return
    _request({"op": "gate"})


def record_result(value: Any) -> None:
    """Report this run's final outcome (final answer, order state: any JSON value), once per finished run.

    The clean run's result is the *golden result*: after a crash and a resume, plugpull
    passes a run only when its effects happened exactly once and the resumed run reported a
    result equal to the golden one (JSON equality). Call it where the run ends, in every
    phase that finishes the run (``start`` of a clean run, ``resume``, ``approve``,
    ``recover``), with what the run's user would read: the final answer text, the order's
    state. Values the model makes up (ids, timestamps) differ from run to run: leave them
    out, or name them in ``announce(result_ignore="field,other.field")``. A second call in
    one process is recorded too, as evidence (docs/agent-protocol.md). Does nothing outside
    a plugpull run, so an agent can call it unconditionally (``PLUGPULL_STRICT=1``: raises :class:`NotInRun`).
    """
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"record_result: value must be a JSON value ({exc})") from None
    if not in_run("record_result"):
        return
    _request({"op": "result", "value": value})


#: The two sides of a boundary: a kill lands before the step began or after it finished.
EDGES = ("before", "after")


def mark_boundary(name: str, edge: str) -> None:
    """Tell plugpull the run is at one side of a step: ``edge`` is "before" or "after".

    A *boundary* is a step of the run a crash can land next to: a model call, a checkpoint save,
    a store call (docs/agent-protocol.md, "Boundaries"). plugpull lists every boundary of the
    clean run and, in the ``every-boundary`` scenario, holds this call at one of them and
    SIGKILLs the run, as it holds ``record_effect`` at a kill point. Does nothing outside a
    plugpull run (``PLUGPULL_STRICT=1``: raises :class:`NotInRun`), and in runs that ask for no marks
    (``PLUGPULL_BOUNDARIES`` unset). Prefer the :class:`boundary` context manager; this is for code whose
    step begins and ends in different places (callbacks).
    """
    if not isinstance(name, str) or not name:
        raise ValueError("boundary: name must be a non-empty string")
    if edge not in EDGES:
        raise ValueError(f"boundary: edge must be one of {', '.join(EDGES)}")
    if not in_run("boundary") or not os.environ.get(BOUNDARIES_ENV):
        return
    # Whether the step runs on the main thread: a mark held in a background thread (a checkpoint
    # writer) does not stop the run, which goes on until the kill (docs/agent-protocol.md).
    main = threading.current_thread() is threading.main_thread()
    _request({"op": "boundary", "name": name, "edge": edge, "main_thread": main})


class boundary:  # noqa: N801 - used like a function: `with boundary("model-call"):`
    """Mark one step of the run: ``with boundary("model-call"): reply = model(...)``.

    Marks the step's "before" side on entry and its "after" side when the block finishes. A block
    that raises marks no "after": the step did not finish. Every entry counts as the step's next
    occurrence ("model-call 1", "model-call 2"), per process. Usable around blocking code in
    threads and in ``async`` code alike (the call is one short local socket round trip).
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("boundary: name must be a non-empty string")
        self.name = name

    def __enter__(self) -> boundary:
        mark_boundary(self.name, "before")
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            mark_boundary(self.name, "after")


class RequestRejected(PlugpullError):
    """The model request's history is one a real provider API refuses (HTTP 400): raised by a strict
    scripted model through :func:`check_model_request`. Its message says which rule and quotes the API."""


def check_model_request(messages: list[dict[str, Any]]) -> None:
    """Report the history a model call is about to send, and refuse it as a real provider would.

    ``messages``: the request's conversation as neutral messages (``role``, ``content``, ``tool_calls``
    with ``id`` and ``name``, ``tool_call_id``; docs/agent-protocol.md). plugpull keeps every request as
    evidence and answers whether a provider would accept it; raises :class:`RequestRejected` when not
    (an assistant tool call without its result, a result without its call, two assistant turns in a row).
    Does nothing outside a plugpull run.
    """
    if not os.environ.get(SOCKET_ENV):
        return
    rejected = _request({"op": "model-request", "messages": messages}).get("rejected")
    if rejected:
        raise RequestRejected(f"400 Bad Request: {rejected}")


def record_conversation(messages: list[dict[str, Any]]) -> None:
    """Report the conversation the framework saved, read through its own API, as neutral messages.

    cancel-mid-stream's ``resume`` calls it before it sends the next turn: what the user saw streamed
    before the cancel is looked for in it. Does nothing outside a plugpull run.
    """
    if not os.environ.get(SOCKET_ENV):
        return
    _request({"op": "conversation", "messages": messages})


def wait_for_cancel() -> bool:
    """Block until plugpull tells this run's client to walk away; True then (cancel-mid-stream).

    Call it from a watcher thread beside the stream's consumer: when it returns True, cancel the
    stream the way your client does (cancel the task, close the generator, the framework's cancel,
    KeyboardInterrupt), then call :func:`record_cancel`. plugpull answers it only while the run is
    held at the line's cancel point; it returns False outside a plugpull run or when the harness
    goes away without asking for a cancel (a run that is not cancelled).
    """
    if not os.environ.get(SOCKET_ENV):
        return False
    try:
        return bool(_request({"op": "cancel-wait"}).get("cancel"))
    except ChannelClosed:
        return False


def record_cancel(style: str, seen: dict[str, Any]) -> None:
    """Report that the cancel landed: the consumer stopped reading (``style``: how it cancelled).

    ``seen``: what the user had on screen when the cancel landed (``{"text": [...], "tool_calls":
    [...], "tool_results": [...]}``: the streamed text of each assistant message, and the tool call ids
    whose call and whose result were shown). plugpull checks that this report comes while the run is
    still held at the cancel point (the proof the cancel landed there), then lets the run drain, or
    SIGKILLs it at a ``...-then-sigkill`` point. Does nothing outside a plugpull run.
    """
    if not os.environ.get(SOCKET_ENV):
        return
    _request({"op": "cancelled", "style": style, "seen": seen})


def announce(**info: str | int | float) -> None:
    """Tell the harness facts read inside this process (framework and version, options).

    Versions are read where the agent runs (``importlib.metadata``), never copied from a
    pin file (docs/architecture.md). Does nothing outside a plugpull run, so an agent can call it
    unconditionally (``PLUGPULL_STRICT=1``: raises :class:`NotInRun`).
    """
    if not in_run("announce"):
        return
    _request({"op": "announce", **info})


def import_present(*modules: str) -> None:
    """Import each of ``modules`` that this installation has; one a release lacks is skipped.

    For a ``plugpull_prefork`` hook (docs/cli.md, ``--fork-server``): it imports once, in the fork server, what every
    forked phase would otherwise import on first use; the phase imports whatever its release needs, as a cold
    one does, so a missing module is no error here.
    """
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            pass
