"""Reading the index snapshot, writing upserts, and the delete batch that runs last.

::

    splits ─► Reshuffle ─► ReadSplit ─► snapshot entries                    (parallel, per split)
    documents (per branch) ─► BatchElements ─► Upsert ─► events (written, failed)
    delete candidates ─► DeleteLast ─► lines of a file in the work folder
    (driver, after the pipeline and the report) totals ─► delete_guard ─► delete_batches
    access changes ─► BatchElements ─► AccessBatch ─► events (failures only; unguarded)

The guard reads the totals of every event of the pipeline, so no delete runs before all upserts are
done; it withholds all deletes if any upsert failed, if the failed ratio passes ``max_failed_ratio``
or if the deletes would remove more than ``max_delete_ratio`` of the index.

Plugins: ``on_create_index_entry`` runs per document just before its batch is written (it may
replace the document; loaded in the DoFn's ``setup``), ``on_delete_index_entry`` per document just
before its batch is deleted, in the driver (only when the guard lets deletes run).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor, wait

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.utils.windowed_value import WindowedValue
from beamtrawl.plugins.manager import PluginHost
from beamtrawl.transforms import batches
from beamtrawl.transforms.guard import Guard, describe, isolated, stage
from beamtrawl.transforms.index.base import IndexUnavailable, Rejected
from beamtrawl.transforms.progress import Progress, timed
from beamtrawl.transforms.records import Event, IndexDoc, SnapshotEntry, event

_GUARD = Guard("write")  # a document that cannot be written: its report line, and a substitute written instead
BATCH = 500  # documents per upsert call (the OpenSearch target cuts requests at 10 MiB as well)


class ReadSnapshot(beam.PTransform):
    """The index's documents, split by split; ``by_folder``: in folder batches (transforms/batches.py), one
    element per folder of a split, the freshness join's input; ``folders_only``: one ``(folder, b"")`` per folder
    the index holds, no documents (where listings compare in place: transforms/compare.py)."""

    def __init__(self, target, by_folder: bool = False, folders_only: bool = False):
        super().__init__()
        self.target = target
        self.by_folder = by_folder
        self.folders_only = folders_only

    def expand(self, pbegin):
        target = self.target
        if self.folders_only:
            return (pbegin
                    | "Folders" >> beam.Create([None])
                    | "ReadFolders" >> beam.FlatMap(lambda _: target.indexed_folders()).with_output_types(batches.Batch))
        splits = (pbegin
                  | "Splits" >> beam.Create(target.snapshot_splits())
                  | "SpreadSplits" >> beam.Reshuffle())
        if self.by_folder:
            return splits | "ReadSplit" >> beam.FlatMap(target.read_snapshot_batches).with_output_types(batches.Batch)
        return splits | "ReadSplit" >> beam.FlatMap(lambda split: target.read_snapshot(split)
                                                    ).with_output_types(SnapshotEntry)


class _Upsert(beam.DoFn):
    """Writes a batch in a thread of its own while the stages fused before it make the next batch (SQLite and
    the HTTP client wait without the GIL): the write of one batch is awaited when the next arrives or the
    bundle ends, so at most one batch is in flight and its events come out before the bundle is done."""

    def __init__(self, target, plugins: PluginHost | None = None):
        self.target = target
        self.plugins = plugins or PluginHost()
        self.us = Metrics.counter("stage_us", "write")

    def setup(self):
        self.writer = ThreadPoolExecutor(1, thread_name_prefix="beamtrawl-write")
        self.in_flight = None  # (future of the failures, documents, originals, window, timestamp)
        self.progress = Progress("documents written")
        self.plugins.load()

    def start_bundle(self):
        if self.in_flight is not None:  # left by a bundle that failed: its events went with it
            wait([self.in_flight[0]])
            self.in_flight = None

    def process(self, batch, window=beam.DoFn.WindowParam, timestamp=beam.DoFn.TimestampParam):
        return timed(self.us, self._upsert(batch, window, timestamp))

    def finish_bundle(self):
        window, timestamp = self.in_flight[3:] if self.in_flight else (None, None)
        for output in timed(self.us, self._written()):
            yield WindowedValue(output, timestamp, [window])
        self.progress.flush()

    def _upsert(self, batch, window, timestamp):
        originals = {doc.url: IndexDoc(*doc) for doc in batch}
        if not self.plugins:  # Prepare conformed each document, and the coder between cannot change a type
            ready = list(originals.values())
        else:
            ready = []
            for doc in originals.values():  # each under its own guard: one that cannot be written gets a substitute
                ready.extend(isolated(self._entry(doc), doc.url, _GUARD,
                                      substitute=lambda reason, doc=doc: [_substitute(doc, reason)]))
        yield from (e for e in ready if not isinstance(e, IndexDoc))
        docs = [doc for doc in ready if isinstance(doc, IndexDoc)]
        yield from self._written()  # the batch before, written while this one was made
        self.in_flight = (self.writer.submit(self._write, docs), docs, originals, window, timestamp)

    def _written(self):
        """The events of the batch in flight, once written (its rejected documents' substitutes are written
        here, in this thread: they are rare)."""
        if self.in_flight is None:
            return
        future, docs, originals = self.in_flight[:3]
        self.in_flight = None
        failures = future.result()
        rejected = [(url, reason) for url, reason in failures if isinstance(reason, Rejected)]
        if rejected:  # the index refused these documents (not the index failing): their substitutes go in
            for url, reason in rejected:
                yield event("failed", url, "write", reason)
            failures = [f for f in failures if not isinstance(f[1], Rejected)]
            failures += self._write([_substitute(originals[url], reason) for url, reason in rejected])
        for url, reason in failures:
            yield event("failed", url, "write", reason)
        yield from staged_events(self.target)
        if failures:
            yield event("write_failed", count=len(failures))
        yield event("written", count=len(docs) - len(failures))
        self.progress.add(len(docs) - len(failures))

    def _write(self, docs: list[IndexDoc]) -> list[tuple[str, str]]:
        if not docs:
            return []
        try:
            return self.target.upsert(docs)
        except IndexUnavailable:
            raise
        except Exception as err:  # noqa: BLE001 - the index refused the batch: no document of it is written
            return [(doc.url, f"index write failed: {describe(err)}") for doc in docs]

    def _entry(self, doc: IndexDoc):
        """``on_create_index_entry`` (it may replace the document), then the document checked for the index."""
        with stage("plugins"):
            doc = self.plugins.chain("on_create_index_entry", "doc", doc, doc.url, index=self.target)
        yield from self.plugins.problems()
        yield IndexDoc(*doc)  # conformed by ``isolated``: a value of the wrong type fails here, for this document

    def teardown(self):
        self.writer.shutdown()
        self.target.close()


#: The Event kind naming a file a worker staged (``url``: its name) for the driver's commit. Only the
#: outputs of bundles that succeeded reach the driver, so a retried bundle's files are never committed.
STAGED = "staged"


def staged_events(target):
    """Events for what ``target`` staged since the last call (IndexTarget.take_staged)."""
    return [event(STAGED, name, "write") for name in target.take_staged()]


def _substitute(doc: IndexDoc, reason: str) -> IndexDoc:
    """What is left of a document that could not be written: its URL, name, size, date and why."""
    return doc._replace(title="", content="", summary="", headlines="", metadata="", aux=[], furniture="", passages=[], vectors=b"",
                        preparation_error="; ".join(r for r in (doc.preparation_error, reason) if r))


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


class _AccessBatch(beam.DoFn):
    def __init__(self, target):
        self.target = target

    def process(self, batch):
        try:
            self.target.set_access([(entry.id, list(entry.groups), list(entry.denied)) for entry in batch])
        except Exception as err:  # noqa: BLE001 - a document that stays visible is a write failure
            for entry in batch:
                yield event("failed", entry.url, "write", f"could not change who may see it: {err}")
            yield event("write_failed", count=len(batch))
        yield from staged_events(self.target)

    def teardown(self):
        self.target.close()


class UpdateAccess(beam.PTransform):
    """Snapshot entries carrying new groups and denies (revoked ones: denied to EVERYONE) → events.
    Written at once, beside the upserts and not held back by the delete guard: it loses nothing, and a
    reader whose access was withdrawn must not find the document one crawl longer (not even when the
    re-read of a changed document fails). An upsert of the same document writes the same access."""

    def __init__(self, target):
        super().__init__()
        self.target = target

    def expand(self, changes):
        return (changes
                | "BatchAccess" >> beam.BatchElements(min_batch_size=50, max_batch_size=500)
                | "AccessBatch" >> beam.ParDo(_AccessBatch(self.target)).with_output_types(Event))


class SumByKind(beam.CombineFn):
    """Events → {kind: total count}, and {"failed@stage": count} of failures."""

    def create_accumulator(self):
        return {}

    def add_input(self, totals, e):
        totals[e.kind] = totals.get(e.kind, 0) + e.count
        if e.kind == "failed":  # and by stage, for failed_documents
            totals[f"failed@{e.stage}"] = totals.get(f"failed@{e.stage}", 0) + e.count
        return totals

    def merge_accumulators(self, accumulators):
        merged = {}
        for totals in accumulators:
            for kind, n in totals.items():
                merged[kind] = merged.get(kind, 0) + n
        return merged

    def extract_output(self, totals):
        return totals


#: Stages whose failed documents never reach the acceptance count (the freshness join counts "accepted").
_BEFORE_ACCEPTED = ("discover", "access", "freshness")


def failed_documents(totals: dict) -> tuple[int, int]:
    """(documents that failed, documents this crawl considered), each document counted once: a document
    that failed after it was accepted (read, prepare, write) is one of the accepted; one that failed before
    (listing, access control) adds to them. A document with two failures (a substitute that could not be
    written either) still counts once: the failures are capped at the documents."""
    before = sum(totals.get(f"failed@{stage}", 0) for stage in _BEFORE_ACCEPTED)
    documents = totals.get("accepted", 0) + before
    return min(totals.get("failed", 0), documents), documents


def delete_guard(totals: dict, max_failed_ratio: float, max_delete_ratio: float) -> str:
    """Why deletes must not run (one sentence), or "" when they may."""
    failed_writes = totals.get("write_failed", 0)
    if failed_writes:
        return f"{failed_writes} documents could not be written to the index"
    failed, documents = failed_documents(totals)
    if documents and failed / documents > max_failed_ratio:
        return (f"{failed} of the {documents} documents this crawl considered failed ({failed / documents:.1%}; "
                f"considered: the accepted ones and those that failed before they could be), more than "
                f"max_failed_ratio {max_failed_ratio:.1%}")
    deletes = sum(totals.get(kind, 0) for kind in ("vanished", "no_longer_accepted", "no_longer_read"))
    indexed = totals.get("in_index", 0)
    if indexed and deletes / indexed > max_delete_ratio:
        return (f"the crawl would delete {deletes} of {indexed} indexed documents ({deletes / indexed:.1%}), "
                f"more than max_delete_ratio {max_delete_ratio:.1%}")
    return ""


#: The work folder's file of lines (pipeline/graph.py): a line's first character says what the rest is.
PROBLEM_LINE, DELETE_LINE, STAGED_LINE = "p", "d", "s"


class DeleteLast(beam.PTransform):
    """Delete candidates → lines for the work folder (JSON, after :data:`DELETE_LINE`); nothing is deleted in the
    pipeline.

    The driver deletes them with :func:`delete_batches`, the very last step of a crawl: after the
    pipeline, the report files it wrote and the report itself (written first with the list of
    deletes about to run) have all succeeded, and only if :func:`delete_guard` allows. So a crawl that
    fails for any reason (a full or unwritable work folder, a worker or the driver killed, the guard)
    deleted nothing, and the report names every document a crawl deletes."""

    def expand(self, candidates):
        return candidates | "CandidateJson" >> beam.Map(
            lambda entry: DELETE_LINE + json.dumps(entry._asdict())).with_output_types(str)


def read_candidates(lines) -> list[SnapshotEntry]:
    """The JSON of the lines :class:`DeleteLast` made (without their tag), as entries again."""
    return [SnapshotEntry(**json.loads(line)) for line in lines]


def delete_batches(target, entries: list[SnapshotEntry], plugins: PluginHost | None = None) -> list[Event]:
    """Driver: delete ``entries`` in batches (``on_delete_index_entry`` first, for each); the events of
    what was deleted and of batches that failed (those documents stay)."""
    plugins = plugins or PluginHost()
    events: list[Event] = []
    size = target.delete_batch or max(len(entries), 1)
    for start in range(0, len(entries), size):
        batch = entries[start:start + size]
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
