"""Freshness: what this crawl found, joined with what the index holds, decides each document's fate.

::

    entries  (folder batches) ──┐
    snapshot (folder batches) ──┤
    claims   (compared in place)┴► CoGroupByKey ─► Classify ─┬─► new, changed        ─► Prepare
          incomplete subtrees (side input) ──────────────────┤
          access-denied subtrees (side input) ───────────────┼─► access changed, revoked ─► access batch (at once)
                                                             ├─► rejected            ─► delete batch (last)
                                                             ├─► vanished ─► CheckListings (+ listings) ─► delete batch
                                                             └─► events (new, changed, unchanged, kept, …)

Both sides come in folder batches (transforms/batches.py): one element per folder, not per document, so an
unchanged file is counted inside the folder's element and crosses no stage of its own (docs/scaling.md). Where
the listings compare a folder with its indexed documents themselves (transforms/compare.py), an unchanged file
does not reach the join at all: a listing's claim brings the folder's count of unchanged documents and the indexed
ones it did not find, and the snapshot is only the folders the index holds; one that nothing claimed (vanished,
or its listing failed) is read from the index here and judged as before.
Unchanged means the same size, the same ``mtime_ns`` (nanoseconds, not regain's days), the same ETag where an
object store's listing gives one, the same preparation fingerprint and the same access groups and denies: such a document is neither read nor
written. A document in the index that was not found is deleted only if the rules no longer accept
it, or if every folder above it was listed completely in this crawl, its root (the start URL it was found
under) was crawled completely and the evidence of its folder's listing arrived whole
(transforms/listings.py); otherwise it is kept and counted.

Access fails closed on evidence (DESIGN.md, invariant 7): an indexed document at or below a URL a
source reports as ACCESS_DENIED (a share or folder that answers "access denied", a file whose ACL the
crawler is denied or that lets no one read), or found with ``denied`` holding EVERYONE, is *revoked*:
hidden from every searcher by an update that no delete guard holds back, since hiding loses nothing
(the next crawl that may read it re-indexes it). Such a document that is not in the index yet is not
indexed. A server that is down is no evidence: its subtree is only incomplete, its documents stay.
A changed document whose groups or denies changed gets its new access by the same update at once,
so a reader left out is not let in by the old version while it is re-read (or if the re-read fails).
"""

from __future__ import annotations

from collections import Counter

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue
from beamtrawl.transforms import batches
from beamtrawl.transforms.batches import URL
from beamtrawl.transforms.compare import claimed, common
from beamtrawl.transforms.guard import Guard, isolated
from beamtrawl.transforms.listings import CheckListings
from beamtrawl.transforms.progress import Progress, Tally
from beamtrawl.transforms.records import EVERYONE, Entry, Listing, SnapshotEntry, arrival, event
from beamtrawl.transforms.sources import ancestors, by_host
from beamtrawl.transforms.urls import container_key, host_of

PREPARE, DELETE, ACCESS, EVENTS, VANISHED, ARRIVED = "prepare", "delete", "access", "events", "vanished", "arrived"
CLAIMED = "claimed"  # the join's input of claims (transforms/compare.py)
_GUARD = Guard("freshness", EVENTS)


def _kept(old: SnapshotEntry, incomplete: set[str]) -> bool:
    """Is a document that was not found kept? Yes when a container above it was not listed completely, or
    when its root was not crawled completely (a start URL that failed, a host that could not be reached):
    then what was not found says nothing, whatever else the crawl holds (a page on another host, reached
    only through that root, is not found either)."""
    return any(url in incomplete for url in ancestors(old.url)) or (
        bool(old.root) and any(url in incomplete for url in ancestors(old.root)))


def _etag_changed(entry: Entry, old: SnapshotEntry) -> bool:
    """Did the ETag a listing gave change (an object store's: a rewrite within the same second and size
    changes it)? An entry carrying its bytes (a web page) is judged by them, not by its headers."""
    return entry.content is None and entry.etag != old.etag


