"""The interface every index target implements, so the pipeline does not know which it writes to.

A target object is a picklable description (a path, a URL): the driver calls :meth:`prepare` and
:meth:`snapshot_splits`; workers call :meth:`read_snapshot`, :meth:`upsert` and :meth:`delete`,
opening their own connection on first use. Writes are idempotent (ids are hashes of URLs), so a
retried bundle leaves no duplicate.
"""

from __future__ import annotations

import html
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from beamtrawl.transforms import batches
from beamtrawl.transforms.fields import Section
from beamtrawl.transforms.index.query import Query
from beamtrawl.transforms.records import IndexDoc, SnapshotEntry

#: The fields of a document that decide who may see it. Documents with equal values form one access
#: partition, seen by exactly the same searchers; both targets rank a search with the statistics of
#: the partitions the searcher may see only (the embedded index keeps them per partition, OpenSearch
#: keeps each partition in an index of its own).
ACCESS_FIELDS = ("groups", "denied")


def access_key(doc) -> str:
    """A document's access partition, canonical: the same for documents the same searchers may see
    (an object without the fields is public)."""
    return json.dumps({name: sorted(getattr(doc, name, ())) for name in ACCESS_FIELDS}, sort_keys=True)


# Highlight markers from private-use code points: neither HTML nor whitespace, never in real text.
MARK_ON, MARK_OFF = "\ue000", "\ue001"


def render_snippet(marked: str) -> tuple[str, str]:
    """A snippet with highlight markers → (plain text, HTML-escaped text with <mark> around matches)."""
    marked = " ".join(marked.split())
    plain = marked.replace(MARK_ON, "").replace(MARK_OFF, "")
    return plain, html.escape(marked).replace(MARK_ON, "<mark>").replace(MARK_OFF, "</mark>")


class IndexUnavailable(Exception):
    """The index cannot be used (missing, wrong version, unreachable); the message says why."""


class Rejected(str):
    """The reason of a write failure that is the document's own fault: the index refused that document
    (a value its mapping cannot take), not the index failing. The document gets a substitute and a report
    line; the crawl goes on and deletes may still run."""


@dataclass
class Hit:
    url: str
    title: str
    snippet: str  # plain text
    snippet_html: str  # HTML-escaped, matches wrapped in <mark>
    score: float
    mimetype: str = ""
    size: int = 0
    last_modified: str = ""
    extra: dict = field(default_factory=dict)
    id: str = ""  # the document id, for opening it through ``beamtrawl serve`` (/document/<id>)
    #: The other places of the same content (copies: the same content hash) among the matches — so only
    #: where the searcher may look — at most MAX_LOCATIONS, by URL; the hit is the best of them.
    locations: list = field(default_factory=list)


#: Places of one content a hit lists (OpenSearch's bound on inner hits).
MAX_LOCATIONS = 100


#: The orders a page of hits can be sorted in: best first, or most recently modified first.
RELEVANCE, NEWEST = "relevance", "date"
ORDERS = (RELEVANCE, NEWEST)
#: The fields a search page counts hits by (facets), each also a filter field of the query language,
#: so a facet value narrows a search as ``field:value``: type, extension and folder (or host and folder).
FACET_FIELDS = ("mimetype", "extension", "path")
#: The facet by modification time: its values are ranges of ``modified:`` (query.range_of), counted on
#: every target from the same bounds (:func:`date_buckets`).
DATE_FACET = "modified"
_DATE_BUCKETS = (("last week", 7), ("last month", 31), ("last year", 366))


def date_buckets(today: date | None = None) -> list[tuple[str, str, int | None, int | None]]:
    """(label, ``modified:`` value, low, high) of the date facet as of ``today`` (UTC): the last week, month
    and year (each includes the shorter ones, as Fess and recoll count them) and what is older."""
    from beamtrawl.transforms.index.query import range_of

    today = today or datetime.now(UTC).date()
    buckets = [(label, f">={today - timedelta(days=days)}") for label, days in _DATE_BUCKETS]
    buckets.append(("older", f"<{today - timedelta(days=_DATE_BUCKETS[-1][1])}"))
    return [(label, value, *range_of(DATE_FACET, value)) for label, value in buckets]


