"""The web source's parts against a real HTTP server on loopback: fetching within bounds, robots.txt,
trap guards."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from beamtrawl.transforms.sources.http.fetch import Fetcher, FetchError, Limits
from beamtrawl.transforms.sources.http.robots import load_robots
from beamtrawl.transforms.sources.http.traps import link_in_scope, too_many_cycles

BOMB = gzip.compress(b"\0" * (64 * 1024 * 1024))  # 64 MiB of zeros in about 64 KiB
ROBOTS = b"User-agent: *\nDisallow: /private\nCrawl-delay: 2\nSitemap: http://example.org/sitemap.xml\n"
TRICKLE = 600  # bytes (a minute at ten a second): far longer than any test's total_timeout
LIMITED = Limits(connect_timeout=5, read_timeout=1, total_timeout=2)
SLACK = 1.5  # seconds past total_timeout a fetch may take (a thread's wake-up, a connection's close)
REDIRECTS = {"/r1": "/r2", "/r2": "page", "/loop-a": "/loop-b", "/loop-b": "/loop-a",
             "/away": "http://elsewhere.invalid/", **{f"/c{i}": f"/c{i + 1}" for i in range(10)}}


class Site(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def send(self, status: int, body: bytes = b"", **headers: str) -> None:
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading at its limit
            pass

    def trickle(self, data: bytes, step: int = 1) -> None:
        """``data`` ``step`` bytes at a time, each well within the read timeout, until the client hangs up."""
        try:
            for i in range(0, len(data), step):
                self.wfile.write(data[i:i + step])
                self.wfile.flush()
                time.sleep(0.1)
        except OSError:  # the client gave up: what the test wants
            pass

    def do_GET(self):
        path = self.path
        if path in REDIRECTS:
            self.send(302 if path != "/r2" else 301, Location=REDIRECTS[path])
        elif path == "/page":
            if self.headers.get("If-None-Match") == '"v1"':
                self.send(304, ETag='"v1"')
            else:
                self.send(200, b"<html><title>Page</title><p>hello</p></html>", ETag='"v1"',
                          Last_Modified="Mon, 30 Nov 2026 03:00:00 GMT", Content_Type="text/html")
        elif path == "/slow":
            time.sleep(3)
            self.send(200, b"late")
        elif path == "/big":
            self.send(200, b"x" * (5 * 1024 * 1024))
        elif path == "/bomb":
            self.send(200, BOMB, Content_Encoding="gzip")
        elif path == "/robots.txt" and not self.server.trickle_robots:
            self.send(200, ROBOTS, Content_Type="text/plain")
        elif path == "/trickle-body" or (path == "/robots.txt" and self.server.trickle_robots):  # valid headers, then a byte at a time
            self.send_response(200)
            self.send_header("Content-Length", str(TRICKLE))
            self.end_headers()
            self.trickle(b"x" * TRICKLE)
        elif path == "/trickle-headers":  # never-ending headers, a line at a time
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            self.trickle(b"".join(b"X-Slow-%d: y\r\n" % n for n in range(TRICKLE)), step=12)
        elif path == "/broken":
            self.send(500, b"oops")
        else:
            self.send(404, b"no")


@pytest.fixture(scope="module")
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    server.trickle_robots = False
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def fetcher():
    return Fetcher(Limits(read_timeout=1, total_timeout=10, max_body=1024 * 1024, max_redirects=5))


def test_page_and_conditional_get(site, fetcher):
    page = fetcher.fetch(f"{site}/page")
    assert (page.status, page.etag, page.body) == (200, '"v1"', b"<html><title>Page</title><p>hello</p></html>")
    assert page.last_modified == "Mon, 30 Nov 2026 03:00:00 GMT"
    assert fetcher.fetch(f"{site}/page", validators=lambda _url: (page.etag, "")).status == 304


def test_redirect_chain_is_followed_and_recorded(site, fetcher):
    page = fetcher.fetch(f"{site}/r1")
    assert page.url == f"{site}/page" and page.redirects == [f"{site}/r1", f"{site}/r2"]


@pytest.mark.parametrize(("path", "reason"), [
    ("/loop-a", "redirect loop"),
    ("/c0", "more than 5 redirects"),
    ("/slow", "read timeout"),
])
def test_bad_answers_are_one_line_reasons(site, fetcher, path, reason):
    with pytest.raises(FetchError, match=reason):
        fetcher.fetch(f"{site}{path}")


@pytest.mark.parametrize(("path", "phase"), [
    ("/trickle-body", "reading the body"),        # observed before: 326 s with total_timeout 15
    ("/trickle-headers", "waiting for the response headers"),  # observed: 122 s, then a bare "ProtocolError"
])
def test_total_timeout_bounds_a_trickling_server(site, path, phase):
    started = time.monotonic()
    with pytest.raises(FetchError) as caught:
        Fetcher(LIMITED).fetch(f"{site}{path}")
    assert time.monotonic() - started < LIMITED.total_timeout + SLACK
    assert str(caught.value) == f"timed out after 2 s (http.total_timeout) while {phase}"


@pytest.fixture
def silent_port():
    """A TCP port that accepts connections and never says a word: a TLS handshake there never ends."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


