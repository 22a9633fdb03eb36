"""Discover: expand start URLs in rounds until the frontier is empty (an iterative fixpoint).

::

    start URLs ─► Fixpoint(step) ─► entries, events, listings, claims
    each round:  frontier ─► step ─┬─► entries  (documents, one batch per folder: transforms/batches.py)
                                   ├─► claims   (folders compared with the index as listed: transforms/compare.py)
                                   ├─► events   (counts, problems)
                                   ├─► listings (what each container's listing saw: the evidence deletes need)
                                   ├─► visited  (URLs the step dealt with that no round may take again)
                                   └─► frontier ─► DedupeAgainstSeen (every item and visited URL so far) ─► next round
    after the last round, items still in the frontier are not expanded: each is an ``incomplete`` event,
    so what it points to stays in the index.

The step is what differs between sources (:mod:`transforms.sources.base`):

* :class:`ItemStep` — each item by itself (folders, shares, mailbox folders). A step lists up to
  ``walk_budget`` entries and hands the folders it did not reach to the next round, spread over workers by
  the join that de-duplicates them; the last round has no budget, so nothing is left over.
* :class:`HostStep` — sources with the ByHost capability (the web): the round's items keyed by host,
  joined with the index's documents of that host, crawled in one call (politeness needs every request to a
  host in one place). Rounds exist for links between hosts. The snapshot reaches each host by the join,
  not as a side input: a worker holds only the stored state of the host it crawls.

De-duplication is a CoGroupByKey of the new frontier with every identity seen in earlier rounds (never an
in-memory set on one worker); of several new items with one identity the step's ``order`` keeps the first.
Documents found twice (overlapping start URLs, followed symlinks) are collapsed later, by id in the
freshness join and, with ``follow_symlinks``, by (device, inode) in :func:`_smallest_url`.
"""

from __future__ import annotations

from dataclasses import dataclass

import apache_beam as beam
from apache_beam.metrics import Metrics
from beamtrawl.transforms.accept import Rules
from beamtrawl.transforms.batches import MOST, Batch, batch_key, pack, unpack
from beamtrawl.transforms.compare import InPlace, Unchanged
from beamtrawl.transforms.guard import Guard, isolated
from beamtrawl.transforms.progress import Progress, Tally, busy
from beamtrawl.transforms.records import (
    Entry,
    Event,
    FrontierItem,
    Listing,
    SnapshotEntry,
    arrival,
    event,
)
from beamtrawl.transforms.sources import Sources, by_host
from beamtrawl.transforms.sources.settings import SourceSettings
from beamtrawl.transforms.sources.walk import evidenced, item_evidence
from beamtrawl.transforms.urls import host_of

ENTRIES, FRONTIER, VISITED, EVENTS, LISTINGS = Entry.route, FrontierItem.route, "visited", Event.route, Listing.route
CLAIMS = "claims"  # folders compared with the index where they were listed (transforms/compare.py)
OUTPUTS = (ENTRIES, FRONTIER, VISITED, EVENTS, LISTINGS, CLAIMS)
# A listing that fails half-way keeps what it listed; the folder (host) is incomplete, so nothing below goes.
_LISTING = Guard("discover", EVENTS, kind="incomplete", keep_partial=True)


