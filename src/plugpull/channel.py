"""The harness side of the agent channel: a Unix socket server for the provider and the store.

The socket lives in a fresh private directory (mode 0700) so only this user can connect;
its path is handed to the agent in ``PLUGPULL_SOCKET``. A connection carries one request
at a time (wire format: docs/protocol.md). The caller's pid comes from the kernel, via
``SO_PEERCRED`` on the connection, never from the request body: that is what lets the
kill proof say which process made a held call.
"""

from __future__ import annotations

import json
import shutil
import socket
import struct
import threading
from typing import Any

from plugpull.client import PROTOCOL_VERSION, SOCKET_ENV
from plugpull.process import group_of, socket_dir
from plugpull.provider import Provider

MAX_REQUEST_BYTES = 1 << 20
STORE_METHODS = ("get_items", "add_items", "pop_item", "clear_session")


def peer_pid(conn: socket.socket) -> int | None:
    """The pid of the process on the other end, as the kernel recorded it at connect()."""
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    pid, _uid, _gid = struct.unpack("3i", creds)
    return pid or None


class Gate:
    """A start line for racing phases: each ``gate`` call waits until ``expected`` callers are there.

    Unarmed, a gate call is answered at once, so an agent can call ``plugpull.client.gate()``
    unconditionally. Armed with N, the first N-1 callers are held and all N are answered
    together when the N-th arrives (or when the scenario gives up and releases them), so N
    processes that each paid their own framework import reach the racing call at once.
    """

    def __init__(self) -> None:
        self.expected: int | None = None
        self.arrived: list[int | None] = []  # callers' pids (SO_PEERCRED), in arrival order
        self.released_with: int | None = None  # how many were waiting when released
        self._lock = threading.Lock()
        self._released = threading.Event()

    def arm(self, expected: int) -> None:
        with self._lock:
            self.expected, self.arrived, self.released_with = expected, [], None
            self._released.clear()

    def arrive(self, pid: int | None) -> bool:
        """Register a caller; True if it must wait for the release."""
        with self._lock:
            if self.expected is None or self._released.is_set():
                return False
            self.arrived.append(pid)
            if len(self.arrived) >= self.expected:
                self.released_with = len(self.arrived)
                self._released.set()
            return True

    def release(self) -> None:
        with self._lock:
            if not self._released.is_set():
                self.released_with = len(self.arrived)
                self._released.set()

    def wait(self, closed: threading.Event) -> None:
        while not self._released.wait(0.05):
            if closed.is_set():
                return

    def count(self) -> int:
        with self._lock:
            return len(self.arrived)


