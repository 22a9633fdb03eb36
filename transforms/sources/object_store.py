"""What every object-store source shares (``s3://``, ``gs://``, ``az://``): a prefix is a folder, an object a
document, and only the calls to the store differ (:class:`ObjectStore`, which a store's source extends).

A store that can list from a key (:meth:`ObjectStore.pages_after`: S3, GCS) is listed flat, without a
delimiter, its folders derived from the keys (:mod:`~beamtrawl.transforms.sources.flat_listing`): as many
requests as a plain listing. Otherwise (Azure) a prefix is listed page by page with ``/`` as the delimiter: its
objects become entries, its common prefixes go on the walk's stack
(:func:`~beamtrawl.transforms.sources.walk.walk_to_budget`). Either way a bucket of millions of objects is spread
over workers by prefix like a deep file tree, and each folder listed whole leaves the listing evidence a delete
needs. An object's freshness is what its listing says: size, last-modified and a
version (an ETag, a generation), so an unchanged object costs nothing beyond the listing. Its content type and
user metadata become fields of its document (``content_type``, ``meta_<key>``). Reading streams the object
through smart-open after the read stage has checked the listed size against ``max_file_size``. For a searcher
(``serve``'s /document) an object is looked up first, so one gone since the crawl is a 410, then streamed with
its store's content type, or handed over as a short-lived signed URL (``delivery: signed``).

A prefix that cannot be listed (unreachable endpoint, bad or expired credential, throttling past the retries,
no such bucket) is one ``incomplete`` line, which keeps every document under it; a reason never names a
login, and a URL in a client's message loses its query (a signature may be there).
"""

from __future__ import annotations

import io
import logging
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Annotated, ClassVar, Literal, NamedTuple
from urllib.parse import unquote, urlsplit

from beamtrawl.transforms.fields import Count, Items, Seconds, Section, Text, fail
from beamtrawl.transforms.records import AuxValue, Entry, FrontierItem, event
from beamtrawl.transforms.sources.base import StartHints
from beamtrawl.transforms.sources.flat_listing import flat_listing
from beamtrawl.transforms.sources.settings import SourceSettings
from beamtrawl.transforms.sources.walk import walk_to_budget
from beamtrawl.transforms.urls import depth_below, doc_id, quote_segment
from pydantic import AfterValidator, Field

#: The field of a document that holds its object's content type, and the start of each user metadata field.
CONTENT_TYPE, METADATA = "content_type", "meta_"
_VALUE_CHARS = 1000  # a metadata value longer than this is cut: a field, not a document
log = logging.getLogger(__name__)
_MAKING = threading.Lock()  # clients are not safe to build in parallel (boto3's sessions, in threads of one process)
_GENERIC_TYPES = frozenset(("", "application/octet-stream", "binary/octet-stream"))  # a store's "nobody said"


class Stored(NamedTuple):
    """One object as a listing (or a HEAD) describes it."""

    key: str
    size: int
    modified: datetime
    version: str  # what changes with every write: the ETag, or generation:metageneration
    content_type: str = ""
    metadata: Sequence[tuple[str, str]] = ()  # user metadata as the store gives it


class Page(NamedTuple):
    """One page of a prefix's listing."""

    objects: Sequence[Stored]
    prefixes: Sequence[str]  # the common prefixes, each ending in "/"


def _http_url(url: str) -> str:
    if not re.match(r"https?://[^/\s]+", url) or "@" in url.split("://", 1)[1].split("/", 1)[0]:
        raise fail(f"must be an http:// or https:// URL without a login in it, got {url!r}")
    return url.rstrip("/")


#: An http(s):// endpoint of a store, without a login in it (an S3-compatible store, an emulator).
EndpointUrl = Annotated[Text, AfterValidator(_http_url)]