class Fixpoint(beam.PTransform):
    """Start URLs → (entries, events, listings, claims): ``rounds`` rounds of ``step``, each new frontier item
    de-duplicated against everything seen. See the module docstring for the graph."""

    def __init__(self, roots: list[FrontierItem], step, rounds: int):
        super().__init__()
        self.roots, self.step, self.rounds = roots, step, rounds

    def expand(self, pbegin):
        frontier = pbegin | "StartUrls" >> beam.Create(self.roots).with_output_types(FrontierItem)
        seen, entries, events, listings, claims = [frontier | "KeyStarts" >> beam.Map(_key)], [], [], [], []
        for n in range(self.rounds):
            last = n == self.rounds - 1
            out = frontier | f"Expand{n}" >> self.step.round(n, last)
            entries.append(out[ENTRIES])
            events.append(out[EVENTS])
            listings.append(out[LISTINGS])
            claims.append(out[CLAIMS])
            if last:
                events.append(out[FRONTIER] | "NotReached" >> beam.Map(
                    lambda f: event("incomplete", f.url, "discover", "")).with_output_types(Event))
                break
            seen.append(out[VISITED] | f"KeyVisited{n}" >> beam.Map(lambda url: (str(url), 0)))
            frontier = (  # CoGroupByKey pickles values: keep them our own class (see freshness.Freshness)
                {"new": out[FRONTIER] | f"KeyNew{n}" >> beam.Map(lambda f: (f.identity, FrontierItem(*f))),
                 "seen": tuple(seen) | f"Seen{n}" >> beam.Flatten()}
                | f"Dedupe{n}" >> beam.CoGroupByKey()
                | f"FirstUnseen{n}" >> beam.FlatMap(_first_unseen, self.step.order).with_output_types(FrontierItem))
            seen.append(frontier | f"KeyFrontier{n}" >> beam.Map(_key))
        return (tuple(entries) | "AllEntries" >> beam.Flatten().with_output_types(Batch),
                tuple(events) | "AllEvents" >> beam.Flatten().with_output_types(Event),
                tuple(listings) | "AllListings" >> beam.Flatten().with_output_types(Listing),
                tuple(claims) | "AllClaims" >> beam.Flatten().with_output_types(Batch))


def _key(item) -> tuple[str, int]:
    return item.identity, 0


def _first_unseen(keyed, order):
    """Keep one frontier item per identity (the first by ``order``), and none if an earlier round had it."""
    _identity, groups = keyed
    if list(groups["seen"]):
        return
    candidates = sorted(groups["new"], key=order)
    if candidates:
        yield candidates[0]


@dataclass(frozen=True)
class DiscoverOptions:
    """What discovery takes from the crawl configuration, built once (:meth:`from_config`) and handed to
    its steps whole."""

    rules: Rules  # the accept decision (whitelist, blacklist, depth, plugins)
    sources: SourceSettings  # logins and per-protocol settings the sources are made with on workers
    rounds: int  # discovery_rounds
    follow_symlinks: bool
    walk_budget: int  # folder entries one step lists before handing sub-folders on
    in_place: InPlace | None = None  # listings compare their folders with the index (transforms/compare.py)

    @classmethod
    def from_config(cls, config, rules: Rules, in_place: InPlace | None = None) -> DiscoverOptions:
        return cls(rules, SourceSettings.from_config(config), config.discovery_rounds, config.follow_symlinks,
                   config.walk_budget, in_place)


class _Expand(beam.DoFn):
    """What both steps share: sources made from the crawl's settings, records routed by their ``route``."""

    def __init__(self, options: DiscoverOptions, stage: str, found: str):
        self.settings = options.sources
        self.rules = options.rules
        self.found = found
        self.in_place = options.in_place
        self.us = Metrics.counter("stage_us", stage)

    def setup(self):
        self.sources = Sources(self.settings)  # logins and settings held by each source, no module state
        self.progress = Progress(self.found)
        self.tally = Tally(EVENTS)

    def finish_bundle(self):
        self.progress.flush()
        yield from self.tally.flush()

    def _route(self, records):
        """Each record to its output; entries gathered in folder batches (transforms/batches.py): a folder's
        entries come one after the other, so a batch is handed on when the next entry's folder differs, when it
        holds MOST, when the folder's listing evidence comes (compared in place then, where the crawl does:
        :meth:`_hand_on`, with the files the listing found unchanged, held), and when the listing ends or fails."""
        key, batch, held = None, [], None
        try:
            for record in records:
                if record.route == ENTRIES:
                    self.progress.add()
                    folder = batch_key(record.url)
                    if held is not None:  # a folder's unchanged files come after its entries: no evidence came
                        yield from _batches(held.key, held.entries())
                        held = None
                    if batch and (folder != key or len(batch) >= MOST):
                        yield beam.pvalue.TaggedOutput(ENTRIES, (key, pack(batch)))
                        batch = []
                    key = folder
                    batch.append(record)  # conformed where it leaves the freshness join changed or new
                    continue
                if record.route == Unchanged.route:
                    self.progress.add(len(record.urls))
                    if held is not None:
                        yield from _batches(held.key, held.entries())
                    if batch and key != record.key:
                        yield beam.pvalue.TaggedOutput(ENTRIES, (key, pack(batch)))
                        batch = []
                    held = record
                    continue
                if (batch or held) and record.route == LISTINGS:
                    yield from self._hand_on(key if batch else held.key, batch, record, held)
                    batch, held = [], None
                if record.route != EVENTS:
                    yield beam.pvalue.TaggedOutput(record.route, record)
                elif record.kind == "incomplete" and record.url:  # freshness needs each one, reason or not
                    yield beam.pvalue.TaggedOutput(EVENTS, record)
                elif (problem := self.tally(record)) is not None:
                    yield problem
        except Exception:
            if batch:  # what was listed before the failure stays found (the guard keeps partial outputs)
                yield beam.pvalue.TaggedOutput(ENTRIES, (key, pack(batch)))
            if held is not None:
                yield from _batches(held.key, held.entries())
            raise
        if batch:
            yield beam.pvalue.TaggedOutput(ENTRIES, (key, pack(batch)))
        if held is not None:
            yield from _batches(held.key, held.entries())
        for problem in self.rules.plugin_problems():  # plugins that failed in the accept decision
            yield self.tally(problem)

    def _hand_on(self, key: str, batch: list, listing: Listing, held: Unchanged | None):
        """A folder's batch, followed by its listing's evidence ``listing``: its unchanged entries (and ``held``,
        those the listing found unchanged itself) kept back and claimed, where this crawl compares in place and
        the batch is the whole listing (transforms/compare.py); else every entry handed on."""
        if self.in_place is not None:
            batch, claim = self.in_place.claim(key, batch, listing, held)
            if claim is not None:
                yield beam.pvalue.TaggedOutput(CLAIMS, (key, claim))
        elif held is not None:
            batch = batch + held.entries()
        yield from _batches(key, batch)


