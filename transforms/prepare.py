"""Prepare: read a new or changed document, sniff its MIME type, route it to its preparator family,
and build the index document.

::

    entries ─► Read (bytes, bounded; MIME by magic) ─► Partition by first preparator ─┬─► html ParDo ─► documents
                                                                                     ├─► text ParDo ─► documents
                                                                                     └─► …   ParDo ─► documents
                                                                              events (read, prepared, failed)

The documents stay one PCollection per family: a Flatten here would make Beam's local runner
finish every preparation before the first write, where written per branch the writes of one worker
overlap the preparation of the other.

Each family is its own ParDo. Inside it the accepting preparators are tried by priority; if all
fail, a substitute document (name, size, date, ``preparation_error``) is indexed instead, as
regain's createSubstituteDocument did. A document larger than ``max_file_size`` is not read beyond
its first bytes and is indexed by metadata only.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.preparators import PreparationError, PreparatorSpec, Prepared, chain_for
from transforms.preparators.mime import SNIFF_BYTES, MimeSniffer
from transforms.progress import Progress, Tally, timed
from transforms.records import Entry, Event, IndexDoc, RawDocument, event
from transforms.sources import settings, source_for
from transforms.urls import extension, file_name, parent_path

EVENTS = "events"


def summarize(content: str, limit: int) -> str:
    """regain's summary: the content cut at the last space before ``limit`` characters, plus '...'."""
    if len(content) <= limit:
        return content
    cut = content.rfind(" ", 0, limit)
    return content[: cut if cut > 0 else limit] + "..."


def make_document(entry, mimetype: str, data: bytes, prepared: Prepared, fingerprint: str,
                  max_summary_length: int, error: str = "") -> IndexDoc:
    stamp = datetime.fromtimestamp(entry.mtime_ns / 1e9, UTC)
    return IndexDoc(
        id=entry.id, url=entry.url, root=entry.root,
        title=" ".join(prepared.title.split()), content=prepared.content,
        summary=prepared.summary or summarize(prepared.content, max_summary_length),
        headlines="\n".join(prepared.headlines), metadata=prepared.metadata,
        mimetype=mimetype, extension=extension(entry.url), filename=file_name(entry.url),
        path=parent_path(entry.url), size=entry.size, mtime_ns=entry.mtime_ns,
        last_modified=stamp.isoformat(timespec="milliseconds"), groups=sorted(entry.groups), preparation_error=error,
        content_hash=hashlib.sha256(data).hexdigest() if data else "",
        etag=entry.etag, http_last_modified=entry.http_last_modified, prep_fingerprint=fingerprint,
        outlinks=list(entry.outlinks), indexed_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


class _Read(beam.DoFn):
    """Bytes of a document (carried by web sources, else read through its source) and its MIME type."""

    def __init__(self, max_file_size: int, source_settings=None):
        self.max_file_size = max_file_size
        self.source_settings = source_settings
        self.us = Metrics.counter("stage_us", "read")

    def setup(self):
        self.sniff = MimeSniffer()
        self.tally = Tally(EVENTS)
        settings.use(self.source_settings)  # logins and source settings for this worker

    def finish_bundle(self):
        yield from self.tally.flush()

    def process(self, entry):
        return timed(self.us, self._read(Entry(*entry)))

    def _read(self, entry):
        oversize = entry.size > self.max_file_size
        data = entry.content
        if data is None:
            try:
                with source_for(entry.url).open_document(entry.url) as stream:
                    data = stream.read(SNIFF_BYTES if oversize else self.max_file_size + 1)
            except OSError as err:  # unreadable or vanished since discovery: the indexed version stays
                yield beam.pvalue.TaggedOutput(EVENTS, event("failed", entry.url, "read",
                                                             err.strerror or str(err)))
                return
            self.tally.count("read")
            if len(data) > self.max_file_size:  # grew since it was listed
                data, oversize = data[:SNIFF_BYTES], True
        if oversize:
            yield beam.pvalue.TaggedOutput(EVENTS, event(
                "oversize", entry.url, "read",
                f"larger than max_file_size ({entry.size} > {self.max_file_size} bytes): indexed by metadata only"))
        yield RawDocument(entry, entry.mimetype or self.sniff(data, entry.url), data, oversize)


class _PrepareFamily(beam.DoFn):
    """Run the preparators accepting each document, by priority, until one succeeds."""

    def __init__(self, family: str, preparators: tuple[PreparatorSpec, ...], fingerprint: str,
                 max_summary_length: int):
        self.family = family
        self.preparators = preparators
        self.fingerprint = fingerprint
        self.max_summary_length = max_summary_length
        self.us = Metrics.counter("stage_us", f"prepare:{family}")

    def setup(self):
        self.progress = Progress(f"documents prepared ({self.family})")
        self.tally = Tally(EVENTS)

    def finish_bundle(self):
        yield from self.tally.flush()

    def process(self, raw):
        self.progress.add()
        return timed(self.us, self._prepare(raw))

    def _prepare(self, raw):
        entry, mimetype, data = raw.entry, raw.mimetype, raw.data
        if raw.oversize:
            yield make_document(entry, mimetype, b"", Prepared(), self.fingerprint, self.max_summary_length)
            return
        errors = []
        for preparator in chain_for(self.preparators, mimetype, entry.url):
            try:
                prepared = preparator(data, entry.url, mimetype)
            except Exception as err:  # noqa: BLE001 - a preparator's failure is the document's, not the crawl's
                errors.append(f"{preparator.name}: {_describe(err)}")
                continue
            yield make_document(entry, mimetype, data, prepared, self.fingerprint, self.max_summary_length)
            self.tally.count("prepared")
            break
        else:
            reason = "; ".join(errors) or f"no preparator accepts {mimetype}"
            yield make_document(entry, mimetype, data, Prepared(), self.fingerprint, self.max_summary_length,
                                error=reason)
            yield beam.pvalue.TaggedOutput(EVENTS, event("failed", entry.url, "prepare", reason))


def _describe(err: Exception) -> str:
    if isinstance(err, PreparationError):
        return str(err)
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


class Prepare(beam.PTransform):
    """Entries to prepare → (index documents, one PCollection per preparator family; events)."""

    def __init__(self, preparators: tuple[PreparatorSpec, ...], fingerprint: str, max_file_size: int,
                 max_summary_length: int, source_settings=None):
        super().__init__()
        self.source_settings = source_settings
        self.preparators = preparators
        self.fingerprint = fingerprint
        self.max_file_size = max_file_size
        self.max_summary_length = max_summary_length

    def expand(self, entries):
        read = entries | "Read" >> beam.ParDo(_Read(self.max_file_size, self.source_settings)
                                              ).with_output_types(RawDocument).with_outputs(EVENTS, main="raw")
        preparators = self.preparators
        families = [p.name for p in preparators] + ["unprepared"]

        def route(raw, _count):
            chain = chain_for(preparators, raw.mimetype, raw.entry.url)
            return preparators.index(chain[0]) if chain else len(preparators)

        parts = read["raw"] | "ByPreparator" >> beam.Partition(route, len(families))
        docs, events = [], [read[EVENTS]]
        for family, part in zip(families, parts):
            out = part | f"Prepare:{family}" >> beam.ParDo(_PrepareFamily(
                family, preparators, self.fingerprint, self.max_summary_length)).with_output_types(
                IndexDoc).with_outputs(EVENTS, main="docs")
            docs.append(out["docs"])
            events.append(out[EVENTS])
        return tuple(docs), tuple(events) | "AllPrepareEvents" >> beam.Flatten().with_output_types(Event)
