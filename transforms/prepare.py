"""Prepare: read a new or changed document, sniff its MIME type, run its preparators and build the index
document.

::

    entries ─► Read (bytes, bounded; MIME by magic) ─► Partition by media type ─┬─► text ParDo ────────► documents
                                                                               ├─► application ParDo ─► documents
                                                                               ├─► image ParDo ───────► documents
                                                                               └─► other ParDo ───────► documents
                                                                        events (read, prepared, failed)

The partition is by the MIME type's top level (``text``, ``application``, ``image``, the rest), each
branch a ParDo that runs each document's own chain: the branches differ in cost by orders of magnitude
(a text file takes microseconds, a picture's OCR seconds), and each is batched and written apart, so
that one worker's writes of cheap documents overlap the other's slow ones. A branch per preparator
family (forty, each batched and written apart) made a crawl's graph some two hundred ParDos, paid for
in building and translating the graph and in every worker's bundle processors before the first
document, and cut every worker's writes into a batch per family (issue 27).

The accepting preparators are tried by priority; if all
fail, a substitute document (name, size, date, ``preparation_error``) is indexed instead, as
regain's createSubstituteDocument did. A document of a type no preparator reads is *unsupported*: the
catch-all ``metadata_only`` indexes it by name (counted, not a failure), or, switched off, no document
is made (counted as ``skipped_unread``) and one the index holds from before goes to the delete
candidates (``no_longer_read``), so switching the catch-all off leaves the index as a first crawl would. A document larger than ``max_file_size`` is not read beyond
its first bytes and is indexed by metadata only. Every document with a line in the report (failed,
oversize, truncated, fallback, metadata only) carries it in ``preparation_error``, so a searcher sees
why a document is thin. The preparators run in child processes
under a hard time and memory bound (``preparators.isolation``; one pool of children per worker
process, shared by the families); the text kept is cut at
``max_content_length`` characters.

Each document is handled under ``guard.isolated``: an exception while reading it, sniffing its type,
running the plugins or building its index document is one report line with that stage, and the document
a substitute (regain's createSubstituteDocument), whatever the other documents of the bundle do.

Plugins' ``on_before_prepare`` runs for each preparator the child tried, in the order tried, and
``on_after_prepare`` for the one that succeeded (it may replace the result); both run in the worker
when it collects the child's result, loaded in ``setup`` of the DoFn. Auxiliary fields are
computed in :func:`make_document`.
"""

from __future__ import annotations

import hashlib
import mimetypes
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.utils.shared import Shared
from apache_beam.utils.windowed_value import WindowedValue
from beamtrawl.plugins.manager import PluginHost
from beamtrawl.transforms.enrich.auxfields import aux_values
from beamtrawl.transforms.guard import Guard, isolated, stage
from beamtrawl.transforms.preparators import PreparatorSpec, Prepared
from beamtrawl.transforms.preparators.base import checked
from beamtrawl.transforms.preparators.chain import Chooser
from beamtrawl.transforms.preparators.isolation import DEFAULT_BOUNDS, MAX_IN_FLIGHT, Bounds, runner_for
from beamtrawl.transforms.preparators.mime import SNIFF_BYTES, MimeSniffer
from beamtrawl.transforms.preparators.ocr import PAGES_FIELD as OCR_PAGES_FIELD
from beamtrawl.transforms.progress import Progress, Tally, timed
from beamtrawl.transforms.records import (
    BY_TYPE,
    AuxValue,
    Entry,
    Event,
    IndexDoc,
    RawDocument,
    SnapshotEntry,
    event,
)
from beamtrawl.transforms.sources import Sources
from beamtrawl.transforms.sources.base import ReadsAhead, capable
from beamtrawl.transforms.urls import file_name, name_extension, parent_path

EVENTS, DELETE = "events", "delete"
UNKNOWN_TYPE = "application/octet-stream"  # of a document whose bytes or type could not be had
_READING, _PREPARING = Guard("read", EVENTS), Guard("prepare", EVENTS)
_HELD_BYTES = 64 * 1024**2  # listed bytes of the documents a worker's bundle reads ahead, at most


def summarize(content: str, limit: int) -> str:
    """regain's summary: the content cut at the last space before ``limit`` characters, plus '...'."""
    if len(content) <= limit:
        return content
    cut = content.rfind(" ", 0, limit)
    return content[: cut if cut > 0 else limit] + "..."