class Channel:
    """Serves one scenario run: a provider, optionally a store, and what the agents announced.

    Use as a context manager; leaving it closes the socket, wakes every held call's
    thread and removes the private directory.
    """

    def __init__(self, provider: Provider | None = None, store: Any = None) -> None:
        self.provider = provider or Provider()
        self.store = store
        self.announced: list[dict] = []
        # What record_result reported, in arrival order: {"phase", "pid", "group", "value"}. Every
        # call is kept (a second result in one phase is evidence, docs/agent-protocol.md).
        self.results: list[dict] = []
        self.gate = Gate()
        self.errors: list[str] = []
        # cancel-mid-stream. ``validate``: messages -> the reason a provider refuses them, or
        # None (set by the scenario: plugpull.checks.history); every model request and saved
        # conversation an agent reports, with its phase; the agent's cancel watchers, answered
        # together by order_cancel(); the cancels the agents reported, with how the held call stood.
        self.validate: Any = None
        self.model_requests: list[dict] = []
        self.conversations: list[dict] = []
        self.cancels: list[dict] = []
        self.cancel_watchers: list[dict] = []
        self.cancelled_event = threading.Event()
        self._cancel_order = threading.Event()
        self._cancel_phase: str | None = None
        self._release = threading.Event()
        # tool-error: the fault a released held call is answered with ({"raise", "message"}); None: its answer.
        self._fault: dict | None = None
        self._dir = socket_dir("plugpull-chan-")
        self.path = str(self._dir / "s")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(self.path)
        self._sock.listen(64)
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self._open_conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._acceptor = threading.Thread(target=self._accept_loop, name="plugpull-accept", daemon=True)
        self._acceptor.start()

    @property
    def phase(self) -> str:
        return self.provider.phase

    @phase.setter
    def phase(self, value: str) -> None:
        self.provider.phase = value
        if self.store is not None:
            self.store.phase = value

    def env(self) -> dict[str, str]:
        return {SOCKET_ENV: self.path}

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        # shutdown() wakes the acceptor out of accept(2) (Linux answers EINVAL), and it is joined
        # before close(): a listening socket closed under a thread still in accept lets that thread
        # take a connection meant for the next channel once a new socket reuses the descriptor
        # number (seen under power-loss: the resume's record_result reached the closed channel).
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if threading.current_thread() is not self._acceptor:
            self._acceptor.join(timeout=2)
        try:
            self._sock.close()
        except OSError:
            pass
        with self._lock:
            conns = list(self._open_conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in self._threads:
            thread.join(timeout=2)
        shutil.rmtree(self._dir, ignore_errors=True)

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(conn,), name="plugpull-conn", daemon=True)
            with self._lock:
                self._open_conns.add(conn)
                self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        # One request at a time, as many as the client sends (docs/protocol.md); the connection ends
        # at the client's close, after a refusal, at a held call's end and at a dropped store call.
        try:
            pid = peer_pid(conn)
            while not self._closed.is_set():
                request = self._read_request(conn)
                if request is None or not self._dispatch(conn, pid, request):
                    return
        finally:
            with self._lock:
                self._open_conns.discard(conn)
            conn.close()

    def _read_request(self, conn: socket.socket) -> dict | None:
        buf = b""
        while not buf.endswith(b"\n"):
            try:
                chunk = conn.recv(65536)
            except OSError:
                return None
            if not chunk:
                return None
            buf += chunk
            if len(buf) > MAX_REQUEST_BYTES:
                self._reply(conn, {"ok": False, "error": "request larger than 1 MiB"})
                return None
        try:
            request = json.loads(buf)
        except ValueError:
            self._reply(conn, {"ok": False, "error": "request is not one line of JSON"})
            return None
        if not isinstance(request, dict) or request.get("v") != PROTOCOL_VERSION:
            self._reply(conn, {"ok": False, "error": f"protocol version must be {PROTOCOL_VERSION}"})
            return None
        return request

    @staticmethod
    def _reply(conn: socket.socket, payload: dict) -> bool:
        """Send one reply line; True when it went out."""
        try:
            conn.sendall(json.dumps(payload).encode() + b"\n")
        except OSError:
            return False
        return True

    def _dispatch(self, conn: socket.socket, pid: int | None, request: dict) -> bool:
        """Answer one request; True when the connection may carry the next one."""
        op = request.get("op")
        if op == "effect":
            name, key = request.get("name"), request.get("key")
            if not isinstance(name, str) or not name or not (key is None or isinstance(key, str)):
                self._reply(
                    conn, {"ok": False, "error": "effect needs a non-empty string name and a string or null key"}
                )
                return False
            # The caller's group, read while it is alive and before the provider can hold the call:
            # once held, the scenario may kill at any moment, so the group is on the call first.
            # It says which of several phases made the call and proves a held call's caller.
            main = request.get("main_thread")
            call, hold = self.provider.receive(
                name,
                key,
                pid,
                group=group_of(pid) if pid else None,
                main_thread=main if isinstance(main, bool) else None,
            )
            if hold:
                if self._wait_closed(conn):
                    self.provider.mark_closed(call)
                    return False
                fault = self._fault
                if fault is not None:  # tool-error: the held call fails as a client library's would
                    self.provider.fail(call, fault["raise"])
                    return self._reply(conn, {"ok": True, "fault": fault})
                self.provider.release(call)  # released after a cancel landed: the call completes
            return self._reply(conn, {"ok": True, "effect": self.provider.answer(call)})
        elif op == "raised":  # tool-error: the faulted call's caller raises now (client.record_effect)
            name = request.get("name")
            if not isinstance(name, str) or not self.provider.note_raised(name):
                self._reply(conn, {"ok": False, "error": f"raised: no held call of {name!r} was answered with a fault"})
                return False
            return self._reply(conn, {"ok": True})
        elif op == "boundary":
            name, edge = request.get("name"), request.get("edge")
            if not isinstance(name, str) or not name or edge not in ("before", "after"):
                self._reply(
                    conn, {"ok": False, "error": 'boundary needs a non-empty string name and edge "before" or "after"'}
                )
                return False
            # As for an effect: the caller's group is on the mark before it can be held.
            mark, hold = self.provider.receive_mark(name, edge, pid, group=group_of(pid) if pid else None)
            main = request.get("main_thread")
            mark.main_thread = main if isinstance(main, bool) else None
            if hold:
                if self._wait_closed(conn):
                    self.provider.mark_closed(mark)
                    return False
                self.provider.release(mark)
            return self._reply(conn, {"ok": True})
        elif op == "gate":
            if self.gate.arrive(pid):
                self.gate.wait(self._closed)
            return self._reply(conn, {"ok": True})
        elif op == "announce":
            info = {k: v for k, v in request.items() if k not in ("v", "op") and isinstance(v, (str, int, float))}
            with self._lock:
                self.announced.append({"phase": self.phase, "pid": pid, **info})
            return self._reply(conn, {"ok": True})
        elif op == "result":
            if "value" not in request:
                self._reply(conn, {"ok": False, "error": "result needs a value (any JSON value)"})
                return False
            group = group_of(pid) if pid else None
            with self._lock:
                self.results.append({"phase": self.phase, "pid": pid, "group": group, "value": request["value"]})
            return self._reply(conn, {"ok": True})
        elif op in ("model-request", "conversation"):
            messages = request.get("messages")
            rejected = self.validate(messages) if (op == "model-request" and self.validate is not None) else None
            entry = {"phase": self.phase, "pid": pid, "messages": messages}
            with self._lock:
                if op == "model-request":
                    self.model_requests.append({**entry, "rejected": rejected})
                else:
                    self.conversations.append(entry)
            return self._reply(conn, {"ok": True, **({"rejected": rejected} if rejected else {})})
        elif op == "cancel-wait":
            watcher = {"phase": self.phase, "pid": pid, "group": group_of(pid) if pid else None}
            with self._lock:
                self.cancel_watchers.append(watcher)
            # Only the phase the cancel was ordered in walks away; the next turn's watcher waits on.
            while not (self._cancel_order.wait(0.05) and self._cancel_phase == watcher["phase"]):
                if self._closed.is_set():
                    return False
            with self._lock:
                watcher["ordered"] = True
            return self._reply(conn, {"ok": True, "cancel": True})
        elif op == "cancelled":
            held = self.provider.held
            report = {
                "phase": self.phase,
                "pid": pid,
                "group": group_of(pid) if pid else None,
                "style": request.get("style") if isinstance(request.get("style"), str) else None,
                "seen": request.get("seen") if isinstance(request.get("seen"), dict) else {},
                "ordered": self._cancel_order.is_set(),
                # How the held call stood when the cancel's report arrived: the proof it landed there.
                "held": None if held is None else held.to_dict(),
                "held_released": None if held is None else held.released,
                "held_open": None if held is None else held.closed_at is None,
            }
            with self._lock:
                self.cancels.append(report)
            self.cancelled_event.set()
            return self._reply(conn, {"ok": True})
        elif op == "store" and self.store is not None:
            method = request.get("method")
            if method not in STORE_METHODS:
                self._reply(conn, {"ok": False, "error": f"unknown store method {method!r}"})
                return False
            args = {k: v for k, v in request.items() if k not in ("v", "op", "method", "session")}
            try:
                outcome = self.store.call(method, str(request.get("session")), args, pid=pid)
            except ValueError as exc:  # store.StoreError: answered, so it never looks like a fault
                self._reply(conn, {"ok": False, "error": str(exc)})
                return False
            if outcome.dropped:
                # A lost write or a lost ack: close without answering, as a dead database
                # connection would. The client cannot tell which of the two happened.
                return False
            return self._reply(conn, {"ok": True, "result": outcome.result})
        self._reply(conn, {"ok": False, "error": f"unknown op {op!r}"})
        return False

    def results_of(self, phase: str | None = None, group: int | None = None) -> list:
        """Values record_result reported in ``phase`` (and from process group ``group``), in order."""
        with self._lock:
            return [
                r["value"]
                for r in self.results
                if (phase is None or r["phase"] == phase) and (group is None or r["group"] == group)
            ]

    def order_cancel(self) -> int:
        """Answer every cancel watcher (``client.wait_for_cancel``): the client walks away now.

        Returns how many watchers were waiting; later ones are answered at once."""
        self._cancel_phase = self.phase
        self._cancel_order.set()
        with self._lock:
            return sum(1 for w in self.cancel_watchers if "ordered" not in w)

    def release_held(self) -> None:
        """Answer the held call (and any later one held) instead of waiting for its caller to die."""
        self._release.set()

    def fail_held(self, fault: str, message: str) -> None:
        """Answer the held call with a fault: its ``record_effect`` raises ``fault`` (client.TOOL_FAULTS) with
        ``message``, as a client library's call raises when a connection resets or a read times out."""
        self._fault = {"raise": fault, "message": message}
        self._release.set()

    def _wait_closed(self, conn: socket.socket) -> bool:
        """Block until the caller's end closes (its process died: True) or the channel closes (True),
        or the held call is released (False: the caller gets its answer)."""
        conn.settimeout(0.05)
        while not self._closed.is_set():
            if self._release.is_set():
                conn.settimeout(None)
                return False
            try:
                chunk = conn.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return True
            if not chunk:
                return True
        return True