class _Classify(beam.DoFn):
    def __init__(self, rules, fingerprint: str, reprepare: bool = False, index=None):
        self.rules = rules
        self.fingerprint = fingerprint
        self.reprepare = reprepare
        self.index = index  # listings compared in place: a folder nothing claimed is read from it
        self._incomplete = self._denied = None
        self._incomplete_source = self._denied_source = None

    def setup(self):
        self.tally = Tally(EVENTS)
        # For the command's progress bar (pipeline/progress.py): once documents are compared, discovery is
        # over, and these two tell how many of those found will be prepared.
        self.compared = Progress("documents compared with the index")
        self.queued = Progress("documents to prepare")
        self.arrived: Counter = Counter()  # entries that reached the join, by the listing that yielded them

    def finish_bundle(self):
        yield from self.tally.flush()
        self.compared.flush()
        self.queued.flush()
        for listing, n in self.arrived.items():
            yield beam.pvalue.TaggedOutput(ARRIVED, WindowedValue(arrival(listing, n), MIN_TIMESTAMP, [GlobalWindow()]))
        self.arrived.clear()

    def process(self, keyed, incomplete, denied):
        """One folder: its batches of entries found and of documents indexed (transforms/batches.py), and the
        claims of listings that compared it in place (transforms/compare.py). The common case (found once,
        indexed once, nothing changed) is compared field by field and only counted, for the folder at once;
        every other document is classified by itself."""
        key, joined = keyed
        found = batches.Columns(joined["found"])
        indexed, claims = self._indexed(key, joined)
        split = None
        if found.regular and indexed.regular and found.n and indexed.n and not self.reprepare:
            split = self._unchanged(found, indexed)
        if split is None:
            rest, left = found.rows(), indexed.rows()
        else:
            rest, left, listings = split
            self._count_unchanged(Counter(listings))
        by_id: dict[str, list] = {}
        for entry in rest:
            by_id.setdefault(entry[0], []).append(entry)
        olds: dict[str, list] = {}
        for old in left:
            if not (claims and old[0] in olds):  # two claims may leave one document twice: it is one row
                olds.setdefault(old[0], []).append(old)
        outputs = []
        for doc_id, entries in by_id.items():
            outputs += self._one(doc_id, entries, olds.pop(doc_id, []), incomplete, denied)
        for doc_id, olds_of_id in olds.items():
            outputs += self._one(doc_id, [], olds_of_id, incomplete, denied)
        return self._claimed_twice(key, outputs) if len(claims) > 1 else outputs

    def _indexed(self, key: str, joined) -> tuple[batches.Columns, list]:
        """The folder's indexed documents to judge, and its claims: what the claims left (their common
        documents are counted here, with their listings' arrivals: a claim lost in transit leaves its listing
        short), else, where listings compare in place and nothing claimed the folder, the folder's documents
        read from the index (``indexed`` then only says that it holds some), else the snapshot's batches."""
        claims = [claimed(blob) for blob in joined.get(CLAIMED, ())]
        for listing, n, _left in claims:
            self._count_unchanged(Counter({listing: n}))
        if claims:
            return batches.Columns([left for _listing, _n, left in claims if left]), claims
        if self.index is None:
            return batches.Columns(joined["indexed"]), claims
        rows = self.index.folder_rows(key) if any(True for _ in joined["indexed"]) else []
        return batches.Columns([batches.pack(rows)] if rows else []), claims

    def _claimed_twice(self, key: str, outputs: list) -> list:
        """A folder two listings compared in place (transforms/compare.py rules it out): what one of them did
        not find may be what the other found unchanged, so nothing of it is deleted as vanished; its line names
        it, and the driver lists it again."""
        kept = [o for o in outputs if isinstance(o, beam.pvalue.TaggedOutput) and o.tag == VANISHED]
        self.tally.count("kept", len(kept))
        return [o for o in outputs if o not in kept] + [beam.pvalue.TaggedOutput(EVENTS, event(
            "incomplete", key, "freshness", "compared with the index by two listings; nothing in it is deleted"))]

    def _unchanged(self, found: batches.Columns, indexed: batches.Columns):
        """Which entries are the common case, compared on the columns: found once, indexed once, nothing
        changed (what :meth:`_classify` decides, on the records' fields). Returns the other entries and
        indexed documents as rows and the common ones' listings, or None. Entries reach the join as their
        source made them: a malformed one (a third party's source) goes the general path, which conforms what
        it hands on and reports a failure as that document's."""
        try:
            return common(found, indexed, self.fingerprint)
        except Exception:  # noqa: BLE001 - a value no comparison takes (a third party's): all the general path
            return None

    def _count_unchanged(self, listings: Counter) -> None:
        """Count the unchanged documents of one folder, ``listings`` how many each listing found."""
        n = sum(listings.values())
        if n:
            self.tally.count("in_index", n)
            self.tally.count("accepted", n)
            self.tally.count("unchanged", n)
            self.compared.add(n)
            for listing, count in listings.items():
                if listing:
                    self.arrived[listing] += count

    def _one(self, doc_id: str, found: list[tuple], indexed: list[tuple], incomplete, denied) -> list:
        urls = [e[URL] for e in found] or [s[URL] for s in indexed] or [""]
        return list(isolated(self._classify((doc_id, {"found": found, "indexed": indexed}), incomplete, denied),
                             min(urls, key=str), _GUARD))

    def _classify(self, keyed, incomplete, denied):
        if incomplete is not self._incomplete_source:  # side inputs are fixed per window: cache the set
            self._incomplete_source = incomplete
            self._incomplete = set(incomplete)
        if denied is not self._denied_source:
            self._denied_source = denied
            self._denied = set(denied)
        _id, joined = keyed
        found = sorted((Entry._make(e) for e in joined["found"]), key=lambda e: e.url)
        indexed = [SnapshotEntry._make(s) for s in joined["indexed"]]
        if indexed:
            self.tally.count("in_index", len(indexed))
        if found:
            self.tally.count("accepted")
            self.compared.add(len(found))
            entry = Entry(*found[0])
            for listing in {e.listing for e in found if e.listing}:  # found twice: by two listings
                self.arrived[listing] += 1
            if len(found) > 1:  # overlapping start URLs found it twice
                self.tally.count("duplicate", len(found) - 1)
            old = indexed[0] if indexed else None
            if EVERYONE in entry.denied:  # evidence that no searcher we know of may read it now
                if old is not None:
                    yield from self._revoke(old)
                return
            if old is None:
                self.tally.count("new")
                self.queued.add()
                yield entry
            elif self.reprepare or _etag_changed(entry, old) or (
                    old.size, old.mtime_ns, old.prep_fingerprint, sorted(old.groups), sorted(old.denied)) != (
                    entry.size, entry.mtime_ns, self.fingerprint, sorted(entry.groups), sorted(entry.denied)):
                self.tally.count("changed")
                self.queued.add()
                yield entry._replace(in_index=True)
                if (sorted(old.groups), sorted(old.denied)) != (sorted(entry.groups), sorted(entry.denied)):
                    yield beam.pvalue.TaggedOutput(ACCESS, SnapshotEntry(*old)._replace(
                        groups=sorted(entry.groups), denied=sorted(entry.denied)))
            else:
                self.tally.count("unchanged")
            return
        for old in indexed:
            if any(url in self._denied for url in ancestors(old.url)):
                yield from self._revoke(old)
                continue
            if not self.rules.keeps(old.url, old.root):
                self.tally.count("no_longer_accepted")
            elif _kept(old, self._incomplete):
                self.tally.count("kept")
                continue
            else:  # deleted only on the evidence of its listing (transforms/listings.py)
                yield beam.pvalue.TaggedOutput(VANISHED, SnapshotEntry(*old))
                continue
            yield beam.pvalue.TaggedOutput(DELETE, SnapshotEntry(*old))

    def _revoke(self, old):
        """Hide an indexed document from every searcher (once: a hidden one stays as it is)."""
        if EVERYONE in old.denied:
            self.tally.count("unchanged")
            return
        self.tally.count("revoked")
        yield beam.pvalue.TaggedOutput(ACCESS, SnapshotEntry(*old)._replace(denied=[EVERYONE]))