@dataclass(frozen=True)
class PrepareOptions:
    """What the preparation of a document takes from the crawl configuration, built once
    (:meth:`from_config`) and handed to the stage's DoFns whole."""

    preparators: tuple[PreparatorSpec, ...]  # by configuration order; a document's chain: chain_for
    fingerprint: str  # the preparation fingerprint every document carries (pipeline/crawl.py)
    max_file_size: int  # larger documents are read only to sniff their type, and indexed by metadata
    max_summary_length: int
    bounds: Bounds = DEFAULT_BOUNDS  # time, memory and text bounds of the preparing processes
    aux_fields: tuple = ()  # transforms.enrich.auxfields.AuxFieldSpec

    @classmethod
    def from_config(cls, config, preparators: tuple[PreparatorSpec, ...], fingerprint: str) -> PrepareOptions:
        return cls(preparators, fingerprint, config.max_file_size, config.max_summary_length, config.preparation,
                   config.auxiliary_fields)


def make_document(raw: RawDocument, prepared: Prepared, options: PrepareOptions, error: str = "") -> IndexDoc:
    """The index document of ``raw`` as ``prepared`` (empty for a substitute or a metadata-only document),
    with the reason it is thin, if any, as its ``preparation_error``."""
    with stage("auxiliary fields"):
        aux = aux_values(options.aux_fields, raw.entry.url)
    with stage("document"):
        return _document(raw, prepared, error, aux, options)


def _document(raw: RawDocument, prepared: Prepared, error: str, aux: list, options: PrepareOptions) -> IndexDoc:
    entry, data = raw.entry, raw.data
    stamp = datetime.fromtimestamp(entry.mtime_ns / 1e9, UTC)
    name = entry.name or file_name(entry.url)
    return IndexDoc(
        id=entry.id, url=entry.url, root=entry.root,
        title=" ".join(prepared.title.split()), content=prepared.content,
        summary=prepared.summary or summarize(prepared.content, options.max_summary_length),
        headlines="\n".join(prepared.headlines), metadata=prepared.metadata,
        mimetype=raw.mimetype, extension=name_extension(name), filename=name,
        path=parent_path(entry.url), size=entry.size, mtime_ns=entry.mtime_ns,
        last_modified=stamp.isoformat(timespec="milliseconds"), groups=sorted(entry.groups), preparation_error=error,
        content_hash=hashlib.sha256(data).hexdigest() if data else "",
        etag=entry.etag, http_last_modified=entry.http_last_modified, prep_fingerprint=options.fingerprint,
        outlinks=list(entry.outlinks), indexed_at=datetime.now(UTC).isoformat(timespec="seconds"),
        # a preparator's additional fields (regain's getAdditionalFields) are stored and returned with hits
        aux=[*aux, *(AuxValue(*field) for field in entry.fields),
             *(AuxValue(name, value, True, False, False) for name, value in sorted(prepared.fields.items()))],
        denied=sorted(entry.denied), furniture=prepared.furniture,
    )


def _ocr_pages(prepared: Prepared) -> int:
    """How many pages or images of the document tesseract read (or the OCR cache held): the report's count."""
    try:
        return int(prepared.fields.get(OCR_PAGES_FIELD, 0))
    except (TypeError, ValueError):  # a plugin's or third-party preparator's field of that name
        return 0