class StoreSettings(Section):
    """What every object store's section has."""

    connect_timeout: Seconds = 10.0
    """seconds to connect"""
    read_timeout: Seconds = 60.0
    """seconds between two reads"""
    page_size: Count = Field(1000, ge=1, le=5000)
    """objects and prefixes asked for in one listing request"""
    reads_ahead: Count = Field(8, ge=1, le=10)
    """requests a worker has in flight at once: objects read (their listed sizes held at once stay under 64 MiB)
    and prefixes listed ahead of the walk; a request waits on the store far longer than the worker spends on it"""
    groups: Annotated[tuple[Text, ...], Items] = ()
    """the access-control groups of every object (none: public; access_control entries may decide instead)"""
    delivery: Literal["stream", "signed"] = "stream"
    """how serve's /document hands a searcher an object: stream (through serve, with its headers and no
    address of the store shown), or signed (a redirect to a short-lived signed URL of the store, where the login
    can sign; else streamed)"""
    signed_seconds: Count = Field(300, ge=10, le=3600)
    """how long a signed URL works (delivery: signed); anyone holding it may read the object until then"""

    def within(self, seconds: float) -> StoreSettings:
        """These settings for a searcher who waits ``seconds`` (serve): no timeout longer; a store whose client
        retries bounds its retries too."""
        return self.model_copy(update={"connect_timeout": min(self.connect_timeout, seconds),
                                       "read_timeout": min(self.read_timeout, seconds)})


def bucket_and_key(url: str) -> tuple[str, str]:
    """``s3://bucket/a%20b/c.txt`` → ``("bucket", "a b/c.txt")``; a prefix keeps its trailing slash."""
    parts = urlsplit(url)
    return parts.netloc, unquote(parts.path[1:])


def object_url(scheme: str, bucket: str, key: str) -> str:
    """The URL of object ``key`` (each segment percent-escaped as a file name is)."""
    return f"{scheme}://{bucket}/" + "/".join(quote_segment(segment.encode("utf-8")) for segment in key.split("/"))


def _beside(url: str, key: str) -> str:
    """The URL of ``key`` in the bucket of ``url``, spelled with its scheme (``abfss://`` stays ``abfss://``)."""
    return object_url(url.split("://", 1)[0], bucket_and_key(url)[0], key)


def odd(key: str) -> bool:
    """A key no URL can name faithfully: an empty or dot segment (``a//b``, ``a/./b``) is folded away when
    URLs are normalised, so it would be read as another object."""
    return any(segment in ("", ".", "..") for segment in key.removesuffix("/").split("/"))


def mtime_ns(when: datetime) -> int:
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000


def plain_reason(err: Exception) -> str:
    """A client's failure in one line without secrets: its type and first line, a URL's query cut off (a SAS or
    signed URL carries its signature there)."""
    text = re.sub(r"\?\S*", "", str(err).splitlines()[0] if str(err) else "")[:200]
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def metadata_fields(stored: Stored) -> list[AuxValue]:
    """The object's content type (exact) and user metadata (by words) as stored, searchable fields. A key
    becomes ``meta_`` and its letters, digits and underscores in lower case, so no metadata can shadow a
    standard field or spell a nested one (OpenSearch reads ``a.b`` as ``a`` holding ``b``)."""
    fields = []
    if stored.content_type.lower() not in _GENERIC_TYPES:
        fields.append(AuxValue(CONTENT_TYPE, _clean(stored.content_type).lower(), True, True, False))
    seen = set()
    for key, value in sorted(stored.metadata):
        name = METADATA + re.sub(r"[^a-z0-9_]+", "_", str(key).lower()).strip("_")[:64]
        text = _clean(str(value))
        if name != METADATA and name not in seen and text:
            seen.add(name)
            fields.append(AuxValue(name, text, True, True, True))
    return fields


def _clean(text: str) -> str:
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())[:_VALUE_CHARS]


class Sent(NamedTuple):
    """What a signed URL makes the store send with the object: serve's disposition and content type."""

    disposition: str
    content_type: str