@dataclass
class Page:
    """One page of a search: its hits, how many match in all (copies of one content count once, as they are
    one hit), and the facets of all of them (which count documents). Every number counts documents the
    searcher may see only."""

    hits: list[Hit]
    total: int
    facets: dict[str, list[tuple[str, int]]]  # FACET_FIELDS name → (value, documents), most first; DATE_FACET →
    # (``modified:`` value, documents) in date_buckets' order, buckets without documents left out


@dataclass
class Stored:
    """What opening a document needs: where it lives and what it is."""

    id: str
    url: str
    title: str
    filename: str
    mimetype: str
    size: int
    root: str = ""  # the start URL it was found under, and its size and mtime when indexed: serve opens
    mtime_ns: int = 0  # a local file only if it is still that file (pipeline/serve/documents.py)


@dataclass
class Indexed:
    """What the index holds of one document, for reading it as indexed (``beamtrawl serve``'s text view):
    whatever the source is (a web page, an archive member, a mail), this is what a search matched."""

    id: str
    url: str
    title: str
    mimetype: str
    size: int
    last_modified: str
    content: str
    headlines: str = ""
    metadata: str = ""
    preparation_error: str = ""
    fields: dict = field(default_factory=dict)  # the auxiliary fields stored with it


#: What :meth:`IndexTarget.record` gives of a document, on every target: these keys, ``groups`` and ``denied``
#: lists, ``last_modified`` and ``indexed_at`` ISO 8601 text, ``size`` and ``mtime_ns`` whole numbers.
RECORD_FIELDS = ("url", "root", "title", "mimetype", "size", "mtime_ns", "last_modified", "groups", "denied",
                 "preparation_error", "content_hash", "prep_fingerprint", "indexed_at")


class TargetSettings(Section):
    """The ``index`` section of one kind of target: ``kind`` (its registered name) and the kind's own keys. A
    target class declares its subclass as its ``Settings``; the configuration checks the section with it and
    the reference documents it, so a target from another distribution is configured like a built-in one."""

    @property
    def label(self) -> str:
        """The index as messages name it (a path, a URL and an alias)."""
        return self.kind

    def stem(self, base: str) -> str:
        """Where the report and the work folder go when the file does not say: this path plus ``.report.json``
        and ``.work``; ``base`` is the configuration file's folder."""
        return os.path.join(base, f"beamtrawl-{self.kind}")


