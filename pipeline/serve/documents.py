"""Opening a document of a hit (regain's file servlet): only by an id the index holds, after the same
access check as the search, read from its source with the source's own reading code
(transforms/sources), and sent with its content type and file name.

Web pages are not fetched for the searcher: the page links to them. An HTML file opens inline in a sandbox
(its policy's ``sandbox`` gives it an origin of its own and runs none of its scripts); another document a
browser could run as a page of this site (SVG, XML…) is sent as a download, and every document carries a
Content-Security-Policy of its own, so an indexed file can never script the search page's origin.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import urllib.parse
from collections.abc import Iterator
from typing import BinaryIO

from beamtrawl.transforms.index.base import Stored
from beamtrawl.transforms.sources import Sources
from beamtrawl.transforms.urls import url_to_path

CHUNK = 256 * 1024
DOCUMENT_ID = re.compile(r"[0-9a-f]{32}")  # transforms.urls.doc_id: anything else is no id of ours
WEB_SCHEMES = ("http", "https")
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
    """Web pages open at their own address; everything else through the search page."""
    return stored.url.split(":", 1)[0].lower() in WEB_SCHEMES


def content_type(stored: Stored) -> str:
    """The stored MIME type if it is one, else the generic type for bytes."""
    return stored.mimetype if _MIMETYPE.fullmatch(stored.mimetype or "") else FALLBACK_TYPE


def file_name(stored: Stored) -> str:
    """The document's file name, or the last segment of its URL, without bidirectional controls."""
    name = stored.filename or urllib.parse.unquote(urllib.parse.urlsplit(stored.url).path.rstrip("/").rsplit("/", 1)[-1])
    return BIDI_CONTROLS.sub("", name) or "document"


def headers(stored: Stored) -> dict[str, str]:
    """Content type, disposition (inline for INLINE_TYPES, else a download) with the file name in plain
    ASCII and in UTF-8 (RFC 6266), and the document's own security policy."""
    kind = content_type(stored)
    name = file_name(stored)
    inline = bool(INLINE_TYPES.fullmatch(kind) or SANDBOXED_TYPES.fullmatch(kind))
    ascii_name = _SAFE_NAME.sub("_", name)[:200] or "document"
    disposition = (f"{'inline' if inline else 'attachment'}; filename=\"{ascii_name}\"; "
                   f"filename*=UTF-8''{urllib.parse.quote(name, safe='')}")
    return {"content-type": kind, "content-disposition": disposition,
            "content-security-policy": DOCUMENT_CSP if kind == "application/pdf" else DOCUMENT_SANDBOX,
            "x-content-type-options": "nosniff"}


class NotIndexed(OSError):
    """The file at a document's place is no longer the file that was indexed (changed, replaced by a
    symbolic link, a FIFO or a device): its groups were decided for another file, so it is not sent."""


def open_stream(sources: Sources, stored: Stored, follow_symlinks: bool = False):
    """The document's bytes as an open binary stream, from its source (raises what the source raises);
    a local file through :func:`open_local_file`."""
    if stored.url.startswith("file:"):
        return open_local_file(stored, follow_symlinks)
    return sources(stored.url).open_document(stored.url)


def open_local_file(stored: Stored, follow_symlinks: bool) -> BinaryIO:
    """The indexed local file, or NotIndexed. A file is served only if it is still a regular file of the
    indexed size and modification time, reached without a symbolic link anywhere on its path — from ``/``,
    through the start folder, to the file — unless the crawl followed them: each folder is opened relative
    to the one above it (openat with O_NOFOLLOW), so a start folder or any folder swapped for a link, before
    or during the walk, is refused. Opened non-blocking, so a FIFO put in its place cannot hold a thread."""
    path = url_to_path(stored.url)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    if follow_symlinks:  # the crawl followed links: so may delivery, the checks on the file still hold
        return _checked(os.open(path, flags), stored)
    parts = [part for part in os.path.normpath(os.path.abspath(path)).split(os.sep) if part]
    folder = os.open(os.sep, flags | os.O_DIRECTORY)
    try:
        for name in parts[:-1]:
            inner = _open(name, flags | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
        fd = _open(parts[-1], flags | os.O_NOFOLLOW, dir_fd=folder)
    finally:
        os.close(folder)
    return _checked(fd, stored)


def _open(name: str, flags: int, dir_fd: int) -> int:
    """os.open relative to ``dir_fd``, with a symbolic link in the way (O_NOFOLLOW's ELOOP, or ENOTDIR for a
    folder replaced by a link or a file) as NotIndexed."""
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            raise NotIndexed("a symbolic link is in its place") from None
        raise


def _checked(fd: int, stored: Stored) -> BinaryIO:
    """The open ``fd`` as a blocking stream if it is the indexed regular file, else NotIndexed."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotIndexed("it is no longer a regular file")
        if (st.st_size, st.st_mtime_ns) != (stored.size, stored.mtime_ns):
            raise NotIndexed("it changed after it was indexed")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def chunks(stream) -> Iterator[bytes]:
    """The stream's bytes in CHUNK-sized pieces; the stream is closed at the end or when the reader leaves."""
    try:
        while chunk := stream.read(CHUNK):
            yield chunk
    finally:
        stream.close()
