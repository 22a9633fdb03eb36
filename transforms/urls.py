"""URL rules, each written once: normalisation, document ids, containment.

Every stage that compares, stores or hashes a URL calls these functions, so a URL found by
discovery, stored in the index and named in the configuration always has the same spelling. What one
scheme adds (its default ports, what lies inside a container beyond path segments, how a plain path
becomes a URL) its source declares; these rules ask the sources' registry (:mod:`transforms.sources`).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from urllib.parse import quote, unquote, unquote_to_bytes, urlsplit, urlunsplit

from beamtrawl.transforms.records import lossless

# Characters left unescaped in paths: RFC 3986 unreserved plus the sub-delims and ":@" allowed in a segment.
_PATH_SAFE = "/!$&'()*+,;=:@~"


def _sources():
    """The sources' registry, imported on first use: it imports the configuration's values, which match URLs by
    these rules (an import at the top would be a circle)."""
    from beamtrawl.transforms import sources

    return sources


#: Bytes a segment keeps as they are (what ``quote`` leaves unescaped with ``_PATH_SAFE``).
SEGMENT_SAFE = (b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~" + _PATH_SAFE.encode())


def quote_segment(name: bytes) -> str:
    """One path segment (a file name, or a whole local path, as bytes) spelled with the escapes URLs keep.
    Most names need none: those are returned as they are without ``quote``'s calls (a listing's hot path)."""
    if not name.rstrip(SEGMENT_SAFE):
        return name.decode("ascii")
    return quote(name, safe=_PATH_SAFE)


def is_path(text: str) -> bool:
    """Is ``text`` a plain path of this machine rather than a URL: no ``://`` and not the local files' scheme with
    a colon (a scheme is case-insensitive: ``FILE:/x`` is a URL)?"""
    local = _sources().LOCAL + ":"
    return "://" not in text and text[:len(local)].lower() != local


_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _normalise_percent(text: str, safe: str) -> str:
    """Decode escapes of unreserved characters, upper-case the rest (``%2f`` → ``%2F``, never ``/``:
    an escaped reserved character names a different resource), escape what may not appear raw."""
    def one(match: re.Match) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()
    return quote(_PERCENT.sub(one, text), safe=safe + "%")


def _normalise_path(path: str) -> str:
    path = _normalise_percent(path, _PATH_SAFE)
    trailing = len(path) > 1 and path.endswith(("/", "/.", "/.."))
    resolved = posixpath.normpath(path)
    if resolved.startswith("//"):  # POSIX keeps a leading "//"; URLs do not need it
        resolved = "/" + resolved.lstrip("/")
    if trailing and not resolved.endswith("/"):
        resolved += "/"
    return resolved


def _clean(url: str, cleaners: tuple[re.Pattern, ...]) -> str:
    """regain's UrlCleaner: remove each regex, then tidy the query it leaves (``&&``, a leading or
    trailing ``&``, an empty ``?``)."""
    for cleaner in cleaners:
        url = cleaner.sub("", url)
    base, mark, query = url.partition("?")
    if not mark:
        return url
    query = re.sub("&{2,}", "&", query).strip("&")
    return f"{base}?{query}" if query else base


def normalize_url(url: str, cleaners: tuple[re.Pattern, ...] = ()) -> str:
    """The one spelling of a URL: scheme and host lower-cased, default port and fragment dropped,
    percent-encoding normalised, dot segments resolved, then the configured cleaners applied."""
    url = url.strip()
    if is_path(url):
        url = _sources().path_url(url) + ("/" if url.endswith("/") and len(url) > 1 else "")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    netloc = parts.hostname or ""  # lower-cased, without user and password
    if ":" in netloc:  # an IPv6 address
        netloc = f"[{netloc}]"
    if parts.username and _sources().user_is_address(scheme):  # abfss://container@account…: the container
        netloc = f"{_normalise_percent(parts.username.lower(), '')}@{netloc}"
    if parts.port and _sources().default_port(scheme) != parts.port:
        netloc = f"{netloc}:{parts.port}"
    path = _normalise_path(parts.path or "/")
    query = _normalise_percent(parts.query, "=&;/:?@!$'()*+,~") if parts.query else ""
    result = urlunsplit((scheme, netloc, path, query, ""))
    local = _sources().LOCAL
    if scheme == local and not result.startswith(local + "://"):  # a local file's URL has an empty host: file:///x
        result = f"{local}://{result[len(local) + 1:]}"
    return _clean(result, cleaners) if cleaners else result


def holds_login(url: str) -> bool:
    """Does ``url`` hold a login: a password, or a user where its scheme names no part of its address there? Such a
    URL is refused wherever a URL is configured (it would be indexed, logged and reported)."""
    written = re.match(r"([a-z][a-z0-9+.-]*)://([^/?#]*)@", url.strip(), re.IGNORECASE)
    if not written:
        return False
    user, colon, _ = written.group(2).partition(":")
    return bool(colon) or not user or not _sources().user_is_address(written.group(1).lower())


def doc_id(url: str) -> str:
    """Document id: a hash of the normalised URL, never of content or ACLs, so upserts overwrite."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]


def is_under(url: str, root: str) -> bool:
    """True when ``url`` is ``root`` or lies inside it, by whole path segments (``/bla`` does not
    contain ``/blaber``: regain's start-URL prefix bug)."""
    if url == root:
        return True
    base = root if root.endswith("/") else root + "/"
    if url.startswith(base):
        return True
    # what its source says lies inside a container beyond "/" (IMAP: Folder;UIDVALIDITY=n/;UID=m)
    return len(url) > len(root) and url.startswith(root) and url[len(root)] in _sources().inside_marks(url)


def host_of(url: str) -> str:
    """``scheme://host[:port]`` of a normalised URL: the key a host-by-host source's work is grouped by,
    and the ancestor of all its pages in freshness' incomplete test."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def container_key(url: str) -> str:
    """A container's URL as listing evidence names it, with or without its trailing slash
    (``file:///srv/a/`` and ``file:///srv/a``, ``http://host/`` and ``http://host``)."""
    return url.rstrip("/")


def readable_url(url: str) -> str:
    """The URL as a person reads and writes it: percent-escapes decoded (``my%20docs`` → ``my docs``,
    ``r%C3%A9sum%C3%A9s`` → ``résumés``); bytes that are not UTF-8 become U+FFFD. What URL rules match."""
    return unquote(url, errors="replace")


def _display(quoted: str) -> str:
    """Percent-decoded for display; bytes that are not UTF-8 shown as ``\\xNN`` (records.lossless)."""
    return lossless(unquote_to_bytes(quoted).decode("utf-8", "surrogateescape"))


def file_name(url: str) -> str:
    """The last path segment, decoded for display (``a%20b.txt`` → ``a b.txt``, ``%FF`` → ``\\xff``)."""
    return _display(urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1])


def extension(url: str) -> str:
    """Lower-cased extension of the last path segment, without the dot (regain's ``extension``)."""
    return name_extension(file_name(url))


def name_extension(name: str) -> str:
    """Lower-cased extension of a file name, without the dot."""
    return name.rsplit(".", 1)[1].lower() if "." in name.strip(".") else ""


def parent_path(url: str) -> str:
    """regain's ``path`` field: the URL's directory part without the scheme, decoded for display."""
    parts = urlsplit(url)
    directory = parts.path.rsplit("/", 1)[0] + "/"
    return parts.netloc + _display(directory)


def depth_below(url: str, root: str) -> int:
    """Folders between ``root`` and ``url``: 0 for anything directly inside the root."""
    return url[len(root):].strip("/").count("/")
