"""The web source (http, https): :class:`WebSource`. It discovers host by host (the ByHost capability):
one call crawls all that a discovery round knows of one host, because politeness (delay, concurrency,
Crawl-delay) needs every request to a host in one place; pages carry their bytes, so ``open_document``
fetches a page again only when a page that answered 304 must be re-prepared (the preparation
fingerprint changed).

Parts: :mod:`.fetch` (urllib3 within bounds), :mod:`.robots` (protego), :mod:`.auth` (Basic, Digest),
:mod:`.charset`, :mod:`.links` (lxml), :mod:`.traps`, :mod:`.crawl` (one host).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import BinaryIO, ClassVar

from beamtrawl.transforms.fields import Count, Delay, Flag, Seconds, Section, Size, matching
from beamtrawl.transforms.sources.base import StartHints
from beamtrawl.transforms.sources.settings import SourceSettings
from beamtrawl.transforms.urls import host_of
from beamtrawl.transforms.values import Limits
from pydantic import Field

# A header's value: a line break or control character made every request fail mid-crawl ("Invalid header value")
HeaderValue = matching(r"[^\x00-\x1f\x7f]{1,1000}", "must be one line of at most 1000 characters without control "
                       "characters, got {value!r}")


class HttpSettings(Section):
    """Web crawling: politeness, timeouts, robots.txt, traps."""

    user_agent: HeaderValue = Limits._field_defaults["user_agent"]
    """the User-Agent header, also the name robots.txt rules are read for"""
    delay: Delay = 1.0
    """seconds between two requests to one host (robots.txt Crawl-delay may ask for more)"""
    concurrency_per_host: Count = Field(2, ge=1)
    """requests in flight to one host"""
    connect_timeout: Seconds = Limits._field_defaults["connect_timeout"]
    """seconds to connect"""
    read_timeout: Seconds = Limits._field_defaults["read_timeout"]
    """seconds between two reads"""
    total_timeout: Seconds = Limits._field_defaults["total_timeout"]
    """seconds for one page, redirects included"""
    max_body: Size = Limits._field_defaults["max_body"]
    """decompressed bytes; a larger page is reported and not indexed"""
    max_redirects: Count = Field(Limits._field_defaults["max_redirects"], ge=0)
    """redirects followed for one URL"""
    max_pages_per_host: Count = Field(100_000, ge=1)
    """pages of one host; a host cut there keeps all its indexed pages"""
    max_cycle_count: Count = Field(3, ge=-1)
    """regain's MaxCycleCount (repeated path segments); -1 switches it off"""
    max_query_strings_per_path: Count = Field(200, ge=1)
    """distinct query strings on one path (calendar traps)"""
    robots_txt: Flag = True
    """obey robots.txt"""
    honour_robots_meta: Flag = True
    """obey <meta name="robots" content="noindex, nofollow">"""
    sitemaps: Flag = True
    """read robots.txt Sitemap: lines and /sitemap.xml"""
    block_private_addresses: Flag = Limits._field_defaults["block_private_addresses"]
    """never fetch private or loopback addresses (set it for public sites)"""


