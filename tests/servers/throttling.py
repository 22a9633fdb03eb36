"""A store that only ever says "slow down": an HTTP server on a free port of 127.0.0.1 that answers every request
503 with ``Retry-After: 0`` (what S3, GCS and Azure answer when they throttle), in a thread of the test's
process. A client pointed at it meets a throttling store with its own retries, as it would in a cloud."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _SlowDown(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        self.server.requests += 1
        body = b'{"error": {"code": 503, "message": "Please reduce your request rate."}}'
        self.send_response(503)
        self.send_header("Retry-After", "0")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_PATCH = _answer

    def log_message(self, *args) -> None:  # not the test's output
        pass


@contextlib.contextmanager
def throttling() -> Iterator[ThreadingHTTPServer]:
    """The server (``server_port``, ``requests`` answered so far); stopped on leaving."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowDown)
    server.requests = 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
