"""Fetching one web page, within bounds: urllib3 (connection pooling, streaming reads, its own
timeout model) rather than requests, because every limit must hold while the body streams in.

* connect, read and total timeouts;
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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import urllib3

from transforms.sources.http import auth
from transforms.urls import normalize_url

CHUNK = 64 * 1024


class FetchError(Exception):
    """The page could not be fetched; the message is the report's reason. ``unreachable``: no connection
    to the host could be made (refused, timed out, name not found), so nothing on it can be fetched now."""

    def __init__(self, message: str, unreachable: bool = False):
        super().__init__(message)
        self.unreachable = unreachable


@dataclass
class Limits:
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    total_timeout: float = 120.0
    max_body: int = 10 * 1024 * 1024
    max_redirects: int = 5
    user_agent: str = "beamtrawl/0.1 (+https://github.com/beamtrawl)"
    block_private_addresses: bool = False


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
    """One per worker (``DoFn.setup``): it holds a connection pool."""

    def __init__(self, limits: Limits | None = None, connections_per_host: int = 1):
        self.limits = limits or Limits()
        self.pool = urllib3.PoolManager(
            num_pools=32, maxsize=connections_per_host, retries=False,
            timeout=urllib3.Timeout(connect=self.limits.connect_timeout, read=self.limits.read_timeout))

    def fetch(self, url: str, etag: str = "", last_modified: str = "",
              allow: Callable[[str], bool] = lambda _url: True, headers: dict | None = None,
              credential: Callable[[str], object | None] = lambda _url: None,
              pace: Callable[[], None] = lambda: None,
              validators: Callable[[str], tuple[str, str]] | None = None) -> Page:
        """GET ``url``, following redirects that ``allow`` accepts; raises :class:`FetchError`. ``pace()``
        runs before every request (politeness spaces redirect hops and login retries too);
        ``validators(url)`` gives the stored (ETag, Last-Modified) of each hop, else ``etag`` and
        ``last_modified`` apply to ``url`` alone."""
        deadline = time.monotonic() + self.limits.total_timeout
        first = url
        if validators is None:
            def validators(hop: str) -> tuple[str, str]:
                return (etag, last_modified) if hop == first else ("", "")
        request_headers = {"User-Agent": self.limits.user_agent, "Accept-Encoding": "gzip, deflate",
                           **(headers or {})}
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
        pace()
        if time.monotonic() >= deadline:
            raise FetchError(f"took longer than {self.limits.total_timeout:g} s")
        if self.limits.block_private_addresses:  # checked on every hop: a redirect may point inside
            host = urlsplit(url).hostname or ""
            if address := private_address(host):
                raise FetchError(f"{host} resolves to {address}, not a public address "
                                 "(http.block_private_addresses)")
        try:
            return self.pool.request("GET", url, headers=headers, redirect=False, preload_content=False,
                                     decode_content=False)
        except urllib3.exceptions.MaxRetryError as err:
            raise FetchError(_reason(err.reason), _unreachable(err.reason)) from None
        except urllib3.exceptions.HTTPError as err:
            raise FetchError(_reason(err), _unreachable(err)) from None

    def _page(self, url: str, response, redirects: list[str], deadline: float) -> Page:
        body, truncated = bytearray(), False
        try:
            for chunk in response.stream(CHUNK, decode_content=True):
                body += chunk
                if len(body) > self.limits.max_body:
                    del body[self.limits.max_body:]
                    truncated = True
                    break
                if time.monotonic() >= deadline:
                    raise FetchError(f"took longer than {self.limits.total_timeout:g} s")
        except urllib3.exceptions.HTTPError as err:
            raise FetchError(_reason(err)) from None
        finally:
            if truncated:
                response.close()  # the rest is never read: this connection cannot be reused
            else:
                response.release_conn()
        headers = {k.lower(): v for k, v in response.headers.items()}
        return Page(url, response.status, headers, bytes(body), truncated, redirects)


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
    return type(err).__name__