class ObjectStore:
    """A source of one object store. What a store's source gives: its ``schemes``, ``Settings`` (extending
    :class:`StoreSettings`), ``BUCKET`` (a bucket or container name's pattern and its rule, for the start URL
    check), ``STARTER`` (its lines in a starter file), and the calls :meth:`pages`, :meth:`head`, :meth:`reader`,
    :meth:`pages_after` and :meth:`sign` (where it can), :meth:`failures` and :meth:`reason`.
    Clients are made on first use by :meth:`client` and kept, one per login."""

    schemes: ClassVar[tuple[str, ...]]
    Settings: ClassVar[type[StoreSettings]]
    BUCKET: ClassVar[tuple[str, str]]  # (regex of a bucket name, what the rule says)
    STARTER: ClassVar[tuple[str, ...]]  # its section in a starter file (``beamtrawl init``), with comments

    def __init__(self, settings: SourceSettings | None = None):
        self.settings = settings or SourceSettings()
        self._clients: dict = {}
        self._unsigned = False  # said once that the login cannot sign
        self._listers: ThreadPoolExecutor | None = None

    # -- what a store implements ----------------------------------------------------------------------
    def pages(self, url: str, bucket: str, prefix: str) -> Iterator[Page]:
        """Prefix ``prefix`` of ``bucket`` listed page by page with ``/`` as the delimiter."""
        raise NotImplementedError

    def pages_after(self, url: str, bucket: str, prefix: str, after: str, delimited: bool) -> Iterator[Page]:
        """Prefix ``prefix`` of ``bucket`` listed page by page in key order, from the first key after ``after``
        ("": the first), with ``/`` as the delimiter or (``delimited`` false) without one: every key below,
        no prefixes. A store without it is walked prefix by prefix (:mod:`~.flat_listing` needs it)."""
        raise NotImplementedError

    def lists_flat(self, bucket: str) -> bool:
        """Is ``bucket`` listed flat (:meth:`pages_after`, in key order), not prefix by prefix?"""
        return type(self).pages_after is not ObjectStore.pages_after

    def head(self, url: str, bucket: str, key: str) -> Stored | None:
        """Object ``key`` as the store describes it now; None when there is no such object."""
        raise NotImplementedError

    def reader(self, url: str, bucket: str, key: str):
        """smart-open's reader of object ``key``."""
        raise NotImplementedError

    def sign(self, url: str, bucket: str, key: str, seconds: int, sent: Sent) -> str:
        """A URL that reads object ``key`` for ``seconds`` and sends it with ``sent``'s disposition and content
        type (not the type it was written with); "" when the login cannot sign (no key: a public bucket, an
        emulator's anonymous login)."""
        return ""

    def failures(self) -> tuple[type, ...]:
        """What one request may raise: unreachable, refused, throttled, a bad answer (imported when needed, so a
        process that only asks about URLs pays for no client library)."""
        raise NotImplementedError

    def reason(self, err: Exception) -> str:
        """``err`` in one line without secrets (:func:`plain_reason` unless the store says better)."""
        return plain_reason(err)

    # -- shared ---------------------------------------------------------------------------------------
    @classmethod
    def start_problem(cls, url: str) -> str:
        pattern, rule = cls.BUCKET
        scheme = url.split(":", 1)[0]
        if not re.fullmatch(rf"{scheme}://({pattern})/[^?#]*", url):
            return f"a {scheme}:// start URL is {scheme}://bucket/[prefix/] ({rule})"
        return ""

    @classmethod
    def start_hints(cls, url: str) -> StartHints:
        """An object's key is indexed itself; a bucket or a prefix ending in / is listed."""
        return StartHints(index=not url.endswith("/"), lines=cls.STARTER)

    def client(self, url: str, make: Callable, home: str = ""):
        """The client for ``url``: ``make(login)`` on first use (login: the ``credentials:`` entry or None), kept
        per login and ``home`` (an account the URL names)."""
        login = self.settings.login_for(url)
        keys = (home, login.username, login.password) if login else (home, None, None)
        if keys not in self._clients:
            with _MAKING:
                if keys not in self._clients:
                    import smart_open  # noqa: F401 - whole before any reader: two threads importing it at once
                    # (serve's deliveries) give one a half-made module ("has no attribute 'local_file'")
                    self._clients[keys] = make(login)
        return self._clients[keys]

    def options(self):
        """This store's settings; for a searcher (the settings' ``deadline``), bounded by it."""
        found = self.settings.of(type(self))
        return found.within(self.settings.deadline) if self.settings.deadline else found

    def reads_ahead(self) -> int:
        """Objects a worker reads at once (the read stage's threads share this source's clients)."""
        return self.options().reads_ahead

    def _entry(self, url: str, item: FrontierItem, stored: Stored) -> Entry:
        return Entry(id=doc_id(url), url=url, root=item.root, depth=depth_below(url, item.root), size=stored.size,
                     mtime_ns=mtime_ns(stored.modified), identity="", content=None, mimetype="", outlinks=[],
                     etag=stored.version.strip('"'), http_last_modified="", source_url=item.url, link_text="",
                     groups=list(self.options().groups), fields=metadata_fields(stored))

    def _list(self, folder: FrontierItem, rules, stack: list, ahead: _ListingsAhead):
        """List one prefix, page by page: objects become entries, common prefixes go on ``stack`` (once each,
        though a store may repeat them on every page); then ``ahead`` asks for the first pages of the prefixes
        next in line."""
        scheme = folder.url.split("://", 1)[0]
        bucket, prefix = _where(folder.url)
        listed, seen = 0, set()
        try:
            for page in ahead.pages(folder.url):
                prefixes = [p for p in page.prefixes if p not in seen]
                seen.update(prefixes)
                listed += len(page.objects) + len(prefixes)
                yield event("listed", count=len(page.objects) + len(prefixes))
                for stored in page.objects:
                    yield from self._object(stored, folder, rules)
                for common in prefixes:
                    yield from self._prefix(common, folder, rules, stack)
        except self.failures() as err:  # unreachable, refused, throttled: its documents stay in the index
            yield event("incomplete", folder.url, "discover",
                        f"cannot list {scheme}://{bucket}/{prefix}: {self.reason(err)}")
        ahead.ask(stack)
        return listed

    def _pool(self) -> ThreadPoolExecutor:
        """The threads that list prefixes ahead of the walk (made on first use, kept with the source)."""
        with _MAKING:
            if self._listers is None:
                self._listers = ThreadPoolExecutor(self.reads_ahead(), thread_name_prefix="list-ahead")
        return self._listers

    def _object(self, stored: Stored, folder: FrontierItem, rules) -> Iterator:
        if stored.key.endswith("/"):  # a folder marker written by consoles (the prefix's own too): no document
            return
        url = _beside(folder.url, stored.key)
        if odd(stored.key):
            yield event("skipped", url, "discover", "a key with an empty or dot segment cannot be a URL")
            return
        decision = rules.decide(url, depth_below(url, folder.root), source_url=folder.url)
        if not decision.accepted or not decision.index:
            yield event("declined", url, "discover", "")
            return
        yield self._entry(url, folder, stored)

    def _prefix(self, common: str, folder: FrontierItem, rules, stack: list) -> Iterator:
        url = _beside(folder.url, common.removesuffix("/"))
        if odd(common):
            yield event("skipped", url, "discover", "a prefix with an empty or dot segment cannot be a URL")
            return
        depth = depth_below(url, folder.root)
        decision = rules.decide(url, depth + 1, source_url=folder.url)  # walked only if its objects could be
        if not decision.accepted or not decision.parse:
            yield event("declined", url, "discover", "")
            return
        stack.append(FrontierItem(url, folder.root, depth, url, [], folder.url, ""))

    def expand(self, item: FrontierItem, rules, follow_symlinks: bool, budget: int | None) -> Iterator:
        """Yield Entry records for objects, FrontierItem records for prefixes left to the next round and
        Event records for counts and problems (``follow_symlinks`` does not apply to a store)."""
        bucket, key = bucket_and_key(item.url)
        start = rules.start(item.url)
        if key and not key.endswith("/") and start is not None:  # a start URL may name one object
            try:
                stored = self.head(item.url, bucket, key)
            except self.failures() as err:
                yield event("incomplete", item.url, "discover", f"unavailable: {self.reason(err)}")
                return
            if stored is not None:
                if start.index:
                    yield self._entry(item.url, item, stored)
                return
        if start is not None and not start.parse:
            yield event("declined", item.url, "discover", "")
            return
        if self.lists_flat(bucket):  # as many requests as a plain listing
            yield from flat_listing(self, item, rules, budget, _where(item.url))
            return
        ahead = _ListingsAhead(self)
        try:
            yield from walk_to_budget([item], budget, lambda folder, stack: self._list(folder, rules, stack, ahead))
        finally:
            ahead.close()

    def deliver(self, stored, follow_symlinks: bool) -> io.BufferedReader:
        """The object of indexed document ``stored`` for a searcher (serve's /document), with its store's content
        type as ``content_type``: FileNotFoundError when it is gone (serve: 410). Its access was decided by its
        URL, which a new upload does not change, so an object written since the crawl is sent as it is now."""
        found = self._present(stored.url)
        stream = self.open_document(stored.url)
        stream.content_type = found.content_type
        return stream

    def signed_address(self, stored, disposition: str, content_type: str) -> str:
        """A signed URL of the object for ``delivery: signed`` ("" for ``stream``, or when the login cannot sign);
        FileNotFoundError when the object is gone, so a searcher meets serve's answer, not the store's."""
        options = self.options()
        if options.delivery != "signed":
            return ""
        self._present(stored.url)
        bucket, key = bucket_and_key(stored.url)
        try:
            address = self.sign(stored.url, bucket, key, options.signed_seconds, Sent(disposition, content_type))
        except self.failures() as err:
            raise OSError(f"cannot sign: {self.reason(err)}") from None
        if not address and not self._unsigned:
            self._unsigned = True
            log.warning("%s: delivery: signed, but its login cannot sign URLs: its objects are streamed",
                        stored.url.split("://", 1)[0])
        return address

    def _present(self, url: str) -> Stored:
        bucket, key = bucket_and_key(url)
        try:
            found = self.head(url, bucket, key)
        except self.failures() as err:
            raise OSError(f"cannot open: {self.reason(err)}") from None
        if found is None:
            raise FileNotFoundError(f"no object {key!r} in {bucket!r}")
        return found

    def open_document(self, url: str) -> io.BufferedReader:
        """The object's bytes, streamed by smart-open in ranged reads as the reader asks for them."""
        bucket, key = bucket_and_key(url)
        try:
            raw = self.reader(url, bucket, key)
        except self.failures() as err:
            raise OSError(f"cannot open: {self.reason(err)}") from None
        return io.BufferedReader(_Stream(raw, self), buffer_size=1024 * 1024)


