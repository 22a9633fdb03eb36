"""Discover: expand start URLs in rounds until the frontier is empty (an iterative fixpoint).

::

    start URLs ─► round 0 ─► round 1 ─► … ─► round N-1 (no budget: walks what is left)
    each round:  frontier ─► Expand (list to a budget) ─┬─► entries (documents)
                                                        ├─► events  (counts, problems)
                                                        └─► folders ─► DedupeAgainstSeen ─► next frontier

Expansion spreads over workers: a step lists up to ``walk_budget`` entries and hands the folders
it did not reach to the next round, spread over workers by the join that de-duplicates them: a
CoGroupByKey of the new frontier with every identity seen in earlier rounds (never an in-memory set
on one worker).
Documents found twice (overlapping start URLs, followed symlinks) are collapsed later, by id in
the freshness join and, with ``follow_symlinks``, by (device, inode) in :func:`_smallest_url`.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics
from beamtrawl.transforms.guard import isolated
from beamtrawl.transforms.progress import Progress, Tally, timed
from beamtrawl.transforms.records import Entry, Event, FrontierItem, event
from beamtrawl.transforms.sources import settings, source_for

ENTRIES, FOLDERS, EVENTS = "entries", "folders", "events"


class _Expand(beam.DoFn):
    """List one frontier item to a budget; route records by type."""

    def __init__(self, rules, follow_symlinks: bool, budget: int | None, source_settings=None):
        self.rules = rules
        self.follow_symlinks = follow_symlinks
        self.budget = budget
        self.source_settings = source_settings
        self.us = Metrics.counter("stage_us", "discover")

    def setup(self):
        self.progress = Progress("documents found")
        self.tally = Tally(EVENTS)
        settings.use(self.source_settings)  # logins and source settings for this worker

    def process(self, item):
        item = FrontierItem(*item)  # workers decode rows into generated classes; routing needs ours
        # A listing that fails half-way keeps what it listed; the folder is incomplete, so nothing below goes.
        return timed(self.us, isolated(self._route(item), item.url, "discover", EVENTS, kind="incomplete",
                                       keep_partial=True))

    def _route(self, item):
        for record in source_for(item.url).expand(item, self.rules, self.follow_symlinks, self.budget):
            if isinstance(record, Entry):
                self.progress.add()
                yield beam.pvalue.TaggedOutput(ENTRIES, record)
            elif isinstance(record, FrontierItem):
                yield beam.pvalue.TaggedOutput(FOLDERS, record)
            elif (problem := self.tally(record)) is not None:
                yield problem
        for problem in self.rules.plugin_problems():  # plugins that failed in the accept decision
            yield self.tally(problem)

    def finish_bundle(self):
        yield from self.tally.flush()


def _first_unseen(keyed):
    """Keep one frontier item per identity, and none if an earlier round already had it."""
    _identity, groups = keyed
    if list(groups["seen"]):
        return
    candidates = sorted(groups["new"], key=lambda item: item.url)
    if candidates:
        yield candidates[0]


class _DedupeAgainstSeen(beam.PTransform):
    def __init__(self, seen):
        super().__init__()
        self.seen = seen

    def expand(self, folders):
        return (
            # CoGroupByKey pickles values: keep them our own class (see freshness.Freshness).
            {"new": folders | "KeyNew" >> beam.Map(lambda f: (f.identity, FrontierItem(*f))),
             "seen": self.seen | "KeySeen" >> beam.Map(lambda f: (f.identity, 0))}
            | "Join" >> beam.CoGroupByKey()
            | "FirstUnseen" >> beam.FlatMap(_first_unseen).with_output_types(FrontierItem)
        )


def _smallest_url(keyed):
    """With followed symlinks one file may appear under several URLs: keep the smallest URL."""
    _identity, entries = keyed
    ordered = sorted(entries, key=lambda e: e.url)
    yield ordered[0]
    for duplicate in ordered[1:]:
        yield beam.pvalue.TaggedOutput(EVENTS, event("duplicate", duplicate.url, "discover",
                                                     f"same file as {ordered[0].url}"))


class Discover(beam.PTransform):
    """Start URLs → (entries, events). See the module docstring for the graph."""

    def __init__(self, roots: list[FrontierItem], rules, follow_symlinks: bool, walk_budget: int,
                 rounds: int, source_settings=None):
        super().__init__()
        self.source_settings = source_settings
        self.roots = roots
        self.rules = rules
        self.follow_symlinks = follow_symlinks
        self.walk_budget = walk_budget
        self.rounds = rounds

    def expand(self, pbegin):
        frontier = pbegin | "StartUrls" >> beam.Create(self.roots).with_output_types(FrontierItem)
        seen, entries, events = [frontier], [], []
        for n in range(self.rounds):
            last = n == self.rounds - 1
            out = (  # no Reshuffle needed: the de-duplication join already spread the frontier
                frontier
                | f"Expand{n}" >> beam.ParDo(
                    _Expand(self.rules, self.follow_symlinks, None if last else self.walk_budget,
                            self.source_settings)
                ).with_outputs(ENTRIES, FOLDERS, EVENTS)  # tagged outputs hold our own classes: pickled
            )
            entries.append(out[ENTRIES])
            events.append(out[EVENTS])
            if last:
                break
            frontier = out[FOLDERS] | f"Dedupe{n}" >> _DedupeAgainstSeen(
                seen[0] if len(seen) == 1 else
                tuple(seen) | f"Seen{n}" >> beam.Flatten().with_output_types(FrontierItem))
            seen.append(frontier)
        entries = tuple(entries) | "AllEntries" >> beam.Flatten().with_output_types(Entry)
        if self.follow_symlinks:
            unique = (entries
                      | "ByFile" >> beam.Map(lambda e: (e.identity, e)).with_output_types(tuple[str, Entry])
                      | "GroupByFile" >> beam.GroupByKey()
                      | "SmallestUrl" >> beam.FlatMap(_smallest_url).with_output_types(Entry)
                      .with_outputs(EVENTS, main=ENTRIES))
            entries = unique[ENTRIES]
            events.append(unique[EVENTS])
        events = tuple(events) | "AllEvents" >> beam.Flatten().with_output_types(Event)
        return entries, events