def _batches(key: str, entries: list):
    """``entries`` of folder ``key`` as batches of at most MOST."""
    for start in range(0, len(entries), MOST):
        yield beam.pvalue.TaggedOutput(ENTRIES, (key, pack(entries[start:start + MOST])))


class _ExpandItem(_Expand):
    def __init__(self, options: DiscoverOptions, budget: int | None):
        super().__init__(options, "discover", "documents found")
        self.follow_symlinks = options.follow_symlinks
        self.budget = budget

    def process(self, item):
        item = FrontierItem(*item)  # workers decode rows into generated classes; routing needs ours
        source = self.sources(item.url)
        compared = {"in_place": self.in_place} if self.in_place and getattr(source, "compares_listed", False) else {}
        records = item_evidence(item.url, source.expand(item, self.rules, self.follow_symlinks, self.budget,
                                                        **compared))
        return busy(self.us, isolated(self._route(records), item.url, _LISTING))


class ItemStep:
    """One round of item-by-item sources: each frontier item listed to ``walk_budget`` (no budget last)."""

    def __init__(self, options: DiscoverOptions):
        self.options = options

    @staticmethod
    def order(item):
        return item.url

    def round(self, _n: int, last: bool) -> beam.PTransform:
        # no Reshuffle needed: the de-duplication join already spread the frontier
        return beam.ParDo(_ExpandItem(self.options, None if last else self.options.walk_budget)
                          ).with_outputs(*OUTPUTS)


class _ExpandHost(_Expand):
    def __init__(self, options: DiscoverOptions):
        super().__init__(options, "discover:hosts", "web pages found")

    def process(self, keyed):
        host, joined = keyed
        items = [FrontierItem(*i) for i in joined["frontier"]]
        if not items:
            return []
        known = {s.url: SnapshotEntry(*s) for s in joined["indexed"]}
        records = evidenced(host, self.sources(host).expand_host(host, items, known, self.rules), tuple)

        # A host whose crawl fails half-way keeps its pages found so far and every indexed one (incomplete:
        # ``scheme://host/`` is named on its own, see HostCrawl._host_incomplete).
        def also_root(_reason):
            yield beam.pvalue.TaggedOutput(EVENTS, event("incomplete", host + "/", "discover"))

        return busy(self.us, isolated(self._route(records), host, _LISTING, substitute=also_root))


class _HostRound(beam.PTransform):
    def __init__(self, options: DiscoverOptions, indexed):
        super().__init__()
        self.options, self.indexed = options, indexed

    def expand(self, frontier):
        return ({"frontier": frontier | "ByHost" >> beam.Map(lambda f: (host_of(f.url), FrontierItem(*f))),
                 "indexed": self.indexed}
                | "JoinHost" >> beam.CoGroupByKey()
                | "CrawlHost" >> beam.ParDo(_ExpandHost(self.options)).with_outputs(*OUTPUTS))