def _where(url: str) -> tuple[str, str]:
    """The bucket of prefix URL ``url`` and the prefix as a listing asks for it ("" or ending in "/")."""
    bucket, prefix = bucket_and_key(url)
    return bucket, prefix.rstrip("/") + "/" if prefix.strip("/") else ""


class _ListingsAhead:
    """The first pages of the prefixes next in line on a walk's stack, asked for by a few threads while the walk
    lists the one in front (a listing waits on the store far longer than the walk spends on its page). At most
    ``reads_ahead`` prefixes are asked for ahead; what a prefix's listing raises is raised where the walk lists it,
    and those the walk does not reach (past its budget) are dropped when it ends."""

    def __init__(self, store: ObjectStore):
        self.store, self.width = store, store.reads_ahead()
        self.started: dict[str, Future] = {}

    def ask(self, stack: list) -> None:
        if self.width <= 1:
            return
        for folder in reversed(stack[-self.width:]):  # the next to be listed first
            if len(self.started) >= self.width:
                return
            if folder.url not in self.started:
                self.started[folder.url] = self.store._pool().submit(self._first, folder.url)

    def _first(self, url: str) -> tuple[Page | None, Iterator[Page]]:
        pages = iter(self.store.pages(url, *_where(url)))
        return next(pages, None), pages

    def pages(self, url: str) -> Iterator[Page]:
        """The listing of prefix ``url``, page by page: its first page as asked for ahead, if it was."""
        future = self.started.pop(url, None)
        if future is None:
            yield from self.store.pages(url, *_where(url))
            return
        first, rest = future.result()
        if first is not None:
            yield first
            yield from rest

    def close(self) -> None:
        for future in self.started.values():
            future.cancel()
        self.started.clear()


class _Stream(io.RawIOBase):
    """smart-open's reader whose failures (the store's, the connection's) are OSErrors for the read stage."""

    def __init__(self, reader, store: ObjectStore):
        self.reader, self.store = reader, store

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            data = self.reader.read(len(buffer))
        except self.store.failures() as err:
            raise OSError(f"read failed: {self.store.reason(err)}") from None
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            self.reader.close()
        except self.store.failures():
            pass
        super().close()
