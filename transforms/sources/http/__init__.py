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
from typing import BinaryIO

from beamtrawl.transforms.sources.settings import SourceSettings
from beamtrawl.transforms.urls import host_of


class WebSource:
    """``http://`` and ``https://`` URLs: pages found by following links, host by host."""

    schemes = ("http", "https")

    def __init__(self, settings: SourceSettings):
        self.settings = settings
        self._fetcher = None  # one per worker process and crawl, made on first use

    def expand_host(self, host: str, items, known: dict, rules) -> Iterator:
        """Crawl ``host`` from ``items`` (see :class:`~beamtrawl.transforms.sources.http.crawl.HostCrawl`)."""
        from beamtrawl.transforms.sources.http.crawl import HostCrawl, make_fetcher

        if self._fetcher is None:
            self._fetcher = make_fetcher(self.settings.http)
        return HostCrawl(self.settings, rules, self._fetcher).run(host, items, known)

    def expand(self, item, rules, follow_symlinks: bool, budget: int | None) -> Iterator:
        """A start page alone: its host crawled from it, nothing indexed known (discovery uses ``expand_host``)."""
        return self.expand_host(host_of(item.url), [item], {}, rules)

    def open_document(self, url: str) -> BinaryIO:
        """The page's bytes (UTF-8 for HTML), fetched with the configured limits and login; raises OSError."""
        from beamtrawl.transforms.sources.http import charset
        from beamtrawl.transforms.sources.http.crawl import HTML_TYPES, make_fetcher
        from beamtrawl.transforms.sources.http.fetch import Fetcher, FetchError

        try:
            fetcher = make_fetcher(self.settings.http) if self.settings.http is not None else Fetcher()
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
