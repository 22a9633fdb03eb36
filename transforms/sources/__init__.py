"""Where documents live: the registry of sources, one per URL scheme.

Each source implements :class:`~beamtrawl.transforms.sources.base.Source` (its schemes, how a frontier
item expands, how a document is opened, optional capabilities). The registry is :data:`BUILTIN` plus
what other distributions register under the entry-point group ``beamtrawl.sources``; the entry
point's name is the scheme, e.g. in a pyproject.toml::

    [project.entry-points."beamtrawl.sources"]
    memo = "beamtrawl_memo:MemoSource"

Nothing else in beamtrawl names a scheme: the configuration accepts :func:`schemes`, discovery, reading,
freshness and the driver ask the source of a URL. A source is imported when first asked for, so a
process pays only for the clients (smbprotocol, urllib3, imapclient, boto3 …) of the schemes it meets.
"""

from __future__ import annotations

import functools
import re

from beamtrawl.transforms.registry import Registry, RegistryError
from beamtrawl.transforms.sources.base import (
    ByHost,
    LocalFiles,
    OwnAddress,
    ParentUrls,
    Source,
    StartUrls,
    capable,
)
from beamtrawl.transforms.sources.settings import SourceSettings, section_name

GROUP = "beamtrawl.sources"
#: The sources beamtrawl ships, by scheme: "module:class" below this package.
BUILTIN = {"file": "file:FileSource", "http": "http:WebSource", "https": "http:WebSource",
           "smb": "smb:SmbSource", "imap": "imap:ImapSource", "imaps": "imap:ImapSource",
           "s3": "s3:S3Source", "gs": "gcs:GcsSource", "az": "azure:AzureSource", "abfs": "azure:AzureSource",
           "abfss": "azure:AzureSource"}
#: The scheme of this machine's files (its source has the LocalFiles capability and ``path_url``): a plain path in
#: the configuration or on the command line is a URL of it.
LOCAL = "file"


#: What an entry point's name must be to serve URLs: a scheme as RFC 3986 writes one, of two characters at
#: least (``C:/docs`` is a path on a Windows drive).
_SCHEME_NAME = re.compile(r"[a-z][a-z0-9+.-]+")
_RULE = "a letter, then letters, digits, +, - or .; one letter alone is a Windows drive"
REGISTRY = Registry("source", GROUP, {scheme: f"{__name__}.{where}" for scheme, where in BUILTIN.items()},
                    noun="scheme", rule=(_SCHEME_NAME, _RULE))


def scheme_of(url: str) -> str:
    return url.split(":", 1)[0].lower()


def schemes() -> tuple[str, ...]:
    """Every scheme a start URL may have (without importing any source)."""
    return REGISTRY.names()


def builtin(scheme: str) -> bool:
    """Is ``scheme`` served by a source beamtrawl ships (known without reading the entry points)?"""
    return scheme in REGISTRY.builtin


def known(scheme: str) -> bool:
    """Is there a source for ``scheme``? A built-in one is known without reading the entry points."""
    return REGISTRY.known(scheme.lower())


@functools.cache
def source_class(scheme: str) -> type[Source]:
    """The source class serving ``scheme``; raises RegistryError."""
    if not REGISTRY.known(scheme) and not REGISTRY.skipped(scheme):
        raise RegistryError(f"no source handles {scheme}: URLs")
    loaded = REGISTRY.load(scheme)
    if scheme not in [str(s).lower() for s in getattr(loaded, "schemes", ())] or not all(
            callable(getattr(loaded, method, None)) for method in ("expand", "open_document")):
        raise RegistryError(f"{REGISTRY.where(scheme)} is not a source of {scheme}: URLs (a Source declares the "
                            "scheme in `schemes` and has `expand` and `open_document`)")
    return loaded


def clear() -> None:
    """Forget the registered and loaded sources (a test that installs a distribution calls it)."""
    REGISTRY.clear()
    source_class.cache_clear()


def source_for(url: str) -> type[Source]:
    """The source class serving ``url``'s scheme; raises RegistryError."""
    return source_class(scheme_of(url))


def start_problem(url: str) -> str:
    """What ``url``'s source says is wrong with it as a start URL ("" if nothing); raises RegistryError."""
    kind = source_for(url)
    return kind.start_problem(url) if capable(kind, StartUrls) else ""


