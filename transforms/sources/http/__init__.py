"""The web source (http, https). Discovery goes host by host (:mod:`.discover`, :mod:`.crawl`) rather
than item by item, so ``expand`` is not how web pages are found; ``open_document`` fetches a page again
when a page that answered 304 must be re-prepared (the preparation fingerprint changed).

Parts: :mod:`.fetch` (urllib3 within bounds), :mod:`.robots` (protego), :mod:`.auth` (Basic, Digest),
:mod:`.charset`, :mod:`.links` (lxml), :mod:`.traps`, :mod:`.crawl` (one host), :mod:`.discover` (Beam).
"""

from __future__ import annotations

import io
from typing import BinaryIO

SCHEMES = ("http", "https")


def expand(item, rules, follow_symlinks: bool, budget: int | None):
    raise NotImplementedError("web pages are discovered host by host by transforms.sources.http.discover.WebDiscover")


def open_document(url: str) -> BinaryIO:
    """The page's bytes (UTF-8 for HTML), fetched with default limits and the configured login (the
    crawl's source settings); raises OSError."""
    from beamtrawl.transforms.sources import settings
    from beamtrawl.transforms.sources.http import charset
    from beamtrawl.transforms.sources.http.crawl import HTML_TYPES
    from beamtrawl.transforms.sources.http.fetch import Fetcher, FetchError

    try:
        page = Fetcher().fetch(url, credential=settings.login_for)
    except FetchError as err:
        raise OSError(f"cannot fetch: {err}") from None
    if page.status != 200 or page.truncated:
        raise OSError(f"answered {page.status}" if page.status != 200 else "body larger than the limit")
    content_type = page.headers.get("content-type", "")
    body = page.body
    if content_type.split(";")[0].strip().lower() in HTML_TYPES:
        body = charset.to_utf8(body, content_type)
    return io.BytesIO(body)
