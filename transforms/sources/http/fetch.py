"""Fetching one web page, within bounds: urllib3 (connection pooling, streaming reads, its own
timeout model) rather than requests, because every limit must hold while the body streams in.

* connect, read and total timeouts; the total holds whatever the server does (a body or headers sent a
  byte at a time, a TLS handshake that never ends), see :class:`_Deadline`;
* a maximum body size enforced on the decompressed bytes as they arrive, so a gzip bomb stops at the
  limit instead of filling memory;
* redirects followed by hand, at most ``max_redirects`` hops, loops detected, and every target handed
  to ``allow(url)`` first, so it is checked against the rules like any other URL;
* conditional requests with a stored ETag / Last-Modified (304 means unchanged);
* logins from ``credential(url)``, asked anew for every hop (see :mod:`auth`).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import urllib3
from beamtrawl.transforms.sources.http import auth
from beamtrawl.transforms.urls import normalize_url
from beamtrawl.transforms.values import Limits
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

CHUNK = 64 * 1024


class FetchError(Exception):
    """The page could not be fetched; the message is the report's reason. ``unreachable``: no connection
    to the host could be made (refused, timed out, name not found), so nothing on it can be fetched now."""

    def __init__(self, message: str, unreachable: bool = False):
        super().__init__(message)
        self.unreachable = unreachable


def private_address(host: str) -> str:
    """The first address of ``host`` that is not on the public internet (private, loopback, link-local,
    reserved), or "" — for crawls of public sites that must never reach the internal network."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return ""  # not resolvable: the request itself fails with its own reason
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(sockaddr[0].split("%", 1)[0])
        if not address.is_global:
            return str(address)
    return ""


