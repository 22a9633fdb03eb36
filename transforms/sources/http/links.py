"""What a fetched page tells discovery: its links with their text, its canonical URL, its robots meta
tag, and the URLs a sitemap lists. lxml only (no main-text extraction): discovery parses every page,
the HTML preparator later parses only the new and changed ones, so this pass must stay cheap.

Links are ``a href``, ``area href``, ``frame``/``iframe src`` and ``link rel=canonical``, resolved against
``base href``; the link text travels with each URL (for ``decide(url, source_url=…, link_text=…)`` and
link-text-as-title).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from urllib.parse import urljoin

import lxml.etree
import lxml.html

_SKIP = ("mailto:", "javascript:", "tel:", "data:", "#")
_HTML_PARSER = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True)


@dataclass
class PageLinks:
    links: list[tuple[str, str]] = field(default_factory=list)  # (absolute URL, link text)
    canonical: str = ""
    noindex: bool = False
    nofollow: bool = False


def _text(element) -> str:
    return " ".join(" ".join(element.itertext()).split())


def extract(utf8: bytes, url: str) -> PageLinks:
    """Links of an HTML page given as UTF-8 bytes (see :mod:`charset`); broken HTML is parsed as a
    browser would, an unparseable page has no links."""
    try:
        tree = lxml.html.document_fromstring(utf8, parser=_HTML_PARSER)
    except (lxml.etree.ParserError, ValueError):
        return PageLinks()
    found = PageLinks()
    base = url
    for element in tree.iter("base"):
        if element.get("href"):
            base = urljoin(url, element.get("href").strip())
            break
    for meta in tree.iter("meta"):
        if (meta.get("name") or "").strip().lower() in ("robots", "beamtrawl"):
            directives = {d.strip().lower() for d in (meta.get("content") or "").split(",")}
            found.noindex |= bool(directives & {"noindex", "none"})
            found.nofollow |= bool(directives & {"nofollow", "none"})
    for element in tree.iter("a", "area", "frame", "iframe", "link"):
        if element.tag == "link":
            if "canonical" in (element.get("rel") or "").lower().split() and element.get("href"):
                found.canonical = urljoin(base, element.get("href").strip())
            continue
        target = (element.get("href") if element.tag in ("a", "area") else element.get("src")) or ""
        target = target.strip()
        if not target or target.lower().startswith(_SKIP):
            continue
        if "nofollow" in (element.get("rel") or "").lower().split():
            continue
        found.links.append((urljoin(base, target), _text(element) if element.tag == "a" else ""))
    return found


def sitemap_urls(body: bytes, max_size: int) -> tuple[list[str], list[str]]:
    """(page URLs, nested sitemap URLs) of a sitemap or sitemap index, gzipped or not; decompression
    stops at ``max_size`` bytes."""
    if body[:2] == b"\x1f\x8b":
        try:
            body = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(body, max_size)
        except zlib.error:
            return [], []
    try:
        root = lxml.etree.fromstring(body, parser=lxml.etree.XMLParser(resolve_entities=False, no_network=True,
                                                                       recover=True, huge_tree=False))
    except lxml.etree.XMLSyntaxError:
        return [], []
    if root is None:
        return [], []
    pages, nested = [], []
    for loc in root.iter("{*}loc"):
        parent = loc.getparent()
        text = (loc.text or "").strip()
        if text:
            (nested if parent is not None and lxml.etree.QName(parent).localname == "sitemap" else pages).append(text)
    return pages, nested
