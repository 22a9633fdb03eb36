"""URL rules, each written once: normalisation, document ids, file paths as URLs, containment.

Every stage that compares, stores or hashes a URL calls these functions, so a URL found by
discovery, stored in the index and named in the configuration always has the same spelling.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
from urllib.parse import quote, unquote_to_bytes, urlsplit, urlunsplit

# Characters left unescaped in paths: RFC 3986 unreserved plus the sub-delims and ":@" allowed in a segment.
_PATH_SAFE = "/!$&'()*+,;=:@~"
_DEFAULT_PORTS = {"http": 80, "https": 443, "smb": 445, "imap": 143, "imaps": 993}


def path_to_url(path: str | bytes) -> str:
    """``file://`` URL of an absolute local path; bytes that are not UTF-8 survive as %XX escapes."""
    raw = os.fsencode(os.path.abspath(path))
    return "file://" + quote(raw, safe=_PATH_SAFE)


def quote_segment(name: bytes) -> str:
    """One path segment (a file name as bytes) spelled as :func:`path_to_url` spells it."""
    return quote(name, safe=_PATH_SAFE)


def url_to_path(url: str) -> str:
    """Local path of a ``file://`` URL, the exact inverse of :func:`path_to_url`."""
    parts = urlsplit(url)
    if parts.scheme != "file":
        raise ValueError(f"not a file URL: {url}")
    return os.fsdecode(unquote_to_bytes(parts.path))


def _normalise_path(path: str) -> str:
    # Re-quote after decoding: %7e and ~ become one spelling, hex digits upper case, reserved kept.
    decoded = unquote_to_bytes(path)
    trailing = path.endswith("/") and len(path) > 1
    resolved = posixpath.normpath(decoded.decode("latin-1")) if decoded else "/"
    if resolved.startswith("//"):
        resolved = "/" + resolved.lstrip("/")
    if trailing and not resolved.endswith("/"):
        resolved += "/"
    return quote(resolved.encode("latin-1"), safe=_PATH_SAFE)


def normalize_url(url: str, cleaners: tuple[re.Pattern, ...] = ()) -> str:
    """The one spelling of a URL: scheme and host lower-cased, default port and fragment dropped,
    percent-encoding normalised, dot segments resolved, then each cleaner regex removed (regain's
    UrlCleaner, followed by its ``&&`` → ``&`` and trailing ``?``/``&`` tidying)."""
    url = url.strip()
    if "://" not in url and not url.startswith("file:"):
        url = path_to_url(url)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    netloc = parts.hostname or ""
    if parts.port and _DEFAULT_PORTS.get(scheme) != parts.port:
        netloc = f"{netloc}:{parts.port}"
    path = _normalise_path(parts.path or "/")
    query = quote(unquote_to_bytes(parts.query), safe="=&;/:?@!$'()*+,~") if parts.query else ""
    result = urlunsplit((scheme, netloc, path, query, ""))
    if scheme == "file" and not result.startswith("file://"):
        result = "file://" + result[len("file:"):]
    for cleaner in cleaners:
        result = cleaner.sub("", result)
    if cleaners:
        result = result.replace("&&", "&").rstrip("&?")
    return result


def doc_id(url: str) -> str:
    """Document id: a hash of the normalised URL, never of content or ACLs, so upserts overwrite."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]


def is_under(url: str, root: str) -> bool:
    """True when ``url`` is ``root`` or lies inside it, by whole path segments (``/bla`` does not
    contain ``/blaber``: regain's start-URL prefix bug)."""
    if url == root:
        return True
    base = root if root.endswith("/") else root + "/"
    return url.startswith(base)


def file_name(url: str) -> str:
    """The last path segment, decoded for display (``a%20b.txt`` → ``a b.txt``)."""
    segment = urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]
    return unquote_to_bytes(segment).decode("utf-8", "replace")


def extension(url: str) -> str:
    """Lower-cased extension of the last path segment, without the dot (regain's ``extension``)."""
    name = file_name(url)
    return name.rsplit(".", 1)[1].lower() if "." in name.strip(".") else ""


def parent_path(url: str) -> str:
    """regain's ``path`` field: the URL's directory part without the scheme, decoded for display."""
    parts = urlsplit(url)
    directory = parts.path.rsplit("/", 1)[0] + "/"
    return parts.netloc + unquote_to_bytes(directory).decode("utf-8", "replace")


def depth_below(url: str, root: str) -> int:
    """Folders between ``root`` and ``url``: 0 for anything directly inside the root."""
    return url[len(root):].strip("/").count("/")