class HostStep:
    """One round of ByHost sources: a round's items grouped by host with the host's indexed documents."""

    def __init__(self, options: DiscoverOptions, indexed):
        self.options, self.indexed = options, indexed

    @staticmethod
    def order(item):
        return item.depth, item.source_url

    def round(self, _n: int, _last: bool) -> beam.PTransform:
        return _HostRound(self.options, self.indexed)


def _smallest_url(keyed):
    """With followed symlinks one file may appear under several URLs: keep the smallest URL (as a batch of
    its own). The others arrived all the same, as far as their listings' evidence goes."""
    _identity, entries = keyed
    ordered = sorted(entries, key=lambda e: e.url)
    yield batch_key(ordered[0].url), pack([tuple(ordered[0])])
    for duplicate in ordered[1:]:
        yield beam.pvalue.TaggedOutput(EVENTS, event("duplicate", duplicate.url, "discover",
                                                     f"same file as {ordered[0].url}"))
        if duplicate.listing:
            yield beam.pvalue.TaggedOutput(LISTINGS, arrival(duplicate.listing))


class Discover(beam.PTransform):
    """Start URLs of item-by-item sources → (entries in folder batches, events, listings, claims). See the
    module docstring for the graph."""

    def __init__(self, roots: list[FrontierItem], options: DiscoverOptions):
        super().__init__()
        self.roots, self.options = roots, options

    def expand(self, pbegin):
        entries, events, listings, claims = pbegin | "Rounds" >> Fixpoint(self.roots, ItemStep(self.options),
                                                                          self.options.rounds)
        if not self.options.follow_symlinks:
            return entries, events, listings, claims
        unique = (entries
                  | "EachEntry" >> beam.FlatMap(unpack, Entry).with_output_types(Entry)
                  | "ByFile" >> beam.Map(lambda e: (e.identity, e)).with_output_types(tuple[str, Entry])
                  | "GroupByFile" >> beam.GroupByKey()
                  | "SmallestUrl" >> beam.FlatMap(_smallest_url).with_output_types(Batch)
                  .with_outputs(EVENTS, LISTINGS, main=ENTRIES))
        return (unique[ENTRIES],
                (events, unique[EVENTS]) | "WithDuplicates" >> beam.Flatten().with_output_types(Event),
                (listings, unique[LISTINGS]) | "WithDuplicateArrivals" >> beam.Flatten().with_output_types(Listing),
                claims)


def other_hosts_possible(roots, whitelist) -> bool:
    """May a link lead to a host without a start URL? Not when every whitelist entry of a ByHost scheme is a
    prefix on a start URL's host: then one round crawls everything, and the rounds for links between hosts
    (a join each, seconds on a local runner) are left out of the graph."""
    hosts = {host_of(r.url) for r in roots}
    for entry in whitelist:
        if entry.prefix is None:
            return True
        if by_host(entry.prefix) and not (host_of(entry.prefix) in hosts
                                          and entry.prefix.startswith(host_of(entry.prefix) + "/")):
            return True
    return False


class DiscoverByHost(beam.PTransform):
    """snapshot (in folder batches) → (entries, events, listings, claims: none) for the start URLs of ByHost
    sources (the web)."""

    def __init__(self, roots: list[FrontierItem], options: DiscoverOptions):
        super().__init__()
        self.roots, self.options = roots, options
        self.rounds = options.rounds if other_hosts_possible(roots, options.rules.whitelist) else 1

    def expand(self, snapshot):
        indexed = (snapshot  # folder batches (transforms/batches.py): a web page's is its own
                   | "ByHostPages" >> beam.FlatMap(lambda b: unpack(b, SnapshotEntry) if by_host(b[0]) else ()
                                                   ).with_output_types(SnapshotEntry)
                   | "IndexedByHost" >> beam.Map(lambda s: (host_of(s.url), SnapshotEntry(*s))))
        step = HostStep(self.options, indexed)
        return snapshot.pipeline | "Rounds" >> Fixpoint(self.roots, step, self.rounds)