class Freshness(beam.PTransform):
    """(entries and snapshot in folder batches, incomplete subtree URLs, access-denied subtree URLs, listings[,
    claims]) → (to_prepare, to_delete, access changes, events). With claims (listings that compared in place,
    transforms/compare.py) the snapshot is the folders the index holds, one ``(folder, b"")`` each."""

    def __init__(self, rules, fingerprint: str, reprepare: bool = False, roots: frozenset[str] | None = None,
                 index=None):
        """``reprepare``: every indexed document found is changed (``crawl --reprepare``). ``roots``: the
        containers this crawl lists from the top (default: its start URLs'; a second pass: what it lists again).
        ``index``: the target, where listings compared in place (a folder nothing claimed is read from it)."""
        super().__init__()
        self.rules = rules
        self.fingerprint = fingerprint
        self.reprepare = reprepare
        self.roots = roots
        self.index = index

    def expand(self, inputs):
        entries, snapshot, incomplete, denied, listings, *claims = inputs
        # Both sides come in folder batches of plain tuples (transforms/batches.py), keyed by the folder.
        joined = {"found": entries, "indexed": snapshot, **({CLAIMED: claims[0]} if claims else {})}
        out = (
            joined
            | "JoinByFolder" >> beam.CoGroupByKey()
            | "Classify" >> beam.ParDo(_Classify(self.rules, self.fingerprint, self.reprepare, self.index),
                                       incomplete=beam.pvalue.AsList(incomplete),
                                       denied=beam.pvalue.AsList(denied))
            .with_output_types(Entry).with_outputs(DELETE, ACCESS, EVENTS, VANISHED, ARRIVED, main=PREPARE)
        )
        roots = self.roots or frozenset(container_key(host_of(s.url) if by_host(s.url) else s.url)
                                        for s in self.rules.seeds())
        evidence = (listings, out[ARRIVED]) | "ListingsAndArrivals" >> beam.Flatten().with_output_types(Listing)
        vanished, checked = (out[VANISHED], evidence) | "CheckListings" >> CheckListings(roots)
        deletes = (out[DELETE], vanished) | "AllDeletes" >> beam.Flatten().with_output_types(SnapshotEntry)
        events = (out[EVENTS], checked) | "AllEvents" >> beam.Flatten()
        return out[PREPARE], deletes, out[ACCESS], events
