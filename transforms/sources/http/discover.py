"""WebDiscover: web start URLs → (entries, events), host by host, in rounds.

::

    snapshot ─► web pages, keyed by host ─────────────┐
    start URLs ─► frontier, keyed by host ─► CoGroupByKey (host) ─► CrawlHost ─┬─► entries (pages)
                                                                               ├─► events
                                                                               ├─► visited URLs ─────┐
                                                                               └─► links to other hosts
                          next round ◄─ DedupeAgainstSeen (every frontier item and visited URL so far) ◄┘

One ``CrawlHost`` call crawls all that a round knows of one host (breadth-first, see
:mod:`transforms.sources.http.crawl`), because politeness (delay, concurrency, Crawl-delay) needs every
request to a host in one place. Rounds exist for links between hosts: a round crawls the hosts the
previous round linked to (one round only when the whitelist allows no other host). A host reached
again in a later round fetches only URLs no round has visited. Links still pending after the last round (``discovery_rounds``) are not fetched and are
marked incomplete, so what they point to is kept in the index.

The snapshot reaches each host by a join on the host rather than as a side input: a worker then holds
only the stored state (ETag, Last-Modified, content hash, outlinks) of the host it crawls, not of the
whole web part of the index; the price is one shuffle of that part per round.
"""

from __future__ import annotations

import time

import apache_beam as beam
from apache_beam.metrics import Metrics
from beamtrawl.transforms.guard import isolated
from beamtrawl.transforms.progress import Progress, Tally
from beamtrawl.transforms.records import Entry, Event, FrontierItem, SnapshotEntry, event
from beamtrawl.transforms.sources import settings
from beamtrawl.transforms.sources.http import SCHEMES
from beamtrawl.transforms.sources.http.crawl import HostCrawl, Visited, host_of, make_fetcher
from beamtrawl.transforms.sources.settings import SourceSettings

ENTRIES, FRONTIER, VISITED, EVENTS = "entries", "frontier", "visited", "events"


def is_web(url: str) -> bool:
    return url.split(":", 1)[0] in SCHEMES


class _CrawlHost(beam.DoFn):
    def __init__(self, config, rules):
        self.config = config
        self.rules = rules
        self.us = Metrics.counter("stage_us", "discover:http")

    def setup(self):
        settings.use(SourceSettings.from_config(self.config))  # logins, as every source gets them
        self.fetcher = make_fetcher(self.config.http)
        self.progress = Progress("web pages found")
        self.tally = Tally(EVENTS)

    def finish_bundle(self):
        yield from self.tally.flush()

    def process(self, keyed):
        host, joined = keyed
        items = [FrontierItem(*i) for i in joined["frontier"]]
        if not items:
            return []
        known = {s.url: SnapshotEntry(*s) for s in joined["indexed"]}
        # A host whose crawl fails half-way keeps its pages found so far and every indexed one (incomplete:
        # ``scheme://host/`` is named on its own, see HostCrawl._host_incomplete).
        def also_root(_reason):
            yield beam.pvalue.TaggedOutput(EVENTS, event("incomplete", host + "/", "discover"))

        return _busy(self.us, isolated(self._route(host, items, known), host, "discover", EVENTS,
                                       kind="incomplete", substitute=also_root, keep_partial=True))

    def _route(self, host, items, known):
        for record in HostCrawl(self.config, self.rules, self.fetcher).run(host, items, known):
            if isinstance(record, Entry):
                self.progress.add()
                yield record
            elif isinstance(record, Visited):
                yield beam.pvalue.TaggedOutput(VISITED, str(record))
            elif isinstance(record, FrontierItem):
                yield beam.pvalue.TaggedOutput(FRONTIER, record)
            elif record.kind == "incomplete" and record.url:  # freshness needs each one, reason or not
                yield beam.pvalue.TaggedOutput(EVENTS, record)
            elif (problem := self.tally(record)) is not None:
                yield problem
        for problem in self.rules.plugin_problems():  # plugins that failed in the accept decision
            yield self.tally(problem)


