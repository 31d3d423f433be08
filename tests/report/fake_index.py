"""A tiny package index on loopback for tests: http.server in a thread, serving the JSON simple API.

``served({"six": page})`` serves ``page`` (a PEP 691 dict) at ``/simple/six/`` as
``application/vnd.pypi.simple.v1+json`` and yields the index URL; ``content_type`` serves something else (an
HTML-only index), ``auth`` requires HTTP basic auth, ``redirect`` sends every (authorized) request on to another
index URL. The yielded URL keeps each request's path and headers in
``.requests``. The server thread is stopped and its socket closed on exit.
"""

from __future__ import annotations

import base64
import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

JSON_API = "application/vnd.pypi.simple.v1+json"


class Index(str):
    """The index URL, with the requests the server saw."""

    requests: list[dict]


@contextlib.contextmanager
def served(
    projects: dict[str, dict | bytes],
    *,
    content_type: str = JSON_API,
    auth: tuple[str, str] | None = None,
    redirect: str | None = None,
) -> Iterator[Index]:
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            seen.append({"path": self.path, "headers": dict(self.headers)})
            if auth is not None:
                expected = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
                if self.headers.get("Authorization") != expected:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="index"')
                    self.end_headers()
                    return
            if redirect is not None:
                self.send_response(302)
                self.send_header("Location", redirect + self.path.removeprefix("/simple/"))
                self.end_headers()
                return
            name = self.path.removeprefix("/simple/").strip("/")
            if not self.path.startswith("/simple/") or name not in projects:
                self.send_error(404)
                return
            page = projects[name]
            body = page if isinstance(page, bytes) else json.dumps(page).encode()
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = Index(f"http://127.0.0.1:{server.server_address[1]}/simple/")
        url.requests = seen
        yield url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