class _Read(beam.DoFn):
    """Bytes of a document (carried by web sources, else read through its source) and its MIME type.

    A source whose reads wait on a network (an object store: its :class:`~beamtrawl.transforms.sources.base.ReadsAhead`
    capability) is read ahead: up to its ``reads_ahead()`` documents of a bundle are fetched at once by a small
    pool of threads, while the bundle's thread sniffs and hands on the ones whose bytes are in, in the order they
    came. What is held is bounded by count and by the listed sizes (``_HELD_BYTES``; one document is always
    allowed); a failure is the document's own report line, as when read alone. Other sources read in the
    bundle's thread, one document after the other."""

    def __init__(self, max_file_size: int, source_settings=None):
        self.max_file_size = max_file_size
        self.source_settings = source_settings
        self.us = Metrics.counter("stage_us", "read")

    def setup(self):
        self.sniff = MimeSniffer()
        self.tally = Tally(EVENTS)
        self.sources = Sources(self.source_settings)  # logins and settings held by each source
        self.ahead = deque()  # (entry, future, window, timestamp): reads started, not yet handed on
        self.pool = None  # made for the first source that reads ahead

    def teardown(self):
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)

    def finish_bundle(self):
        while self.ahead:
            yield from timed(self.us, self._hand_on(*self.ahead.popleft()))
        yield from self.tally.flush()

    def process(self, entry, window=beam.DoFn.WindowParam, timestamp=beam.DoFn.TimestampParam):
        entry = Entry(*entry)
        width = self._width(entry)
        if width <= 1:
            return timed(self.us, isolated(self._read(entry, lambda: self._fetch(entry)), entry.url, _READING,
                                           substitute=self._unread(entry)))
        if self.pool is None:
            self.pool = ThreadPoolExecutor(width, thread_name_prefix="read-ahead")
        self.ahead.append((entry, self.pool.submit(self._fetch, entry, True), window, timestamp))
        return timed(self.us, self._due(width))

    def _width(self, entry) -> int:
        """How many documents of ``entry``'s source may be read at once (1: none ahead)."""
        if entry.content is not None:
            return 1
        try:
            source = self.sources(entry.url)
        except Exception:  # noqa: BLE001 - no source for its scheme: read alone, which says so in one report line
            return 1
        return source.reads_ahead() if capable(source, ReadsAhead) else 1

    def _due(self, width: int):
        """Hand on the reads that are done in front, and more while too many are held."""
        while self.ahead and (self.ahead[0][1].done() or len(self.ahead) > width or (
                len(self.ahead) > 1 and sum(self._held(e) for e, *_ in self.ahead) > _HELD_BYTES)):
            yield from self._hand_on(*self.ahead.popleft())

    def _held(self, entry) -> int:
        return min(entry.size, SNIFF_BYTES if entry.size > self.max_file_size else self.max_file_size)

    def _hand_on(self, entry, future, window, timestamp):
        def fetched() -> bytes:
            data = future.result()
            return self._fetch(entry) if data is None else data  # grown since its listing: read alone

        for output in isolated(self._read(entry, fetched), entry.url, _READING, substitute=self._unread(entry)):
            if isinstance(output, beam.pvalue.TaggedOutput):
                yield beam.pvalue.TaggedOutput(output.tag, WindowedValue(output.value, timestamp, [window]))
            else:
                yield WindowedValue(output, timestamp, [window])

    @staticmethod
    def _unread(entry):
        return lambda reason: [RawDocument(entry, UNKNOWN_TYPE, b"", reason)]

    def _fetch(self, entry, ahead: bool = False) -> bytes | None:
        """The document's bytes through its source: its first bytes only when its listed size passes
        ``max_file_size``, else up to one byte more than that. Read ahead (in a thread), no more than its listed
        size, so what is held stays what the listing said: None if there is more (it grew; read it alone)."""
        if entry.content is not None:
            return entry.content
        want = SNIFF_BYTES if entry.size > self.max_file_size else self.max_file_size + 1
        with self.sources(entry.url).open_document(entry.url) as stream:
            # the listed size and a byte: read(want) made a buffer of max_file_size for every file (0.2 CPU-s a
            # crawl of 5,700 files); one that grew since its listing is read on to the bound, as before
            data = stream.read(min(want, entry.size + 1))
            if not ahead and len(data) > entry.size:
                data += stream.read(want - len(data))
        return None if ahead and len(data) > entry.size and len(data) < want else data

    def _read(self, entry, fetch):
        oversize = entry.size > self.max_file_size
        data = entry.content
        if data is None:
            try:
                data = fetch()
            except OSError as err:  # unreadable or vanished since discovery: the indexed version stays
                yield beam.pvalue.TaggedOutput(EVENTS, event("failed", entry.url, "read",
                                                             err.strerror or str(err)))
                return
            if len(data) > self.max_file_size:  # grew since it was listed
                data, oversize = data[:SNIFF_BYTES], True
        self.tally.count("read")  # also a web page's, fetched as it was discovered
        reason = ""
        if oversize:
            reason = f"larger than max_file_size ({entry.size} > {self.max_file_size} bytes): indexed by metadata only"
            yield beam.pvalue.TaggedOutput(EVENTS, event("oversize", entry.url, "read", reason))
        with stage("mime"):
            mimetype = entry.mimetype or self.sniff(data, entry.url)
        yield RawDocument(entry, mimetype, data, reason)