class WebSource:
    """``http://`` and ``https://`` URLs: pages found by following links, host by host."""

    schemes = ("http", "https")
    Settings = HttpSettings
    default_ports: ClassVar[dict[str, int]] = {"http": 80, "https": 443}

    def __init__(self, settings: SourceSettings):
        self.settings = settings
        self._fetcher = None  # one per worker process and crawl, made on first use

    def expand_host(self, host: str, items, known: dict, rules) -> Iterator:
        """Crawl ``host`` from ``items`` (see :class:`~beamtrawl.transforms.sources.http.crawl.HostCrawl`)."""
        from beamtrawl.transforms.sources.http.crawl import HostCrawl, make_fetcher

        if self._fetcher is None:
            self._fetcher = make_fetcher(self.settings.of(WebSource))
        return HostCrawl(self.settings, rules, self._fetcher).run(host, items, known)

    def expand(self, item, rules, follow_symlinks: bool, budget: int | None) -> Iterator:
        """A start page alone: its host crawled from it, nothing indexed known (discovery uses ``expand_host``)."""
        return self.expand_host(host_of(item.url), [item], {}, rules)

    @staticmethod
    def start_problem(url: str) -> str:
        """A start page names its host (``http://`` alone passed, and every fetch failed with "No host")."""
        from urllib.parse import urlsplit

        return "" if urlsplit(url).hostname else "a web start URL is http(s)://host[:port]/[path]"

    @staticmethod
    def own_address(url: str) -> str:
        """A page opens at its own address: the search page links to it."""
        return url

    @staticmethod
    def start_hints(url: str) -> StartHints:
        """A start page is indexed; its folder (``…/docs/index.html`` → ``…/docs/``) is the whitelist prefix."""
        folder = url.rsplit("/", 1)[0] + "/" if url.count("/") > 2 and not url.endswith("/") else url
        return StartHints(index=True, prefix=folder, lines=(
            "http:",
            '  user_agent: "beamtrawl (+mailto:you@example.org)"   # say who crawls, and how to reach you',
            "  delay: 1.0                   # seconds between requests to one host (robots.txt may ask more)",
            "  robots_txt: true             # obey robots.txt",
            "# max_depth: 10                # at most this many links (or folder levels) from a start URL"))

    def explain(self, url: str) -> list[str]:
        """What the host's robots.txt says of ``url`` now, read as the crawl reads it."""
        from urllib.parse import urlsplit

        from beamtrawl.transforms.sources.http.crawl import make_fetcher
        from beamtrawl.transforms.sources.http.fetch import FetchError
        from beamtrawl.transforms.sources.http.robots import load_robots

        http = self.settings.of(WebSource)
        if not http.robots_txt:
            return ["robots.txt is not obeyed (http.robots_txt is false)"]
        parts = urlsplit(url)
        host = f"{parts.scheme}://{parts.netloc}"
        try:
            robots = load_robots(make_fetcher(http), host + "/", http.user_agent, http.delay)
        except FetchError as err:
            return [f"robots.txt of {host} cannot be read now ({err}): the crawl keeps the host's pages, fetches none"]
        if robots.allows(url):
            return [f"robots.txt of {host} allows it for {http.user_agent!r}"]
        return [f"declined: robots.txt of {host} disallows it for {http.user_agent!r}"]

    def probe(self, url: str) -> str:
        """The start page alone, fetched as the crawl would: "" if it answered below 400, else why not."""
        from beamtrawl.transforms.sources.http.crawl import make_fetcher
        from beamtrawl.transforms.sources.http.fetch import FetchError

        try:
            page = make_fetcher(self.settings.of(WebSource)).fetch(url, credential=self.settings.login_for)
        except FetchError as err:
            return str(err)
        return "" if page.status < 400 else f"HTTP {page.status}"

    def open_document(self, url: str) -> BinaryIO:
        """The page's bytes (UTF-8 for HTML), fetched with the configured limits and login; raises OSError."""
        from beamtrawl.transforms.sources.http import charset
        from beamtrawl.transforms.sources.http.crawl import HTML_TYPES, make_fetcher
        from beamtrawl.transforms.sources.http.fetch import FetchError

        try:
            fetcher = make_fetcher(self.settings.of(WebSource))
            page = fetcher.fetch(url, credential=self.settings.login_for)
        except FetchError as err:
            raise OSError(f"cannot fetch: {err}") from None
        if page.status != 200 or page.truncated:
            raise OSError(f"answered {page.status}" if page.status != 200 else "body larger than the limit")
        content_type = page.headers.get("content-type", "")
        body = page.body
        if content_type.split(";")[0].strip().lower() in HTML_TYPES:
            body = charset.to_utf8(body, content_type)
        return io.BytesIO(body)
