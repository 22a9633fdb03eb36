"""The preparation stage without Beam: fallbacks by priority and the substitute document."""

from __future__ import annotations

import re

from apache_beam.pvalue import TaggedOutput
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from beamtrawl.transforms.preparators import BUILTIN, PreparationError, PreparatorSpec, Prepared
from beamtrawl.transforms.preparators.isolation import INLINE_MAX_BYTES, MAX_IN_FLIGHT
from beamtrawl.transforms.prepare import PrepareOptions, _Prepare, summarize
from beamtrawl.transforms.records import Entry, Event, RawDocument, SnapshotEntry
from beamtrawl.transforms.urls import doc_id

from tests.package_files import PY_LIB, PY_TESTSUITE, debian_file


def raw(url: str, data: bytes, mimetype: str = "text/plain", metadata_only_reason: str = "") -> RawDocument:
    entry = Entry(doc_id(url), url, "file:///d", 0, len(data), 1_700_000_000_123_456_789, "", None, "", [],
                  "", "", "", "")
    return RawDocument(entry, mimetype, data, metadata_only_reason)


def run(preparators, document):
    fn = _Prepare(PrepareOptions(tuple(preparators), "fp", 2**20, 250_000))
    fn.setup()
    # outputs come when more documents wait than are in flight, or at the end of the bundle
    out = list(fn.process(document, GlobalWindow(), MIN_TIMESTAMP)) + list(fn.finish_bundle())
    fn.teardown()
    docs = [o.value for o in out if not isinstance(o, TaggedOutput)]
    events = [o.value.value for o in out if isinstance(o, TaggedOutput)]
    return docs, events


def broken(data, url, mimetype, params):
    raise PreparationError("corrupt on purpose")


def crashing(data, url, mimetype, params):
    raise ZeroDivisionError("division by zero")


def test_next_preparator_by_priority_when_one_fails():
    preparators = [PreparatorSpec("broken", broken, ("text/*",), priority=5), *BUILTIN]
    docs, events = run(preparators, raw("file:///d/a.txt", b"fallback text"))
    line = "broken: corrupt on purpose; a lower-priority preparator read it"
    assert docs[0].content == "fallback text" and docs[0].preparation_error == line  # why, for a searcher
    assert [(e.kind, e.reason) for e in events] == [("fallback", line), ("prepared", "")]


def test_substitute_document_when_every_preparator_fails():
    preparators = [PreparatorSpec("broken", broken, ("text/*",), priority=5),
                   PreparatorSpec("crashing", crashing, (), url_pattern=re.compile(r"\.txt$"))]
    docs, events = run(preparators, raw("file:///d/report%20q3.txt", b"whatever"))
    (doc,) = docs
    assert doc.content == "" and doc.filename == "report q3.txt" and doc.size == 8
    assert doc.last_modified == "2023-11-14T22:13:20.123+00:00"
    assert doc.preparation_error == "broken: corrupt on purpose; crashing: ZeroDivisionError: division by zero"
    assert [(e.kind, e.stage, e.reason) for e in events] == [("failed", "prepare", doc.preparation_error)]


def test_oversize_document_is_metadata_only():
    reason = "larger than max_file_size (…): indexed by metadata only"  # _Read reports it, stage "read"
    docs, events = run(BUILTIN, raw("file:///d/huge.txt", b"first bytes only", metadata_only_reason=reason))
    assert docs[0].content == "" and docs[0].preparation_error == reason and events == []


def exr() -> bytes:
    """An OpenEXR image: a type nothing reads (Pillow, and so the image preparator, does not)."""
    return debian_file(PY_TESTSUITE, f"{PY_LIB}/test/imghdrdata/python.exr").read_bytes()


def test_type_nothing_reads_is_unsupported_not_failed():
    """The catch-all indexes it by name: its own count, no report line, no failure."""
    docs, events = run(BUILTIN, raw("file:///d/python.exr", exr(), "image/x-exr"))
    assert docs[0].content == "" and docs[0].preparation_error == "" and docs[0].filename == "python.exr"
    assert sorted((e.kind, e.count, e.reason) for e in events) == [("prepared", 1, ""), ("unsupported", 1, ""),
                                                                           ("unsupported@type:image/x-exr", 1, "")]


def test_type_nothing_reads_is_no_document_without_the_catch_all():
    """``{name: metadata_only, enabled: false}``: as in regain, no document and no failure, only a count."""
    readers = tuple(p for p in BUILTIN if not p.catch_all)
    for oversize in ("", "larger than max_file_size (…): indexed by metadata only"):
        docs, events = run(readers, raw("file:///d/python.exr", exr(), "image/x-exr", oversize))
        assert docs == [] and [(e.kind, e.count, e.reason) for e in events] == [
            ("skipped_unread", 1, ""), ("skipped_unread@type:image/x-exr", 1, "")]
    docs, events = run(readers, raw("file:///d/a.txt", b"still read", "text/plain"))
    assert docs[0].content == "still read"