class _Prepare(beam.DoFn):
    """Run the preparators accepting each document, by priority, until one succeeds.

    A document is handed to the preparing child and its outputs are emitted, in order, once its answer is
    in or when more than ``MAX_IN_FLIGHT`` wait (or when the bundle ends), each with its own window and
    timestamp: the worker reads and sniffs the next documents while the child prepares, and the child has
    the next one at hand when it finishes one. What is held is what is in flight (a few documents, or one
    larger than the pipe). Time and progress are counted by family (the first preparator of a document's
    chain; ``unprepared``: none)."""

    def __init__(self, options: PrepareOptions, shared: Shared | None = None, plugins: PluginHost | None = None):
        self.options = options
        self.shared = shared
        self.plugins = plugins or PluginHost()

    def setup(self):
        self.us, self.progress = {}, {}  # by family: time (a Beam counter) and documents
        self.tally = Tally(EVENTS)
        self.runner = runner_for(self.options.preparators, self.options.bounds, self.shared)
        self.chain_for = Chooser(self.options.preparators)
        self.plugins.load()
        self.pending = deque()  # (document, chain, ticket, window, timestamp) handed over, not yet emitted

    def teardown(self):
        if self.runner.owned:
            self.runner.close()

    def finish_bundle(self):
        while self.pending:
            held = self.pending.popleft()
            yield from timed(self._counters(held[1])[0], self._windowed(*held))
        for progress in self.progress.values():
            progress.flush()
        yield from self.tally.flush()

    def process(self, raw, window=beam.DoFn.WindowParam, timestamp=beam.DoFn.TimestampParam):
        chain = self.chain_for(raw.mimetype, raw.entry.url)
        us, progress = self._counters(chain)
        progress.add()
        return timed(us, self._hand_over(raw, chain, window, timestamp))

    def _counters(self, chain) -> tuple:
        """The time counter and the progress of the family of ``chain`` (made at its first document)."""
        family = chain[0].name if chain else "unprepared"
        if family not in self.us:
            self.us[family] = Metrics.counter("stage_us", f"prepare:{family}")
            self.progress[family] = Progress(f"documents prepared ({family})")
        return self.us[family], self.progress[family]

    def _hand_over(self, raw, chain, window, timestamp):
        if not chain:  # a type nothing reads and no catch-all: no document, as regain made none
            yield from self._unread(raw.entry, raw.mimetype, window, timestamp)
        elif not raw.metadata_only_reason:  # one the preparing process cannot take (it does not start) gets its substitute
            yield from isolated(self._submit(raw, chain, window, timestamp), raw.entry.url, _PREPARING,
                                substitute=lambda reason: [self._substitute(raw, reason)])
        while self.pending and (len(self.pending) > MAX_IN_FLIGHT or self.pending[0][2].value is not None):
            yield from self._windowed(*self.pending.popleft())
        if chain and raw.metadata_only_reason:
            yield from self._windowed(raw, chain, None, window, timestamp)

    def _unread(self, entry, mimetype: str, window, timestamp):
        """Counted (by type too); and if the index holds it from before (the catch-all indexed it), a delete
        candidate."""
        self.tally.count("skipped_unread")
        self.tally.count(f"skipped_unread{BY_TYPE}{mimetype}")
        if entry.in_index:
            self.tally.count("no_longer_read")
            yield beam.pvalue.TaggedOutput(DELETE, WindowedValue(SnapshotEntry(
                entry.id, entry.url, entry.size, entry.mtime_ns, "", "", entry.etag, entry.http_last_modified),
                timestamp, [window]))

    def _submit(self, raw, chain, window, timestamp):
        ticket = self.runner.submit(raw.data, raw.entry.url, raw.mimetype)
        self.pending.append((raw, chain, ticket, window, timestamp))
        yield from ()

    def _windowed(self, raw, chain, ticket, window, timestamp):
        for output in isolated(self._outputs(raw, chain, ticket), raw.entry.url, _PREPARING,
                               substitute=lambda reason: [self._substitute(raw, reason)]):
            if isinstance(output, beam.pvalue.TaggedOutput):
                yield beam.pvalue.TaggedOutput(output.tag, WindowedValue(output.value, timestamp, [window]))
            else:
                yield WindowedValue(output, timestamp, [window])

    def _outputs(self, raw, chain, ticket):
        entry, mimetype, data = Entry(*raw.entry), raw.mimetype, raw.data
        raw = RawDocument(entry, mimetype, data, raw.metadata_only_reason)  # plugins see our own record classes
        if raw.metadata_only_reason:
            yield make_document(raw._replace(data=b""), Prepared(), self.options, raw.metadata_only_reason)
            return
        prepared, errors = ticket.result() if ticket is not None else (None, [])
        tried = chain[:len(errors) + (prepared is not None)]  # the child tries the chain in order
        with stage("plugins"):
            for preparator in tried:
                self.plugins.call("on_before_prepare", entry.url, raw_document=raw, preparator=preparator)
            if prepared is not None:
                prepared = self.plugins.chain("on_after_prepare", "prepared", prepared, entry.url,
                                              raw_document=raw, preparator=tried[-1])
        if prepared is not None:
            with stage("document"):  # a third party's preparator or plugin may give any value
                prepared = checked(prepared)
            if _ocr_pages(prepared):
                self.tally.count("ocr_pages", _ocr_pages(prepared))
            limit = self.options.bounds.max_content_length
            partial = [prepared.partial] if prepared.partial else []
            if len(prepared.content) > limit:
                prepared.content = prepared.content[:limit]
                partial.append(f"text cut at max_content_length ({limit} characters)")
            prepared.furniture = prepared.furniture[:limit]  # searched, never shown: bounded without a word
            problems = []
            if partial:
                problems.append(event("truncated", entry.url, "prepare", "; ".join(partial)))
            if errors:  # regain logged each failure; the report keeps it though a later preparator succeeded
                problems.append(event("fallback", entry.url, "prepare",
                                      "; ".join(errors) + "; a lower-priority preparator read it"))
            misnamed = self._misnamed(entry.url, mimetype) if all(p.catch_all for p in chain) else ""
            if misnamed:
                problems.append(event("metadata_only", entry.url, "prepare", misnamed))
            elif all(p.catch_all for p in chain):  # a type no preparator supports: found by name, not a failure
                self.tally.count("unsupported")
                self.tally.count(f"unsupported{BY_TYPE}{mimetype}")  # the report says which types, how many each
            yield make_document(raw, prepared, self.options, "; ".join(p.reason for p in problems))
            self.tally.count("prepared")
            for problem in problems:
                yield beam.pvalue.TaggedOutput(EVENTS, problem)
        else:
            reason = "; ".join(errors) or f"no preparator accepts {mimetype}"
            yield make_document(raw, Prepared(), self.options, reason)
            yield beam.pvalue.TaggedOutput(EVENTS, event("failed", entry.url, "prepare", reason))
        for problem in self.plugins.problems():
            yield beam.pvalue.TaggedOutput(EVENTS, problem)

    def _substitute(self, raw, reason: str) -> IndexDoc:
        """regain's substitute document: URL, name, size, date and why it has nothing more (no auxiliary
        fields: computing them may be what failed)."""
        return make_document(RawDocument(Entry(*raw.entry), raw.mimetype, b"", ""), Prepared(),
                             replace(self.options, aux_fields=()), reason)

    def _misnamed(self, url: str, mimetype: str) -> str:
        """Why a document whose name promises a readable format (an empty ``.pdf``, garbage named ``.txt``)
        got only its metadata; nothing for files no preparator would read anyway (images, binaries)."""
        claimed = mimetypes.guess_type(url, strict=False)[0]
        if claimed and claimed != mimetype and any(
                not p.catch_all and p.accepts(claimed, url) for p in self.options.preparators):
            return f"the name says {claimed} but the content is {mimetype}: indexed by metadata only"
        return ""


