"""A store that fails some requests as a cloud does: an HTTP proxy on a free port of 127.0.0.1, in a thread of the
test's process, that forwards every request to a real store server on loopback (moto, fake-gcs-server, Azurite)
and answers those whose path and query hold a given text itself, with a status and the store's own error body
(a 403 on one prefix, a 503 storm, a 401 for a login the store would refuse, a 404 for an object deleted after
its listing), or never answers at all (:data:`HANG`: a store that accepts the connection and then hangs). The
client meets the store's answer through its own failure path: no mock in the client."""

from __future__ import annotations

import contextlib
import http.client
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

#: Each store's error body for a status: (content type, body) as S3, GCS and Azure write them.
_XML = "application/xml"
#: The status of a rule whose requests are read and never answered (until the proxy stops).
HANG = 0


def error_body(store: str, status: int) -> tuple[str, bytes]:
    """What ``store`` (s3, gs or az) answers with ``status``."""
    codes = {401: "Unauthorized", 403: "AccessDenied", 404: "NoSuchKey", 503: "SlowDown"}
    if store == "gs":
        return "application/json", (f'{{"error": {{"code": {status}, "message": "{codes[status]}", '
                                    f'"errors": [{{"reason": "{codes[status]}"}}]}}}}').encode()
    if store == "az":
        codes = {**codes, 403: "AuthorizationPermissionMismatch", 404: "BlobNotFound", 503: "ServerBusy",
                 401: "NoAuthenticationInformation"}
    return _XML, (f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{codes[status]}</Code>"
                  f"<Message>{codes[status]}</Message></Error>").encode()


@dataclass
class Rule:
    """Requests whose path and query, unescaped, hold ``text`` (and whose method is ``method``, if given) get ``status``
    (:data:`HANG`: no answer)."""

    text: str
    status: int
    method: str = ""


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        server = self.server
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        for rule in server.rules:
            if rule.text in unquote(self.path) and rule.method in ("", self.command):
                server.refused += 1
                if rule.status == HANG:
                    server.stopping.wait()
                    self.close_connection = True
                    return
                kind, error = error_body(server.store, rule.status)
                self.send_response(rule.status)
                self.send_header("Content-Type", kind)
                self.send_header("Retry-After", "0")
                self.send_header("Content-Length", str(len(error)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(error)
                return
        upstream = http.client.HTTPConnection(server.upstream.hostname, server.upstream.port, timeout=60)
        try:
            upstream.request(self.command, self.path, body=body or None,
                             headers={k: v for k, v in self.headers.items() if k.lower() != "connection"})
            answer = upstream.getresponse()
            data = answer.read()
        finally:
            upstream.close()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", answer.headers.get("Content-Length", "0") if self.command == "HEAD"
                         else str(len(data)))  # a HEAD's length is the object's
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_PATCH = _answer

    def log_message(self, *args) -> None:  # not the test's output
        pass


@contextlib.contextmanager
def refusing(upstream: str, store: str, *rules: Rule) -> Iterator[ThreadingHTTPServer]:
    """The proxy in front of ``upstream`` (http://127.0.0.1:PORT) for ``store`` (s3, gs, az): ``server_port``,
    ``refused`` (requests answered by a rule) and ``rules`` (a list, to change between crawls); stopped on leaving."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Forward)
    server.upstream, server.store, server.rules, server.refused = urlsplit(upstream), store, list(rules), 0
    server.stopping = threading.Event()  # lets the requests a HANG rule holds go
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
