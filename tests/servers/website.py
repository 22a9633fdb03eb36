"""A real web site on loopback for the HTTP source's tests and benchmark: a threaded HTTP/1.1 server on
127.0.0.1 (port 0) serving pages that the test can change between crawls.

Every page answers conditional requests (ETag from its bytes, a fixed Last-Modified) with 304, the way
a static web server does. Pages may be protected by Basic or Digest authentication, be slow, redirect,
or answer any status. Every request is logged (time, path, headers) so tests can check politeness.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.request import parse_http_list, parse_keqv_list

LAST_MODIFIED = "Mon, 30 Nov 2026 03:00:00 GMT"


@dataclass
class Resource:
    body: bytes = b""
    status: int = 200
    content_type: str = "text/html"
    headers: dict = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering
    login: tuple[str, str, str] | None = None  # (auth scheme "basic"/"digest", username, password)
    validators: bool = True  # ETag and Last-Modified, 304 on a match


@dataclass
class Request:
    at: float
    path: str
    headers: dict


class Website:
    def __init__(self):
        self.pages: dict[str, Resource] = {}
        self.dynamic = []  # (path prefix, function(path) -> Resource | None)
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        self.port = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def put(self, path: str, body: bytes | str = b"", **options) -> None:
        if isinstance(body, str):
            body = body.encode("utf-8")
        self.pages[path] = Resource(body, **options)

    def route(self, prefix: str, make) -> None:
        self.dynamic.append((prefix, make))

    def resource(self, path: str) -> Resource | None:
        if path in self.pages:
            return self.pages[path]
        for prefix, make in self.dynamic:
            if path.startswith(prefix):
                return make(path)
        return None

    def start(self, port: int = 0) -> str:
        site = self

        class Handler(_Handler):
            website = site

        self.server = _QuietServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.base

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def paths(self) -> list[str]:
        with self.lock:
            return [r.path for r in self.requests]


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):  # clients that hang up at their limits are expected
        pass


class _Handler(BaseHTTPRequestHandler):
    website: Website
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def send(self, status: int, body: bytes = b"", headers: dict | None = None) -> None:
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading at its limit
            self.close_connection = True

    def do_GET(self):
        site = self.website
        with site.lock:
            site.requests.append(Request(time.monotonic(), self.path, dict(self.headers)))
        resource = site.resource(self.path)
        if resource is None:
            self.send(404, b"<html><body>not here</body></html>", {"Content-Type": "text/html"})
            return
        if resource.delay:
            time.sleep(resource.delay)
        if resource.login is not None and not self._authorised(*resource.login):
            return
        headers = {"Content-Type": resource.content_type, **resource.headers} if resource.content_type else \
            dict(resource.headers)
        if resource.status == 200 and resource.validators:
            etag = '"' + hashlib.sha1(resource.body).hexdigest()[:16] + '"'
            headers.update({"ETag": etag, "Last-Modified": LAST_MODIFIED})
            if self.headers.get("If-None-Match") == etag or (
                    "If-None-Match" not in self.headers and self.headers.get("If-Modified-Since") == LAST_MODIFIED):
                self.send(304, b"", {"ETag": etag})
                return
        self.send(resource.status, resource.body, headers)

    def _authorised(self, scheme: str, username: str, password: str) -> bool:
        given = self.headers.get("Authorization", "")
        if scheme == "basic":
            expected = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()
            if given == expected:
                return True
            self.send(401, b"login", {"WWW-Authenticate": 'Basic realm="site"'})
            return False
        realm, nonce = "site", "n0nce5"
        if given.startswith("Digest "):
            fields = parse_keqv_list(parse_http_list(given[len("Digest "):]))
            ha1 = hashlib.md5(f"{username}:{realm}:{password}".encode()).hexdigest()
            ha2 = hashlib.md5(f"GET:{fields.get('uri', '')}".encode()).hexdigest()
            expected = hashlib.md5(f"{ha1}:{nonce}:{fields.get('nc')}:{fields.get('cnonce')}:auth:{ha2}".encode())
            if fields.get("username") == username and fields.get("uri") == self.path \
                    and fields.get("response") == expected.hexdigest():
                return True
        self.send(401, b"login", {"WWW-Authenticate": f'Digest realm="{realm}", nonce="{nonce}", qop="auth", '
                                                      'algorithm=MD5, opaque="x"'})
        return False


def html(title: str, body: str = "", links: tuple[str, ...] = (), head: str = "") -> str:
    anchors = "".join(f'<li><a href="{href}">{text or href}</a></li>'
                      for href, text in (ln.split("|", 1) if "|" in ln else (ln, "") for ln in links))
    return (f"<!DOCTYPE html><html><head><title>{title}</title>{head}</head>"
            f"<body><h1>{title}</h1><p>{body}</p><ul>{anchors}</ul></body></html>")


def gzip_bomb(megabytes: int = 64) -> bytes:
    """``megabytes`` MiB of zeros, gzipped to about a thousandth of that."""
    return gzip.compress(b"\0" * (megabytes * 1024 * 1024))


def generated_site(site: Website, pages: int, links_per_page: int = 10) -> None:
    """``pages`` pages of a few KB of text each, linked so that all are reachable from ``/``."""
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda",
             "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega"]
    for n in range(pages):
        targets = [f"/p/{(n * 7 + k * 13 + 1) % pages}.html" for k in range(links_per_page)]
        if n + 1 < pages:
            targets.append(f"/p/{n + 1}.html")  # a chain through every page
        text = " ".join(words[(n + i) % len(words)] for i in range(400)) + f" page number {n}"
        site.put(f"/p/{n}.html", html(f"Page {n}", text, tuple(targets)))
    site.put("/", html("Home", "generated site", ("/p/0.html",)))