class Prepare(beam.PTransform):
    """Entries to prepare → (index documents, one PCollection per media type; events; delete
    candidates: documents of a type nothing reads any more)."""

    def __init__(self, options: PrepareOptions, plugins: PluginHost | None = None, source_settings=None):
        super().__init__()
        self.options = options
        self.plugins = plugins
        self.source_settings = source_settings

    def expand(self, entries):
        read = entries | "Read" >> beam.ParDo(_Read(self.options.max_file_size, self.source_settings)
                                              ).with_output_types(RawDocument).with_outputs(EVENTS, main="raw")
        parts = read["raw"] | "ByMediaType" >> beam.Partition(_media_type, len(MEDIA_TYPES))
        shared = Shared()  # the DoFn instances of one worker process (bundles in parallel) share its children
        docs, events, deletes = [], [read[EVENTS]], []
        for media, part in zip(MEDIA_TYPES, parts):
            out = part | f"Prepare:{media}" >> beam.ParDo(_Prepare(self.options, shared, self.plugins)
                                                          ).with_output_types(IndexDoc).with_outputs(EVENTS, DELETE, main="docs")
            docs.append(out["docs"])
            events.append(out[EVENTS])
            deletes.append(out[DELETE])
        return (tuple(docs), tuple(events) | "AllPrepareEvents" >> beam.Flatten().with_output_types(Event),
                tuple(deletes) | "AllNoLongerRead" >> beam.Flatten().with_output_types(SnapshotEntry))


MEDIA_TYPES = ("text", "application", "image", "other")  # the branches of the preparation (module docstring)


def _media_type(raw: RawDocument, _count: int) -> int:
    top = raw.mimetype.partition("/")[0]
    return MEDIA_TYPES.index(top) if top in MEDIA_TYPES[:-1] else len(MEDIA_TYPES) - 1
