"""Deletes need positive evidence: a document that was not found is deleted only if a listing shows it gone.

::

    listings (what each listing saw) ──────┐
    arrivals (entries that reached the join) ┴► GroupByKey(listing) ─► Verdict ─┬─► by container ─► (complete, children)
                                                                                └─► "listing of … lost in transit"
    vanished ─► Decide (verdicts as a side input) ─┬─► delete
                                                   ├─► kept (counted)
                                                   └─► why ─► one line per container at fault

A listing is complete when as many of its entries reached the freshness join as it saw; a container is
complete when each of its listings is (a web host is listed once in every round that reaches it). A vanished document is judged by the nearest container above it that has a
verdict: deleted if that verdict is complete and none of the containers its listing handed on lies above
the document (else the listing of that one never arrived); kept otherwise. One below a start URL without any
verdict above it is kept too; a web page reached only through links that this crawl did not find again is
deleted as before. So entries lost anywhere between a listing and the join (a runner losing data, a bug of
ours) keep their documents and make the crawl exit 1, instead of deleting them in silence.

Beam's local runner has been seen to lose entries under load (docs/upstream-beam-lost-chunks.md), so the
driver lists the containers these lines name once more, in a second, small pass (:func:`to_list_again`,
pipeline/crawl.py); only what that pass cannot confirm stays incomplete.
"""

from __future__ import annotations

from typing import Any

import apache_beam as beam
from beamtrawl.transforms.guard import Guard, isolated
from beamtrawl.transforms.progress import Tally
from beamtrawl.transforms.records import Event, Listing, SnapshotEntry, event
from beamtrawl.transforms.sources import ancestors
from beamtrawl.transforms.urls import container_key

EVENTS, LINES = "events", "lines"
STAGE = "freshness"
_GUARD = Guard(STAGE, EVENTS)


def to_list_again(problems: list[dict]) -> list[str]:
    """The containers named by this module's report lines (a listing lost in transit, or one that never
    arrived), the topmost of each branch only: what a second pass lists again."""
    named = {container_key(p["url"]): p["url"] for p in problems if p["stage"] == STAGE and p["kind"] == "incomplete"}
    return sorted(url for key, url in named.items()
                  if not any(container_key(a) in named for a in ancestors(key) if container_key(a) != key))


def _verdict(keyed):
    """(listing, its own record and arrival counts) → (container, (complete, children)), and a report line
    when entries were lost; nothing when the listing's own record never arrived (the listing above names
    the container, which keeps its documents)."""
    _listing, records = keyed
    records = [Listing(*r) for r in records]
    own = next((r for r in records if r.listed), None)
    if own is None:
        return
    arrived = sum(r.documents for r in records if not r.listed)
    if arrived != own.documents:
        yield beam.pvalue.TaggedOutput(EVENTS, event(
            "incomplete", own.url, STAGE,
            f"listing of {own.url} lost in transit: {own.documents} seen, {arrived} arrived; nothing in it is deleted"))
    yield own.url, (arrived == own.documents, list(own.children))


def _container(keyed):
    """A container listed once or more (a web host in several rounds): complete only if every listing was."""
    key, verdicts = keyed
    verdicts = list(verdicts)
    return key, (all(complete for complete, _ in verdicts), sorted({c for _, children in verdicts for c in children}))


class _Decide(beam.DoFn):
    def __init__(self, roots: frozenset[str]):
        self.roots = roots

    def setup(self):
        self.tally = Tally(EVENTS)

    def finish_bundle(self):
        yield from self.tally.flush()

    def process(self, old, verdicts):
        old = SnapshotEntry(*old)
        return list(isolated(self._decide(old, verdicts), old.url, _GUARD))

    def _decide(self, old, verdicts):
        above = [container_key(url) for url in ancestors(old.url)][1:]
        on_its_path = set(above)
        for key in above:
            if key not in verdicts:
                continue
            complete, children = verdicts[key]
            missing = next((c for c in children if c in on_its_path), None)
            if complete and missing is None:
                self.tally.count("vanished")
                yield old
                return
            if missing is not None:
                yield from self._kept(missing, f"the listing of {missing} never arrived (listed in {key})")
            else:
                self.tally.count("kept")  # its container's line says why
            return
        root = next((key for key in above if key in self.roots), None)
        if root is None:  # a page reached through links only, none of which was found in this crawl
            self.tally.count("vanished")
            yield old
        else:
            yield from self._kept(root, "no listing of its start URL or of a folder below it arrived")

    def _kept(self, where: str, why: str):
        """Count a kept document; its container's line (made once per container: see CheckListings)."""
        self.tally.count("kept")
        yield beam.pvalue.TaggedOutput(LINES, event("incomplete", where, STAGE, f"{why}; its documents are kept"))


class CheckListings(beam.PTransform):
    """(vanished documents, listings and arrival counts) → (deletes, events). See the module docstring.
    What it groups is keyed by plain strings and pickled (``Any``): a runner in Java (Flink, Spark) cannot
    decode the schemas of Python records it would have to shuffle.
    ``roots``: the containers of the start URLs (a web start URL's is its host), which every crawl lists."""

    def __init__(self, roots: frozenset[str]):
        super().__init__()
        self.roots = roots

    def expand(self, inputs):
        vanished, listings = inputs
        verdicts = (listings
                    | "ByListing" >> beam.Map(lambda r: (r.listing, r)).with_output_types(tuple[str, Any])
                    | "GroupByListing" >> beam.GroupByKey()
                    | "Verdict" >> beam.FlatMap(_verdict).with_output_types(tuple[str, tuple[bool, list[str]]])
                    .with_outputs(EVENTS, main="verdicts"))
        containers = (verdicts["verdicts"]
                      | "GroupByContainer" >> beam.GroupByKey()
                      | "Container" >> beam.Map(_container))
        # its type declared (what Beam would infer): inferring it from _Decide's code took ~0.04 s of every crawl's start
        decided = vanished | "Decide" >> beam.ParDo(_Decide(self.roots), beam.pvalue.AsDict(containers)
                                                    ).with_output_types(Any).with_outputs(EVENTS, LINES, main="deletes")
        lines = (decided[LINES]
                 | "ByLine" >> beam.Map(lambda e: (f"{e.url}\n{e.reason}", e)).with_output_types(tuple[str, Any])
                 | "GroupByLine" >> beam.GroupByKey()
                 | "OneLineEach" >> beam.Map(lambda keyed: Event(*next(iter(keyed[1])))).with_output_types(Event))
        events = (verdicts[EVENTS], decided[EVENTS], lines) | "ListingEvents" >> beam.Flatten()
        return decided["deletes"], events