def test_type_nothing_reads_any_more_is_a_delete_candidate():
    """One the index holds (the catch-all indexed it before it was switched off) goes, as the deletes go."""
    readers = tuple(p for p in BUILTIN if not p.catch_all)
    indexed = raw("file:///d/python.exr", exr(), "image/x-exr")
    docs, outputs = run(readers, indexed._replace(entry=indexed.entry._replace(in_index=True)))
    [candidate] = [o for o in outputs if isinstance(o, SnapshotEntry)]
    assert docs == [] and (candidate.id, candidate.url) == (indexed.entry.id, "file:///d/python.exr")
    assert sorted((e.kind, e.count) for e in outputs if isinstance(e, Event)) == [
        ("no_longer_read", 1), ("skipped_unread", 1), ("skipped_unread@type:image/x-exr", 1)]


def test_summary_cut_at_last_space():
    assert summarize("one two three", 100) == "one two three"
    assert summarize("one two three", 9) == "one two..."
    assert summarize("x" * 20, 5) == "xxxxx..."


def test_one_prepare_pardo_per_media_type():
    """Not a ParDo, batch and upsert per preparator family (forty): each is paid for in the graph and in every
    worker; a branch per media type keeps cheap documents' writes apart from slow ones'."""
    import apache_beam as beam
    from beamtrawl.transforms.prepare import Prepare

    p = beam.Pipeline()
    docs, _events, _gone = (p | beam.Create([]).with_output_types(Entry)
                            | "Prepare" >> Prepare(PrepareOptions(BUILTIN, "fp", 2**20, 250_000)))
    assert len(docs) == 4
    transforms = p.to_runner_api().components.transforms.values()
    pardos = sorted(t.unique_name for t in transforms if t.spec.urn == "beam:transform:pardo:v1")
    assert [n for n in pardos if n.startswith("Prepare/")] == [
        "Prepare/ByMediaType/ParDo(ApplyPartitionFnFn)/ParDo(ApplyPartitionFnFn)", *(f"Prepare/Prepare:{m}/ParDo(_Prepare)" for m in
                                                           ("application", "image", "other", "text")),
        "Prepare/Read/ParDo(_Read)"], pardos


def test_prepared_defaults():
    assert Prepared().headlines == [] and Prepared().fields == {}


def test_documents_are_emitted_in_order_once_more_than_max_in_flight_wait():
    """The worker reads the next documents while the child prepares; the child has the next one at hand."""
    fn = _Prepare(PrepareOptions(BUILTIN, "fp", 2**20, 250_000))
    fn.setup()
    try:
        outputs = [[o.value.content for o in fn.process(raw(f"file:///d/{i}.html", f"<p>text {i}</p>".encode(),
                                                            "text/html"), GlobalWindow(), MIN_TIMESTAMP)]
                   for i in range(MAX_IN_FLIGHT + 2)]
        rest = [o.value.content for o in fn.finish_bundle() if not isinstance(o, TaggedOutput)]
    finally:
        fn.teardown()
    assert outputs == [[]] * MAX_IN_FLIGHT + [["text 0"], ["text 1"]]
    assert rest == [f"text {i}" for i in range(2, MAX_IN_FLIGHT + 2)]


def test_small_text_and_xml_are_prepared_in_the_worker_and_large_text_in_the_child():
    """The text and XML readers and the catch-all cannot hang or crash on a small document: no hand-over."""
    fn = _Prepare(PrepareOptions(BUILTIN, "fp", 2**21, 250_000))
    fn.setup()
    try:
        small = [o.value for o in fn.process(raw("file:///d/a.txt", b"small"), GlobalWindow(), MIN_TIMESTAMP)]
        binary = [o.value for o in fn.process(raw("file:///d/b.so", b"\x7fELF", "application/x-sharedlib"),
                                              GlobalWindow(), MIN_TIMESTAMP)]
        xml = [o.value for o in fn.process(raw("file:///d/c.xml", b"<r><title>T</title>x</r>", "text/xml"),
                                           GlobalWindow(), MIN_TIMESTAMP)]
        assert fn.runner.process is None  # no child started for any of them
        large = b"word " * (INLINE_MAX_BYTES // 5 + 1)
        assert not list(fn.process(raw("file:///d/c.txt", large), GlobalWindow(), MIN_TIMESTAMP))
        assert fn.runner.process is not None
        rest = [o.value for o in fn.finish_bundle() if not isinstance(o, TaggedOutput)]
    finally:
        fn.teardown()
    assert [d.content for d in small] == ["small"] and binary[0].content == "" and binary[0].filename == "b.so"
    assert (xml[0].title, xml[0].content) == ("T", "T\nx")
    assert rest[0].content == large.decode()


def test_a_preparing_child_whose_worker_was_killed_ends_on_its_own():
    """The child's timeout is its worker's to keep: a worker killed (SIGKILL) left its child preparing alone, up to its
    memory limit, after the crawl had ended (found by the red team). Here the child waits on a pipe the test keeps
    open, as one busy with a document would go on: once its worker is gone it ends within a few seconds."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    read, write = os.pipe()
    starts_a_child = ("import os, subprocess, sys, time; child = subprocess.Popen([sys.executable, '-P', '-m', "
                      "'beamtrawl.transforms.preparators.isolation', '0', '1', str(os.getpid())], stdin=int(sys.argv[1])); "
                      "print(child.pid, flush=True); time.sleep(600)")
    worker = subprocess.Popen([sys.executable, "-c", starts_a_child, str(read)], pass_fds=(read,), stdout=subprocess.PIPE,
                              text=True)
    os.close(read)
    try:
        child = psutil.Process(int(worker.stdout.readline()))
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        deadline = time.monotonic() + 30
        while child.is_running() and child.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    finally:
        os.close(write)