def _busy(counter, records):
    """Stream a host's records (a large host must not be held in memory, as ``progress.timed`` would),
    adding to ``counter`` only the microseconds spent producing them."""
    started = time.perf_counter()
    for record in records:
        counter.inc(int((time.perf_counter() - started) * 1_000_000))
        yield record
        started = time.perf_counter()
    counter.inc(int((time.perf_counter() - started) * 1_000_000))


def _first_unseen(keyed):
    _url, groups = keyed
    if list(groups["seen"]):
        return
    candidates = sorted(groups["new"], key=lambda item: (item.depth, item.source_url))
    if candidates:
        yield candidates[0]


def _other_hosts_possible(roots, config) -> bool:
    """May a link lead to a host without a start URL? Not when every web whitelist entry is a prefix
    on a start URL's host: then one round crawls everything, and the rounds for links between hosts
    (a join each, seconds on a local runner) are left out of the graph."""
    hosts = {host_of(r.url) for r in roots}
    for entry in config.whitelist:
        if entry.prefix is None:
            return True
        if is_web(entry.prefix) and not (host_of(entry.prefix) in hosts
                                         and entry.prefix.startswith(host_of(entry.prefix) + "/")):
            return True
    return False


class WebDiscover(beam.PTransform):
    """snapshot → (entries, events) for the web start URLs. See the module docstring for the graph."""

    def __init__(self, roots: list[FrontierItem], config, rules):
        super().__init__()
        self.roots = roots
        self.config = config
        self.rules = rules

    def expand(self, snapshot):
        indexed = (snapshot
                   | "WebPages" >> beam.Filter(lambda s: is_web(s.url))
                   | "IndexedByHost" >> beam.Map(lambda s: (host_of(s.url), SnapshotEntry(*s))))
        frontier = snapshot.pipeline | "WebStartUrls" >> beam.Create(self.roots).with_output_types(FrontierItem)
        seen = [frontier | "KeyStarts" >> beam.Map(lambda f: (f.url, 0))]
        entries, events = [], []
        rounds = self.config.discovery_rounds if _other_hosts_possible(self.roots, self.config) else 1
        for n in range(rounds):
            out = (
                {"frontier": frontier | f"ByHost{n}" >> beam.Map(lambda f: (host_of(f.url), FrontierItem(*f))),
                 "indexed": indexed}
                | f"JoinHost{n}" >> beam.CoGroupByKey()
                | f"CrawlHost{n}" >> beam.ParDo(_CrawlHost(self.config, self.rules))
                .with_outputs(FRONTIER, VISITED, EVENTS, main=ENTRIES)
            )
            entries.append(out[ENTRIES])
            events.append(out[EVENTS])
            if n == rounds - 1:  # links no round will follow: keep what they point to
                events.append(out[FRONTIER] | "NotReached" >> beam.Map(
                    lambda f: event("incomplete", f.url, "discover", "")).with_output_types(Event))
                break
            seen.append(out[VISITED] | f"KeyVisited{n}" >> beam.Map(lambda url: (url, 0)))
            frontier = (
                {"new": out[FRONTIER] | f"KeyNew{n}" >> beam.Map(lambda f: (f.url, FrontierItem(*f))),
                 "seen": tuple(seen) | f"Seen{n}" >> beam.Flatten()}
                | f"Dedupe{n}" >> beam.CoGroupByKey()
                | f"FirstUnseen{n}" >> beam.FlatMap(_first_unseen).with_output_types(FrontierItem)
            )
            seen.append(frontier | f"KeyFrontier{n}" >> beam.Map(lambda f: (f.url, 0)))
        entries = tuple(entries) | "AllWebEntries" >> beam.Flatten().with_output_types(Entry)
        events = tuple(events) | "AllWebEvents" >> beam.Flatten().with_output_types(Event)
        return entries, events
