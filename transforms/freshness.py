"""Freshness: what this crawl found, joined with what the index holds, decides each document's fate.

::

    entries  (by id) ──┐
    snapshot (by id) ──┴► CoGroupByKey ─► Classify ─┬─► new, changed        ─► Prepare
          incomplete subtrees (side input) ─────────┤
                                                    ├─► vanished, rejected  ─► delete batch (last)
                                                    └─► events (new, changed, unchanged, kept, …)

Unchanged means the same size, the same ``mtime_ns`` (nanoseconds, not regain's days), the same
preparation fingerprint and the same access groups: such a document is neither read nor written.
A document in the index that was not found is deleted only if the rules no longer accept it, or if
every folder above it was listed completely in this crawl; otherwise it is kept and counted.
"""

from __future__ import annotations

import apache_beam as beam

from transforms.guard import isolated
from transforms.progress import Tally
from transforms.records import Entry, SnapshotEntry

PREPARE, DELETE, EVENTS = "prepare", "delete", "events"


def _ancestors(url: str):
    """``url`` and every URL above it, by path segments."""
    while True:
        yield url
        if url.startswith(("imap:", "imaps:")) and ";" in url.rsplit("/", 1)[-1]:
            yield url[:url.rfind(";")]  # imap://h/Folder;UIDVALIDITY=n lies in imap://h/Folder
        cut = url.rstrip("/").rfind("/")
        if cut <= url.find("://") + 2:
            if not url.endswith("/"):
                yield url + "/"  # the server itself, as a start URL spells it (smb://host/)
            return
        url = url[:cut]


class _Classify(beam.DoFn):
    def __init__(self, rules, fingerprint: str):
        self.rules = rules
        self.fingerprint = fingerprint
        self._incomplete = None
        self._incomplete_source = None

    def setup(self):
        self.tally = Tally(EVENTS)

    def finish_bundle(self):
        yield from self.tally.flush()

    def process(self, keyed, incomplete):
        urls = [e.url for e in keyed[1]["found"]] or [s.url for s in keyed[1]["indexed"]] or [""]
        return list(isolated(self._classify(keyed, incomplete), min(urls), "freshness", EVENTS))

    def _classify(self, keyed, incomplete):
        if incomplete is not self._incomplete_source:  # side inputs are fixed per window: cache the set
            self._incomplete_source = incomplete
            self._incomplete = set(incomplete)
        _id, joined = keyed
        found = sorted(joined["found"], key=lambda e: e.url)
        indexed = list(joined["indexed"])
        if indexed:
            self.tally.count("in_index", len(indexed))
        if found:
            self.tally.count("accepted")
            entry = Entry(*found[0])
            if len(found) > 1:  # overlapping start URLs found it twice
                self.tally.count("duplicate", len(found) - 1)
            old = indexed[0] if indexed else None
            if old is None:
                self.tally.count("new")
                yield entry
            elif (old.size, old.mtime_ns, old.prep_fingerprint, sorted(old.groups)) != (
                    entry.size, entry.mtime_ns, self.fingerprint, sorted(entry.groups)):
                self.tally.count("changed")
                yield entry
            else:
                self.tally.count("unchanged")
            return
        for old in indexed:
            if not self.rules.keeps(old.url):
                self.tally.count("no_longer_accepted")
            elif any(url in self._incomplete for url in _ancestors(old.url)):
                self.tally.count("kept")
                continue
            else:
                self.tally.count("vanished")
            yield beam.pvalue.TaggedOutput(DELETE, SnapshotEntry(*old))


class Freshness(beam.PTransform):
    """(entries, snapshot, incomplete subtree URLs) → (to_prepare, to_delete, events)."""

    def __init__(self, rules, fingerprint: str):
        super().__init__()
        self.rules = rules
        self.fingerprint = fingerprint

    def expand(self, inputs):
        entries, snapshot, incomplete = inputs
        # CoGroupByKey pickles its values: our own classes pickle by reference, while Beam's generated
        # row classes would be re-created for every element.
        out = (
            {"found": entries | "KeyFound" >> beam.Map(lambda e: (e.id, Entry(*e))),
             "indexed": snapshot | "KeyIndexed" >> beam.Map(lambda s: (s.id, SnapshotEntry(*s)))}
            | "JoinById" >> beam.CoGroupByKey()
            | "Classify" >> beam.ParDo(_Classify(self.rules, self.fingerprint),
                                       incomplete=beam.pvalue.AsList(incomplete))
            .with_output_types(Entry).with_outputs(DELETE, EVENTS, main=PREPARE)
        )
        return out[PREPARE], out[DELETE], out[EVENTS]
