"""Reading the index snapshot, writing upserts, and the delete batch that runs last.

::

    splits ─► Reshuffle ─► ReadSplit ─► snapshot entries                    (parallel, per split)
    documents (per branch) ─► BatchElements ─► Upsert ─► events (written, failed)
    delete candidates ─► DeleteLast ─► a file in the work folder
    (driver, after the pipeline and the report) totals ─► delete_guard ─► delete_batches

The guard reads the totals of every event of the pipeline, so no delete runs before all upserts are
done; it withholds all deletes if any upsert failed, if the failed ratio passes ``max_failed_ratio``
or if the deletes would remove more than ``max_delete_ratio`` of the index.

Plugins: ``on_create_index_entry`` runs per document just before its batch is written (it may
replace the document; loaded in the DoFn's ``setup``), ``on_delete_index_entry`` per document just
before its batch is deleted, in the driver (only when the guard lets deletes run).
"""

from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.metrics import Metrics

from plugins.manager import PluginHost
from transforms.progress import Progress, timed
from transforms.records import Event, IndexDoc, SnapshotEntry, event

BATCH = 500  # documents per upsert call (the OpenSearch target cuts requests at 10 MiB as well)


class ReadSnapshot(beam.PTransform):
    def __init__(self, target):
        super().__init__()
        self.target = target

    def expand(self, pbegin):
        target = self.target
        return (
            pbegin
            | "Splits" >> beam.Create(target.snapshot_splits())
            | "SpreadSplits" >> beam.Reshuffle()
            | "ReadSplit" >> beam.FlatMap(lambda split: target.read_snapshot(split)).with_output_types(SnapshotEntry)
        )


class _Upsert(beam.DoFn):
    def __init__(self, target, plugins: PluginHost | None = None):
        self.target = target
        self.plugins = plugins or PluginHost()
        self.us = Metrics.counter("stage_us", "write")

    def setup(self):
        self.progress = Progress("documents written")
        self.plugins.load()

    def process(self, batch):
        return timed(self.us, self._upsert(batch))

    def _upsert(self, batch):
        if self.plugins:
            batch = [self.plugins.chain("on_create_index_entry", "doc", IndexDoc(*doc), doc.url, index=self.target)
                     for doc in batch]
            yield from self.plugins.problems()
        failures = self.target.upsert(batch)
        for url, reason in failures:
            yield event("failed", url, "write", reason)
        if failures:
            yield event("write_failed", count=len(failures))
        yield event("written", count=len(batch) - len(failures))
        self.progress.add(len(batch) - len(failures))

    def teardown(self):
        self.target.close()


class WriteIndex(beam.PTransform):
    """Branches of index documents → events. Each branch is written where it was made (no Flatten
    first, which would hold all writes back until every branch is done). Upserts overwrite by id, so
    a retried batch duplicates nothing."""

    def __init__(self, target, plugins: PluginHost | None = None):
        super().__init__()
        self.target = target
        self.plugins = plugins

    def expand(self, branches):
        events = [
            docs
            | f"Batch{n}" >> beam.BatchElements(min_batch_size=BATCH, max_batch_size=BATCH)
            | f"Upsert{n}" >> beam.ParDo(_Upsert(self.target, self.plugins)).with_output_types(Event)
            for n, docs in enumerate(branches)
        ]
        return tuple(events) | "WriteEvents" >> beam.Flatten().with_output_types(Event)


class SumByKind(beam.CombineFn):
    """Events → {kind: total count}."""

    def create_accumulator(self):
        return {}

    def add_input(self, totals, e):
        totals[e.kind] = totals.get(e.kind, 0) + e.count
        return totals

    def merge_accumulators(self, accumulators):
        merged = {}
        for totals in accumulators:
            for kind, n in totals.items():
                merged[kind] = merged.get(kind, 0) + n
        return merged

    def extract_output(self, totals):
        return totals


def delete_guard(totals: dict, max_failed_ratio: float, max_delete_ratio: float) -> str:
    """Why deletes must not run (one sentence), or "" when they may."""
    failed_writes = totals.get("write_failed", 0)
    if failed_writes:
        return f"{failed_writes} documents could not be written to the index"
    failed = totals.get("failed", 0)
    documents = totals.get("accepted", 0) + failed
    if documents and failed / documents > max_failed_ratio:
        return (f"{failed} of {documents} documents failed ({failed / documents:.1%}), more than "
                f"max_failed_ratio {max_failed_ratio:.1%}")
    deletes = totals.get("vanished", 0) + totals.get("no_longer_accepted", 0)
    indexed = totals.get("in_index", 0)
    if indexed and deletes / indexed > max_delete_ratio:
        return (f"the crawl would delete {deletes} of {indexed} indexed documents ({deletes / indexed:.1%}), "
                f"more than max_delete_ratio {max_delete_ratio:.1%}")
    return ""


class DeleteLast(beam.PTransform):
    """Delete candidates → a file in the work folder (JSON lines); nothing is deleted in the pipeline.

    The driver deletes them with :func:`delete_batches`, the very last step of a crawl: after the
    pipeline, the report files it wrote and the report itself (written first with the list of
    deletes about to run) have all succeeded, and only if :func:`delete_guard` allows. So a crawl that
    fails for any reason (a full or unwritable work folder, a worker or the driver killed, the guard)
    deleted nothing, and the report names every document a crawl deletes."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def expand(self, candidates):
        return (candidates
                | "CandidateJson" >> beam.Map(lambda entry: json.dumps(entry._asdict())).with_output_types(str)
                | "WriteCandidates" >> beam.io.WriteToText(self.path))


def read_candidates(lines) -> list[SnapshotEntry]:
    """The JSON lines :class:`DeleteLast` wrote, as entries again."""
    return [SnapshotEntry(**json.loads(line)) for line in lines]


def delete_batches(target, entries: list[SnapshotEntry], plugins: PluginHost | None = None) -> list[Event]:
    """Driver: delete ``entries`` in batches (``on_delete_index_entry`` first, for each); the events of
    what was deleted and of batches that failed (those documents stay)."""
    plugins = plugins or PluginHost()
    events: list[Event] = []
    for start in range(0, len(entries), BATCH):
        batch = entries[start:start + BATCH]
        for entry in batch:
            plugins.call("on_delete_index_entry", entry.url, doc=entry, index=target)
        events.extend(plugins.problems())
        try:
            target.delete([entry.id for entry in batch])
        except Exception as err:  # noqa: BLE001 - the documents stay; the report says why
            events.extend(event("failed", entry.url, "delete", f"delete failed: {err}") for entry in batch)
            continue
        events.append(event("deleted", count=len(batch)))
    return events
