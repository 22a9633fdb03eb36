"""A folder's entries compared with its indexed documents where the folder is listed (issue 27, target 1).

::

    listing of folder F (complete, every entry in one batch)
        ─► the index's documents of F (one look-up: ``folder_rows``)
        ─► common (found once, indexed once, nothing changed): counted in the claim, never handed on
        ─┬─► the other entries           (key F) ─► the freshness join's "found"
         └─► claim: listing, how many common, the documents of F not common (key F) ─► its "claimed"
    index ─► indexed folders (key F, nothing else) ─► the join's "indexed": a folder nothing claimed is read
                                                       there and judged as before (vanished, under a vanished
                                                       folder, or whose listing failed)

An unchanged file then crosses no stage at all: neither its entry nor its indexed row leaves the listing, and
the snapshot is one element per folder with no rows in it (docs/scaling.md). Only the common case is decided
here, by the very comparison the join makes (:func:`common`); everything else goes the way it went.

A local folder's listing (transforms/sources/file.py) goes further: before it stats the folder's files it reads
the seven columns the comparison needs of the folder's documents and decides, by that same comparison, which
of them would be unchanged at their indexed size and ``mtime_ns`` (:class:`Known`). A file whose stat then
matches becomes no entry at all: the folder's :class:`Unchanged` counts it, and the claim is made from the
folder's other entries and the documents not found, exactly as from every entry; where the folder cannot be
claimed after all, its unchanged files are made into entries then and go on with the others.

Why nothing is lost:

* A claim is made only where the listing's own evidence (its :class:`~beamtrawl.transforms.records.Listing`
  record) follows a batch holding exactly that listing's entries, all of container F: a folder listed whole,
  found once. A listing that fails, a folder of more than MOST entries to hand on, or a source whose entries
  lie elsewhere than the container it lists claims nothing, and its folder is judged from the index by the join.
* The common entries' arrivals at the join travel in the claim and are counted where the claim arrives: a
  claim lost in transit leaves its listing short, so its folder is incomplete and nothing in it is deleted
  (transforms/listings.py), as with entries lost in transit. ``BEAMTRAWL_FAULT_DROP_CLAIMS`` (transforms/faults.py)
  loses claims on purpose; a folder whose entries ``BEAMTRAWL_FAULT_DROP_ENTRIES`` would drop is not claimed,
  so that fault still drops its entries.
* Two claims of one folder (which the conditions of :func:`possible` rule out) keep every document of it that
  was not found, with a report line, and its folder is listed again.

Where it applies (:func:`possible`): a target that answers ``folder_rows`` on the workers (the embedded index,
which only the local runner's workers on the same disk use), item-by-item sources, start URLs that do not
overlap, no ``follow_symlinks`` (entries are de-duplicated by file after the listing), no ``access_control``
(groups are assigned after the listing), no ``--reprepare``, a crawl's first pass. Elsewhere the join gets both
sides whole, as before.
"""

from __future__ import annotations

import pickle
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from beamtrawl.transforms import batches
from beamtrawl.transforms.records import Entry, SnapshotEntry
from beamtrawl.transforms.sources import by_host
from beamtrawl.transforms.urls import container_key, is_under

_SIZE, _MTIME, _CONTENT, _ETAG, _GROUPS, _DENIED, _LISTING = (
    Entry._fields.index(f) for f in ("size", "mtime_ns", "content", "etag", "groups", "denied", "listing"))
_OLD_SIZE, _OLD_MTIME, _OLD_FINGERPRINT, _OLD_ETAG, _OLD_GROUPS, _OLD_DENIED = (
    SnapshotEntry._fields.index(f) for f in ("size", "mtime_ns", "prep_fingerprint", "etag", "groups", "denied"))
_COMPARED = (0, _OLD_SIZE, _OLD_MTIME, _OLD_FINGERPRINT, _OLD_ETAG, _OLD_GROUPS, _OLD_DENIED)  # what matched() reads