class IndexTarget(ABC):
    #: The model of its ``index`` section (a :class:`TargetSettings`); :meth:`from_config` takes one.
    Settings: type[TargetSettings]
    #: True if only processes on this machine can write to it (the embedded index).
    local_only = False
    #: Ids per :meth:`delete` call of the delete batch; None: all of them in one call (one transaction).
    delete_batch: int | None = 500

    @abstractmethod
    def prepare(self) -> None:
        """Driver, before the crawl: create or check the schema."""

    @abstractmethod
    def check(self) -> None:
        """Before searching: raise :class:`IndexUnavailable` unless the index exists and is readable."""

    def close(self) -> None:
        """Release connections; the target may be used again afterwards."""

    def place_problem(self, create: bool) -> str:
        """Driver, before a crawl (``create``: making the folders the index needs) and in ``--dry-run`` (not):
        why the index cannot be created or written where the configuration puts it, naming it; "" if it can (a
        server's index is made by :meth:`prepare`)."""
        return ""

    def finish(self, succeeded: bool) -> None:
        """Driver, after the pipeline (also after a failure): release what :meth:`snapshot_splits`
        holds and, if the crawl succeeded, publish what it wrote."""

    def take_staged(self) -> list[str]:
        """Worker, after :meth:`upsert` or :meth:`set_access`: what they wrote that is not visible until the
        driver's :meth:`commit` (the table's Parquet files), and forget it. Others write at once: []."""
        return []

    def commit(self, staged: Sequence[str]) -> None:
        """Driver, after the pipeline succeeded and before the deletes: make visible, in one transaction, what
        the workers' successful bundles staged (their :meth:`take_staged`)."""

    def documents(self) -> Iterator[IndexDoc]:
        """Every document of the index (``beamtrawl export``)."""
        raise IndexUnavailable(f"{type(self).__name__} cannot list its documents")

    def read_state(self) -> dict | None:
        """Driver: the sources' state the last clean crawl stored with the index (pipeline/unchanged.py)."""
        return None

    def write_state(self, state: dict | None) -> None:
        """Driver: store ``state`` with the index, or forget it (None). A target that cannot store it
        keeps :meth:`read_state` answering None, so every crawl runs its pipeline."""

    def record(self, doc_id: str) -> dict | None:
        """What the index keeps of one document but its text, whoever may see it (``beamtrawl explain``: the
        administrator's question "why is this not found?"), or None if it is not there: a dict of
        :data:`RECORD_FIELDS`."""
        raise IndexUnavailable(f"{type(self).__name__} cannot show one document's record")

    def read_owner(self) -> dict | None:
        """Driver, before anything is created: which configuration filled this index (pipeline/owner.py), or
        None (a new index, or a target that does not keep it). Never creates the index."""
        return None

    def write_owner(self, owner: dict) -> None:
        """Driver, once :meth:`prepare` ran: remember the configuration that fills the index."""

    @abstractmethod
    def snapshot_splits(self) -> list[Any]:
        """Driver: picklable descriptions of disjoint parts of the index, to read in parallel."""

    @abstractmethod
    def read_snapshot(self, split: Any) -> Iterator[SnapshotEntry]:
        """Worker: the freshness state of every document in one split."""

    def read_snapshot_batches(self, split: Any) -> Iterator[tuple[str, bytes]]:
        """Worker: :meth:`read_snapshot` in folder batches (transforms/batches.py); a target that can read a
        folder's columns at once (SQLite) makes no record per document."""
        return batches.by_folder(self.read_snapshot(split))

    @abstractmethod
    def upsert(self, docs: Sequence[IndexDoc]) -> list[tuple[str, str]]:
        """Worker: write documents (insert or replace by id); returns (url, reason) of failures."""

    @abstractmethod
    def set_access(self, changes: Sequence[tuple[str, Sequence[str], Sequence[str]]]) -> None:
        """Worker: (id, groups, denied) — change who may see documents, nothing else (a revoked one is
        denied to EVERYONE); raises if the batch could not be written. Ids not in the index are skipped."""

    @abstractmethod
    def delete(self, ids: Sequence[str]) -> None:
        """Worker: remove documents by id; raises if the batch could not be deleted."""

    @abstractmethod
    def search(self, query: Query, limit: int) -> list[Hit]:
        """Best hits first."""

    @abstractmethod
    def count(self) -> int:
        """Documents in the index."""

    def search_page(self, query: Query, limit: int, offset: int = 0, order: str = RELEVANCE,
                    facet_size: int = 10) -> Page:
        """Hits ``offset`` to ``offset + limit`` in ``order``, the number of matches, and the
        ``facet_size`` most frequent values of each of FACET_FIELDS among the matches — all limited to
        what ``query.groups`` may see (``beamtrawl serve``). A target that cannot serve pages says so."""
        raise IndexUnavailable(f"{type(self).__name__} cannot serve search pages")

    def pages_unavailable(self) -> str | None:
        """Why this target cannot serve search pages (``beamtrawl serve`` refuses to start), or None."""
        return None

    def document(self, doc_id: str, groups: Sequence[str]) -> Stored | None:
        """The document with this id if a searcher holding ``groups`` may see it, else None (as for an
        id that is not in the index: the answer tells nothing about documents the searcher may not see)."""
        raise IndexUnavailable(f"{type(self).__name__} cannot open documents")

    def indexed(self, doc_id: str, groups: Sequence[str]) -> Indexed | None:
        """What the index holds of the document with this id, after the same access check as
        :meth:`document` (None for a document the searcher may not see, as for one not in the index)."""
        raise IndexUnavailable(f"{type(self).__name__} cannot show indexed text")