class _Deadline:
    """The total time of one fetch, enforced on the socket in use. urllib3's read timeout bounds one wait
    for data, so a server that sends a byte a second never trips it; when the time is up, a timer thread
    shuts the socket down, which ends whatever read is waiting (TLS handshake, headers or body) at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.sock: socket.socket | None = None
        self.timer: threading.Timer | None = None
        self.expired = False
        self.ends = 0.0  # time.monotonic() when the time is up
        self.phase = "connecting"  # what the fetch was doing, for the report line

    @property
    def over(self) -> bool:
        return self.expired or time.monotonic() >= self.ends

    def start(self, seconds: float) -> None:
        self.expired, self.sock, self.phase = False, None, "connecting"
        self.ends = time.monotonic() + seconds
        self.timer = threading.Timer(seconds, self._expire)
        self.timer.daemon = True
        self.timer.start()

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        with self.lock:
            self.sock = None

    def watch(self, sock: socket.socket, phase: str) -> None:
        """``sock`` is the one this fetch now waits on, for ``phase``."""
        with self.lock:
            self.sock, self.phase = sock, phase
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self.lock:
            self.expired = True
            if self.sock is not None:
                _shut(self.sock)


def _shut(sock: socket.socket) -> None:
    try:  # the plain socket's shutdown, also for TLS: SSLSocket.shutdown would pull its state from the reader
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


def _watched_pools(current: Callable[[], _Deadline]) -> dict[str, type]:
    """Connection pools whose connections hand every socket they wait on to ``current()``, the deadline of
    the fetch in flight in this thread (a connection serves one thread at a time)."""

    def watched(base: type) -> type:
        class Connection(base):
            def _new_conn(self):
                sock = super()._new_conn()
                current().watch(sock, "in the TLS handshake" if isinstance(self, HTTPSConnection)
                               else "waiting for the response headers")
                return sock

            def request(self, *args, **kwargs):
                if self.sock is not None:  # a kept-alive connection, or one just connected
                    current().watch(self.sock, "waiting for the response headers")
                return super().request(*args, **kwargs)

        return Connection

    return {"http": type("Pool", (HTTPConnectionPool,), {"ConnectionCls": watched(HTTPConnection)}),
            "https": type("Pool", (HTTPSConnectionPool,), {"ConnectionCls": watched(HTTPSConnection)})}


@dataclass
class Page:
    url: str  # after redirects
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    truncated: bool = False  # the body passed max_body and was cut there
    redirects: list[str] = field(default_factory=list)  # the URLs that redirected, in order

    @property
    def etag(self) -> str:
        return self.headers.get("etag", "")

    @property
    def last_modified(self) -> str:
        return self.headers.get("last-modified", "")


class Fetcher:
    """One per worker (``DoFn.setup``): it holds a connection pool, shared by the threads that fetch one
    host's pages; each thread's fetch has its own :class:`_Deadline`."""

    def __init__(self, limits: Limits | None = None, connections_per_host: int = 1):
        self.limits = limits or Limits()
        self.local = threading.local()
        self.pool = urllib3.PoolManager(num_pools=32, maxsize=connections_per_host, retries=False)
        self.pool.pool_classes_by_scheme = _watched_pools(lambda: self.deadline)

    @property
    def deadline(self) -> _Deadline:
        if not hasattr(self.local, "deadline"):
            self.local.deadline = _Deadline()
        return self.local.deadline

    def fetch(self, url: str, allow: Callable[[str], bool] = lambda _url: True,
              credential: Callable[[str], object | None] = lambda _url: None,
              pace: Callable[[], None] = lambda: None,
              validators: Callable[[str], tuple[str, str]] = lambda _url: ("", "")) -> Page:
        """GET ``url``, following redirects that ``allow`` accepts; raises :class:`FetchError`. ``pace()``
        runs before every request (politeness spaces redirect hops and login retries too);
        ``validators(url)`` gives the stored (ETag, Last-Modified) of each hop for a conditional request."""
        self.deadline.start(self.limits.total_timeout)
        try:
            return self._fetch(url, allow, credential, pace, validators)
        finally:
            self.deadline.stop()

    def _fetch(self, url, allow, credential, pace, validators) -> Page:
        deadline = self.deadline.ends
        request_headers = {"User-Agent": self.limits.user_agent, "Accept-Encoding": "gzip, deflate"}
        seen, redirects = {url}, []
        while True:
            hop_etag, hop_modified = validators(url)
            conditional = {**({"If-None-Match": hop_etag} if hop_etag else {}),
                           **({"If-Modified-Since": hop_modified} if hop_modified else {})}
            response = self._authorised(url, {**request_headers, **conditional}, deadline, credential(url), pace)
            if response.status not in (301, 302, 303, 307, 308):
                return self._page(url, response, redirects, deadline)
            location = response.headers.get("location")
            response.drain_conn()
            response.release_conn()
            if not location:
                raise FetchError(f"redirect {response.status} without a Location header")
            target = normalize_url(urljoin(url, location))
            if target in seen:
                raise FetchError(f"redirect loop: {' -> '.join([*redirects, url, target])}")
            if len(redirects) >= self.limits.max_redirects:
                raise FetchError(f"more than {self.limits.max_redirects} redirects")
            if not allow(target):
                raise FetchError(f"redirects to {target}, which the rules do not accept")
            redirects.append(url)
            seen.add(target)
            url = target

    def _authorised(self, url: str, headers: dict, deadline: float, login, pace=lambda: None):
        """One request with ``login`` (Basic at once, Digest when challenged); never another URL's."""
        if login is None:
            return self._request(url, headers, deadline, pace)
        if login.auth == "basic":
            return self._request(url, {**headers, "Authorization": auth.basic(login)}, deadline, pace)
        response = self._request(url, headers, deadline, pace)
        challenge = auth.digest_challenge(response.headers.get("www-authenticate", ""))
        if response.status != 401 or challenge is None:
            return response
        answer = auth.digest(login, "GET", url, challenge)
        if answer is None:
            return response
        response.drain_conn()
        response.release_conn()
        return self._request(url, {**headers, "Authorization": answer}, deadline, pace)

    def _request(self, url: str, headers: dict, deadline: float, pace=lambda: None):
        self.deadline.phase = "waiting its turn (http.delay, Crawl-delay)"
        pace()
        self.deadline.phase = "connecting"
        left = deadline - time.monotonic()
        if left <= 0:
            raise self._timed_out()
        if self.limits.block_private_addresses:  # checked on every hop: a redirect may point inside
            host = urlsplit(url).hostname or ""
            if address := private_address(host):
                raise FetchError(f"{host} resolves to {address}, not a public address "
                                 "(http.block_private_addresses)")
        timeout = urllib3.Timeout(connect=min(self.limits.connect_timeout, left),
                                  read=min(self.limits.read_timeout, left))
        try:
            response = self.pool.request("GET", url, headers=headers, redirect=False, preload_content=False,
                                         decode_content=False, timeout=timeout)
        except urllib3.exceptions.MaxRetryError as err:
            raise self._failed(err.reason) from None
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise self._failed(err) from None
        if self.deadline.expired:  # the shut socket read as the end of the headers: they are not whole
            response.close()
            raise self._timed_out()
        return response

    def _page(self, url: str, response, redirects: list[str], deadline: float) -> Page:
        body, truncated, complete = bytearray(), False, False
        self.deadline.phase = "reading the body"
        try:
            for chunk in response.stream(CHUNK, decode_content=True):
                body += chunk
                if len(body) > self.limits.max_body:
                    del body[self.limits.max_body:]
                    truncated = True
                    break
                if time.monotonic() >= deadline:
                    raise self._timed_out()
            if self.deadline.expired:  # the shut socket read as the end of a body without a length
                raise self._timed_out()
            complete = True
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise self._failed(err) from None
        finally:
            if complete and not truncated:
                response.release_conn()
            else:
                response.close()  # the rest is never read: this connection cannot be reused
        headers = {k.lower(): v for k, v in response.headers.items()}
        return Page(url, response.status, headers, bytes(body), truncated, redirects)

    def _timed_out(self) -> FetchError:
        return FetchError(f"timed out after {self.limits.total_timeout:g} s (http.total_timeout) while "
                          f"{self.deadline.phase}")

    def _failed(self, err: BaseException) -> FetchError:
        """The report's reason for ``err``; when the deadline shut the socket, that is the reason."""
        return self._timed_out() if self.deadline.over else FetchError(_reason(err), _unreachable(err))


def _unreachable(err: BaseException) -> bool:
    return isinstance(err, urllib3.exceptions.ConnectTimeoutError)  # NewConnectionError is one


def _reason(err: BaseException) -> str:
    if isinstance(err, urllib3.exceptions.ReadTimeoutError):
        return "read timeout"
    if isinstance(err, urllib3.exceptions.NewConnectionError):  # a subclass of ConnectTimeoutError
        return "connection refused" if "refused" in str(err).lower() else "cannot connect"
    if isinstance(err, urllib3.exceptions.ConnectTimeoutError):
        return "connect timeout"
    if isinstance(err, urllib3.exceptions.DecodeError):
        return "body cannot be decompressed"
    detail = str(err.args[-1] if isinstance(err, urllib3.exceptions.ProtocolError) and err.args else err)
    return f"{type(err).__name__}: {detail[:200]}" if detail else type(err).__name__