@dataclass(frozen=True)
class InPlace:
    """What a listing needs to compare in place: the index (pickled with the DoFn, opened on the worker), the
    preparation fingerprint, and the URLs a fault injected for the tests will drop (not compared)."""

    index: object
    fingerprint: str
    spared: str | None = None  # a regular expression (BEAMTRAWL_FAULT_DROP_ENTRIES), or None

    def known(self, key: str, template: tuple) -> Known | None:
        """Folder ``key``'s indexed documents, for a listing that compares its files as it stats them
        (:class:`Known`; ``template``: an entry as that listing makes them, of any id, size and time), or None
        where it does not apply: a fault will drop entries (which must then travel), or the index cannot be read."""
        if self.spared:
            return None
        try:
            return Known(self.index, key, template, self.fingerprint)
        except Exception:  # noqa: BLE001 - an index that cannot be read here: the listing hands every entry on
            return None

    def claim(self, key: str, batch: list, listing, held: Unchanged | None = None) -> tuple[list, bytes | None]:
        """``batch`` (a listing's entries of folder ``key``, as records) and ``held`` (those it found unchanged
        as it listed them, not made into records) compared with the folder's indexed documents: (the entries to
        hand on, the claim's blob), or (every entry, ``held``'s made now, None) where it does not apply (see the
        module docstring): the listing ``listing`` (its own record) did not yield exactly these entries of
        container ``key``, a fault will drop one of them, or the index cannot be read."""
        unchanged = len(held.urls) if held is not None else 0
        if not (listing.listed and listing.url == key and listing.documents == len(batch) + unchanged
                and (held is None or (held.key == key and held.listing == listing.listing))
                and all(e.listing == listing.listing for e in batch)
                and len({e.url for e in batch}) == len(batch)):
            return _every(batch, held), None
        if self.spared and any(re.search(self.spared, e.url) for e in batch):
            return _every(batch, held), None
        try:
            indexed = held.known.left() if held is not None else self.index.folder_rows(key)
            rest, left, listings = common(Rows(batch), Rows(indexed), self.fingerprint)
        except Exception:  # noqa: BLE001 - an index that cannot be read here, or a value no comparison takes: the join judges
            return _every(batch, held), None
        return rest, pickle.dumps((listing.listing, len(listings) + unchanged, batches.pack(left) if left else b""),
                                  pickle.HIGHEST_PROTOCOL)


def _every(batch: list, held: Unchanged | None) -> list:
    """A folder's entries, with those its listing held back as unchanged made now: it is not claimed."""
    return batch + held.entries() if held is not None else batch


class Known:
    """A folder's indexed documents as its listing meets them: for each document :func:`common` would call
    unchanged if the listing found it with the very size and ``mtime_ns`` it has (found as ``template`` says,
    the listing's other fields), those two; so a file whose stat matches is unchanged without an entry made
    of it (:meth:`found`). What the comparison of the whole folder decides, decided per document ahead, on
    the fields it compares (the rest of a row is read only for the documents not found: :meth:`left`)."""

    def __init__(self, index, key: str, template: tuple, fingerprint: str):
        self._index, self._key = index, key
        indexed = Picked(index.folder_rows(key, _COMPARED), _COMPARED)
        _same, _rest, taken = matched(AsFound(indexed, template), indexed, fingerprint)
        ids, sizes, mtimes = indexed.field(0), indexed.field(_OLD_SIZE), indexed.field(_OLD_MTIME)
        self._stats = {ids[j]: (sizes[j], mtimes[j]) for j in taken}
        self._n = indexed.n
        self._taken: set[str] = set()

    def found(self, doc_id: str, size: int, mtime_ns: int) -> bool:
        """Is document ``doc_id``, listed with this size and time, unchanged (and so taken from the rows
        :meth:`left`)? A listing asks once per file."""
        hit = self._stats.get(doc_id)
        if hit is None or hit[0] != size or hit[1] != mtime_ns or doc_id in self._taken:
            return False
        self._taken.add(doc_id)
        return True

    def left(self) -> list:
        """The indexed documents not found unchanged, as rows."""
        if len(self._taken) == self._n:
            return []
        return [row for row in self._index.folder_rows(self._key) if row[0] not in self._taken]


class AsFound:
    """Indexed documents (``indexed``) as the entries a listing would make of them unchanged: ``template``'s
    fields, with each document's id, size and ``mtime_ns`` (columns as :class:`Rows` gives them, for
    :func:`matched`)."""

    regular = True

    def __init__(self, indexed, template: tuple):
        self._indexed, self._template, self.n = indexed, template, indexed.n

    def field(self, k: int) -> list:
        own = {0: 0, _SIZE: _OLD_SIZE, _MTIME: _OLD_MTIME}.get(k)
        return self._indexed.field(own) if own is not None else [self._template[k]] * self.n


@dataclass
class Unchanged:
    """What a listing of folder ``key`` found unchanged as it listed it (:class:`Known`), handed to
    :meth:`InPlace.claim` with the folder's other entries instead of an entry each; ``make(url, stat)``
    makes one's entry where the folder cannot be claimed after all. A listing's records pass it on; it never
    leaves the step."""

    key: str
    known: Known
    make: Callable  # (url, stat) -> Entry
    urls: list
    stats: list
    listing: str = ""

    route = "unchanged"

    def listed_by(self, listing: str) -> Unchanged:
        self.listing = listing
        return self

    def entries(self) -> list:
        """Each unchanged file's entry, marked as its listing's."""
        return [self.make(url, st).listed_by(self.listing) for url, st in zip(self.urls, self.stats)]