def section_source(name: str) -> type[Source] | None:
    """The source whose settings the crawl file's top-level section ``name`` holds (``smb``, ``http``), if
    any; raises RegistryError when that source cannot be loaded."""
    if not isinstance(name, str) or not _SCHEME_NAME.fullmatch(name) or not known(name):
        return None
    kind = source_class(name)
    return kind if getattr(kind, "Settings", None) is not None and section_name(kind) == name else None


def settings_sources() -> dict[str, type[Source]]:
    """Every source with settings by its section name, entry points' included (the reference, ``init``): this
    imports every source."""
    found = {}
    for scheme in schemes():
        try:
            kind = section_source(scheme)
        except RegistryError:
            continue  # a broken extension: its warning was given; the crawl that names it says so
        if kind is not None:
            found[scheme] = kind
    return found


class Sources:
    """The sources of one crawl in one process, each made once with the crawl's settings. A DoFn builds
    one in ``setup`` from the settings it took in its constructor."""

    def __init__(self, settings: SourceSettings | None = None):
        self.settings = settings or SourceSettings()
        self._made: dict[type, Source] = {}

    def __call__(self, url: str) -> Source:
        """The source instance for ``url``; raises RegistryError."""
        kind = source_for(url)
        if kind not in self._made:
            self._made[kind] = kind(self.settings)
        return self._made[kind]


def by_host(url: str) -> bool:
    """Is ``url`` discovered host by host (its source has the ByHost capability)? False for an unknown scheme."""
    try:
        return capable(source_for(url), ByHost)
    except RegistryError:
        return False


def local_path(url: str) -> str | None:
    """``url``'s path in this machine's file system if its source keeps documents there (its LocalFiles
    capability), else None (also for an unknown scheme)."""
    try:
        kind = source_for(url)
    except RegistryError:
        return None
    return kind.local_path(url) if capable(kind, LocalFiles) else None


def at_own_address(url: str) -> bool:
    """Does a searcher open ``url`` at its own address (its source's OwnAddress capability)? False for an unknown
    scheme."""
    try:
        kind = source_for(url)
    except RegistryError:
        return False
    return capable(kind, OwnAddress) and bool(kind.own_address(url))


def path_url(path: str | bytes) -> str:
    """The URL of plain path ``path`` (absolute or relative to the working folder): the LOCAL source says it."""
    return source_class(LOCAL).path_url(path)


def default_port(scheme: str) -> int | None:
    """The port a URL of ``scheme`` means when it names none (its source's ``default_ports``), which normalisation
    drops; None for a scheme without one or without a source."""
    try:
        return getattr(source_class(scheme), "default_ports", {}).get(scheme)
    except RegistryError:
        return None


def user_is_address(scheme: str) -> bool:
    """Does a URL of ``scheme`` name part of its address where a login's user goes (its source's ``user_is_address``:
    Azure's ``abfss://container@account.dfs.core.windows.net/``), so normalisation keeps it and it is no login?"""
    try:
        return bool(getattr(source_class(scheme), "user_is_address", False))
    except RegistryError:
        return False


def inside_marks(url: str) -> str:
    """The characters after a container's URL that begin something inside it besides "/" (the ``inside_marks`` of
    ``url``'s source: IMAP's ";"); "" for a scheme without a source, or one not spelled in lower case."""
    scheme = url.split(":", 1)[0]
    if not _SCHEME_NAME.fullmatch(scheme):
        return ""
    try:
        return getattr(source_class(scheme), "inside_marks", "")
    except RegistryError:
        return ""


def parent_urls(url: str) -> tuple[str, ...]:
    """What the ParentUrls capability of ``url``'s source says (nothing for a scheme without one)."""
    try:
        kind = source_for(url)
    except RegistryError:
        return ()
    return tuple(kind.parent_urls(url)) if capable(kind, ParentUrls) else ()


def ancestors(url: str):
    """``url`` and every URL above it, by path segments and by what its source knows beyond them."""
    while True:
        yield url
        yield from parent_urls(url)  # what a source knows beyond path segments (IMAP's ;UIDVALIDITY=n)
        cut = url.rstrip("/").rfind("/")
        if cut <= url.find("://") + 2:
            if not url.endswith("/"):
                yield url + "/"  # the server itself, as a start URL spells it (smb://host/)
            return
        url = url[:cut]
