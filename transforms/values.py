"""Values the configuration hands to the crawl and that sources, rules and controllers read on workers:
start URLs, URL patterns, logins and the bounds of preparation. Frozen and picklable; they import nothing of beamtrawl but the URL
rules they match by (:mod:`transforms.urls`), so both ``pipeline/`` and ``transforms/`` may use them."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import cache
from typing import NamedTuple

from beamtrawl.transforms.urls import is_under, readable_url


@dataclass(frozen=True)
class StartUrl:
    url: str
    parse: bool = True  # follow its links / list its folder
    index: bool = True  # put it in the index


@dataclass(frozen=True)
class UrlPattern:
    """A whitelist, blacklist or ``url_rules`` entry: a prefix (``startswith``; written as a person
    writes it, it is normalised as URLs are, so ``/srv/résumés`` matches) or a regex matching the whole
    URL as a person reads it — percent-escapes decoded, ``.*/résumés/.*`` and ``.*/my docs/.*`` —
    or as it is stored (``r%C3%A9sum%C3%A9s``, what rules written before matched)."""

    prefix: str | None = None
    regex: re.Pattern | None = None
    parse: bool = True
    index: bool = True
    name: str | None = None
    where: str = ""  # its place in the configuration (``whitelist[2]``), for the report

    def matches(self, url: str) -> bool:
        if self.prefix is not None:
            return url.startswith(self.prefix)
        return self.regex.fullmatch(url) is not None or (
            "%" in url and self.regex.fullmatch(readable_url(url)) is not None)

    def describe(self) -> str:
        return f"{self.where} ({'prefix ' + self.prefix if self.prefix is not None else 'regex ' + self.regex.pattern})"


@dataclass(frozen=True)
class Credential:
    """A login for every URL under ``url`` (scheme, host and optionally a path). The secret comes from
    ``${ENV}`` or a file and never appears in URLs, logs or the report: ``repr`` hides it."""

    url: str
    username: str
    password: str = field(repr=False)
    auth: str = "basic"  # HTTP only: basic or digest


def credential_for(credentials, url: str) -> Credential | None:
    """The credential with the longest ``url`` prefix of ``url``, if any. An IMAP folder's login serves its
    messages too (``Folder;UIDVALIDITY=n/;UID=m`` lies under ``Folder``)."""
    matching = [c for c in credentials if is_under(url, c.url.rstrip("/"))]
    return max(matching, key=lambda c: len(c.url)) if matching else None


class Bounds(NamedTuple):
    """The bounds of every preparator run (the ``preparation:`` section): its defaults are written here,
    once; the schema (pipeline/config/preparators.py) reads them."""

    timeout: float = 60.0  # seconds per document, hard; anew for the preparators after a killed one
    memory_limit: int = 4 * 1024**3  # address space of the preparing process; 0 = no limit
    isolate: bool = True  # False: run preparators in the worker, without the hard bounds
    max_content_length: int = 10_000_000  # characters of text kept per document


class OcrSettings(NamedTuple):
    """How text is read from pictures (the ``ocr:`` section): its defaults are written here, once; the schema
    (pipeline/config/ocr.py) reads them. The crawl hands them to the preparators that OCR (image, pdf) as
    their ``ocr`` parameter, so they belong to the preparation fingerprint."""

    enabled: bool = True  # False: no OCR at all (images get their metadata only, scanned pages nothing)
    languages: tuple[str, ...] = ("eng",)  # tesseract's language packs, e.g. ("eng", "deu")
    min_image_side: int = 64  # pixels; an image narrower or lower than this (an icon, a spacer) is not OCR'd
    page_timeout: float = 60.0  # seconds tesseract may take for one page or image; one over it is skipped
    max_pages: int = 100  # pages OCR'd per document (a PDF, a multi-page TIFF); the rest are skipped
    max_pixels: int = 60_000_000  # pixels of one page or image; a larger one is skipped
    dpi: int = 300  # resolution PDF pages are rendered at for OCR
    cache: str = ""  # the OCR cache's folder (the crawl's work folder + /ocr-cache); "": none
    cache_entries: int = 100_000  # pages and images the cache keeps; the oldest go first
    document_budget: float = 0.0  # seconds of OCR per document (set from preparation.timeout); 0: none

    def identity(self) -> tuple:
        """What changes the text a document gets, for the preparation fingerprint: not the cache, nor the
        time bounds (as ``preparation.timeout`` is not in it); the engine's version (tesserocr's wheel carries
        tesseract itself)."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            engine = version("tesserocr") if self.enabled else ""
        except PackageNotFoundError:
            engine = "missing"
        return (self.enabled, self.languages, self.min_image_side, self.max_pages, self.max_pixels, self.dpi, engine)


TESSERACT_PROGRAM, TESSERACT_PACKAGE = "tesseract", "tesseract-ocr"  # the OCR engine, and its Debian package


@cache
def tesseract_packs() -> tuple[str, frozenset[str]] | None:
    """The folder of tesseract's language packs and the languages in it, as Debian's ``tesseract`` reports them
    (``--list-langs``: the folder on its first line); None without it."""
    program = shutil.which(TESSERACT_PROGRAM)
    if program is None:
        return None
    try:
        listed = subprocess.run([program, "--list-langs"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (listed.stdout or listed.stderr).splitlines()
    folder = lines[0].partition('"')[2].rpartition('"')[0] if lines else ""
    return folder, frozenset(line.strip() for line in lines[1:] if line.strip())


def language_package(language: str) -> str:
    """The Debian package of a tesseract language pack (``deu`` → ``tesseract-ocr-deu``)."""
    return f"{TESSERACT_PACKAGE}-{language.lower().replace('_', '-')}"


class NodeOptions(NamedTuple):
    """How to reach and lay out an OpenSearch index (the ``index:`` section's OpenSearch keys): its defaults
    are written here, once; the OpenSearch target's settings (transforms/index/opensearch.py) read them."""

    analyzer: str = "english"  # the text analyzer of the content fields
    username: str | None = None
    password: str | None = None
    ca_file: str | None = None  # certificates to trust instead of the system's
    verify_certs: bool = True
    timeout: float = 60.0  # seconds one request may take
    compress: bool = False  # gzip requests


class Limits(NamedTuple):
    """What one web request may take (the ``http:`` section's limits): its defaults are written here, once;
    the web source's settings (transforms/sources/http/__init__.py) read them."""

    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    total_timeout: float = 120.0  # one page, redirects included
    max_body: int = 10 * 1024 * 1024  # decompressed bytes
    max_redirects: int = 5
    user_agent: str = "beamtrawl/0.1 (+https://github.com/beamtrawl)"
    block_private_addresses: bool = False
