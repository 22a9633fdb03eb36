"""Opening a document of a hit (regain's file servlet): only by an id the index holds, after the same
access check as the search, read from its source with the source's own reading code
(transforms/sources), and sent with its content type and file name.

Web pages are not fetched for the searcher: the page links to them. An HTML file opens inline in a sandbox
(its policy's ``sandbox`` gives it an origin of its own and runs none of its scripts); another document a
browser could run as a page of this site (SVG, XML…) is sent as a download, and every document carries a
Content-Security-Policy of its own, so an indexed file can never script the search page's origin.
"""

from __future__ import annotations

import re
import urllib.parse

from beamtrawl.transforms.index.base import Stored
from beamtrawl.transforms.sources import Sources, at_own_address
from beamtrawl.transforms.sources.base import Deliver, NotIndexed, SignedAddress, capable

__all__ = ["NotIndexed", "headers", "is_web", "open_stream", "signed_address"]

CHUNK = 256 * 1024
DOCUMENT_ID = re.compile(r"[0-9a-f]{32}")  # transforms.urls.doc_id: anything else is no id of ours
#: Shown in the browser rather than downloaded: types a browser displays without running them.
INLINE_TYPES = re.compile(r"text/plain|application/pdf|image/(png|jpeg|gif|webp|bmp)|audio/[\w.+-]+|video/[\w.+-]+")
#: Shown in the browser inside the sandbox of DOCUMENT_SANDBOX: HTML, to read as a page, never as this site.
SANDBOXED_TYPES = re.compile(r"text/html|application/xhtml\+xml")
FALLBACK_TYPE = "application/octet-stream"
#: Sent with every document: nothing in it may load or run anything (a PDF keeps its viewer).
DOCUMENT_CSP = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"
DOCUMENT_SANDBOX = DOCUMENT_CSP + "; sandbox"
#: Bidirectional embeddings, overrides and isolates: a name holding them can show as another name
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._ -]")
_MIMETYPE = re.compile(r"[\w.+-]+/[\w.+-]+")


def is_web(stored: Stored) -> bool:
    """Web pages open at their own address (their source's OwnAddress capability); everything else through
    the search page."""
    return at_own_address(stored.url)


def content_type(stored: Stored, declared: str = "") -> str:
    """The type its store declares for it (an object's Content-Type) if that is a specific MIME type, else the
    stored one if it is one, else the generic type for bytes."""
    declared = declared.split(";", 1)[0].strip().lower()
    if _MIMETYPE.fullmatch(declared) and declared not in (FALLBACK_TYPE, "binary/octet-stream"):
        return declared
    return stored.mimetype if _MIMETYPE.fullmatch(stored.mimetype or "") else FALLBACK_TYPE


def file_name(stored: Stored) -> str:
    """The document's file name, or the last segment of its URL, without bidirectional controls."""
    name = stored.filename or urllib.parse.unquote(urllib.parse.urlsplit(stored.url).path.rstrip("/").rsplit("/", 1)[-1])
    return BIDI_CONTROLS.sub("", name) or "document"


def headers(stored: Stored, declared: str = "") -> dict[str, str]:
    """Content type (:func:`content_type`), disposition (:func:`disposition`) and the document's own security
    policy."""
    kind = content_type(stored, declared)
    return {"content-type": kind, "content-disposition": disposition(stored, kind),
            "content-security-policy": DOCUMENT_CSP if kind == "application/pdf" else DOCUMENT_SANDBOX,
            "x-content-type-options": "nosniff"}


def disposition(stored: Stored, kind: str) -> str:
    """Inline for INLINE_TYPES and SANDBOXED_TYPES, else a download, with the file name in plain ASCII and in
    UTF-8 (RFC 6266)."""
    inline = bool(INLINE_TYPES.fullmatch(kind) or SANDBOXED_TYPES.fullmatch(kind))
    name = file_name(stored)
    ascii_name = _SAFE_NAME.sub("_", name)[:200] or "document"
    return (f"{'inline' if inline else 'attachment'}; filename=\"{ascii_name}\"; "
            f"filename*=UTF-8''{urllib.parse.quote(name, safe='')}")


def signed_address(sources: Sources, stored: Stored) -> str:
    """A short-lived address of the document at its store, where its source signs them (an object store with
    ``delivery: signed``), else "" (raises what the source raises). HTML is sent there as a download: the
    store's origin is not this site's, but no sandbox policy goes with it. The type is the one decided at the
    crawl, so a page written over the object since is not sent as one."""
    source = sources(stored.url)
    if not capable(source, SignedAddress):
        return ""
    kind = content_type(stored)
    kind = FALLBACK_TYPE if SANDBOXED_TYPES.fullmatch(kind) else kind
    return source.signed_address(stored, disposition(stored, kind), kind)


def open_stream(sources: Sources, stored: Stored, follow_symlinks: bool = False):
    """The document's bytes as an open binary stream, from its source (raises what the source raises): through
    its Deliver capability if it has one (a local file, checked to be the file that was indexed), else
    ``open_document``."""
    source = sources(stored.url)
    if capable(source, Deliver):
        return source.deliver(stored, follow_symlinks)
    return source.open_document(stored.url)