def claimed(blob: bytes) -> tuple[str, int, bytes]:
    """A claim's (listing, how many of its entries were common, blob of the indexed documents not common)."""
    listing, n, left = pickle.loads(blob)
    return str(listing), int(n), bytes(left)


class Rows:
    """Records as :class:`~beamtrawl.transforms.batches.Columns` reads them (``n``, ``field``, ``row``, ``rows``),
    for a comparison of records at hand."""

    regular = True

    def __init__(self, rows: list):
        self._rows = rows
        self.n = len(rows)

    def field(self, k: int) -> list:
        return [row[k] for row in self._rows]

    def row(self, i: int) -> tuple:
        return tuple(self._rows[i])

    def rows(self) -> list[tuple]:
        return [tuple(row) for row in self._rows]


class Picked(Rows):
    """Rows of only some fields (``fields``: their positions in a SnapshotEntry), read by those positions."""

    def __init__(self, rows: list, fields: tuple[int, ...]):
        super().__init__(rows)
        self._at = {k: i for i, k in enumerate(fields)}

    def field(self, k: int) -> list:
        i = self._at[k]
        return [row[i] for row in self._rows]


def common(found, indexed, fingerprint: str) -> tuple[list, list, list]:
    """Which entries of a folder are the common case (:func:`matched`). Returns the other entries and indexed
    documents as rows, and the common ones' listings. ``found``, ``indexed``: :class:`Rows` or
    :class:`~beamtrawl.transforms.batches.Columns`."""
    same, rest, taken = matched(found, indexed, fingerprint)
    left = [indexed.row(j) for j in range(indexed.n) if j not in taken] if taken else indexed.rows()
    listings = found.field(_LISTING)
    return [found.row(i) for i in rest], left, [listings[i] for i in same]


def matched(found, indexed, fingerprint: str) -> tuple[list, list, set]:
    """The common case, compared on the columns: found once, indexed once, the same size, ``mtime_ns``, ETag
    (where the entry carries no bytes), preparation fingerprint, groups and no denies (what the freshness join's
    per-document decision calls unchanged). Returns the positions of the common entries, of the others, and
    of the common ones' indexed documents."""
    ids, sizes, mtimes, contents, etags, groups, denied, listings = (
        found.field(k) for k in (0, _SIZE, _MTIME, _CONTENT, _ETAG, _GROUPS, _DENIED, _LISTING))
    old_ids = indexed.field(0)
    olds = dict(zip(old_ids, range(indexed.n)))
    apart = repeated(ids) | (repeated(old_ids) if len(olds) < indexed.n else set())
    old_sizes, old_mtimes, fingerprints, old_etags, old_groups, old_denied = (
        indexed.field(k) for k in (_OLD_SIZE, _OLD_MTIME, _OLD_FINGERPRINT, _OLD_ETAG, _OLD_GROUPS, _OLD_DENIED))
    same, rest, taken = [], [], set()
    for i, doc_id in enumerate(ids):
        j = olds.get(doc_id)
        if (j is None or doc_id in apart or sizes[i] != old_sizes[j] or mtimes[i] != old_mtimes[j]
                or fingerprints[j] != fingerprint or denied[i] or old_denied[j] or type(listings[i]) is not str
                or (contents[i] is None and etags[i] != old_etags[j])
                or (groups[i] != old_groups[j] and differ(groups[i], old_groups[j]))):
            rest.append(i)
        else:
            same.append(i)
            taken.add(j)
    return same, rest, taken


def differ(groups, old_groups) -> bool:
    """Do two lists of groups differ (a value that is no list, from a third party's source, differs)?"""
    try:
        return list(groups) != list(old_groups)
    except Exception:  # noqa: BLE001 - see above
        return True


def repeated(ids: list[str]) -> set[str]:
    """The ids that ``ids`` holds more than once."""
    if len(set(ids)) == len(ids):
        return set()
    return {doc_id for doc_id, n in Counter(ids).items() if n > 1}


def possible(config, target, roots: list, again: bool) -> bool:
    """Can this crawl's listings compare in place (see the module docstring)? ``roots``: its frontier's start."""
    if (again or config.follow_symlinks or config.access_control or config.reprepare
            or not callable(getattr(target, "folder_rows", None)) or not roots):
        return False
    keys = [container_key(r.url) for r in roots]
    if any(by_host(r.url) for r in roots) or len(set(keys)) < len(keys):
        return False
    return not any(a != b and is_under(b, a) for a in keys for b in keys)  # no listing lists another's folders