def test_total_timeout_bounds_a_stalled_tls_handshake(silent_port):
    started = time.monotonic()
    with pytest.raises(FetchError) as caught:
        Fetcher(Limits(connect_timeout=30, read_timeout=30, total_timeout=2)).fetch(f"https://127.0.0.1:{silent_port}/")
    assert time.monotonic() - started < 2 + SLACK
    assert str(caught.value) == "timed out after 2 s (http.total_timeout) while in the TLS handshake"


def test_total_timeout_bounds_robots_txt():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    server.trickle_robots = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    started = time.monotonic()
    try:
        with pytest.raises(FetchError, match="timed out after 2 s .* while reading the body"):
            load_robots(Fetcher(LIMITED), f"http://127.0.0.1:{server.server_address[1]}/page", "beamtrawl")
    finally:
        server.shutdown()
    assert time.monotonic() - started < LIMITED.total_timeout + SLACK


def test_a_fetcher_serves_again_after_a_timeout(site):
    fetcher = Fetcher(LIMITED)
    with pytest.raises(FetchError):
        fetcher.fetch(f"{site}/trickle-body")
    assert fetcher.fetch(f"{site}/page").status == 200


def test_redirect_targets_are_checked_against_the_rules(site, fetcher):
    with pytest.raises(FetchError, match="which the rules do not accept"):
        fetcher.fetch(f"{site}/away", allow=lambda url: url.startswith(site))


def test_body_limit_holds_while_streaming_and_decompressing(site, fetcher):
    big = fetcher.fetch(f"{site}/big")
    assert big.truncated and len(big.body) == 1024 * 1024
    bomb = fetcher.fetch(f"{site}/bomb")  # 64 MiB once inflated; stops at the limit
    assert bomb.truncated and len(bomb.body) == 1024 * 1024


def test_server_errors_and_refused_connections(site, fetcher):
    assert fetcher.fetch(f"{site}/broken").status == 500
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    with pytest.raises(FetchError, match="connection refused"):
        fetcher.fetch(f"http://127.0.0.1:{closed}/")


def test_robots_rules_delay_and_sitemaps(site, fetcher):
    robots = load_robots(fetcher, f"{site}/any/page", "beamtrawl", default_delay=0.5)
    assert robots.allows(f"{site}/public/x") and not robots.allows(f"{site}/private/x")
    assert robots.delay == 2.0
    assert robots.sitemaps == ["http://example.org/sitemap.xml"]


def test_trap_guards():
    assert not link_in_scope("file:///etc/passwd") and not link_in_scope("smb://h/share")
    assert not link_in_scope("imap://h/INBOX") and link_in_scope("https://example.org/")
    assert too_many_cycles("http://h/X11/X11/X11/", 1) and not too_many_cycles("http://h/a/b/c", 1)
    assert not too_many_cycles("http://h/a/b/a", 2) and too_many_cycles("http://h/a/b/a/b", 2)
    assert not too_many_cycles("http://h/a/a/a", -1)
