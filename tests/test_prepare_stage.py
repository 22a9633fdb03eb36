"""The preparation stage without Beam: fallbacks by priority and the substitute document."""

from __future__ import annotations

import re

from apache_beam.pvalue import TaggedOutput
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP

from transforms.preparators import BUILTIN, PreparationError, PreparatorSpec, Prepared
from transforms.prepare import _PrepareFamily, summarize
from transforms.records import Entry, RawDocument
from transforms.urls import doc_id


def raw(url: str, data: bytes, mimetype: str = "text/plain", oversize: str = "") -> RawDocument:
    entry = Entry(doc_id(url), url, "file:///d", 0, len(data), 1_700_000_000_123_456_789, "", None, "", [],
                  "", "", "", "")
    return RawDocument(entry, mimetype, data, oversize)


def run(preparators, document):
    fn = _PrepareFamily("test", tuple(preparators), "fp", 250_000)
    fn.setup()
    # outputs come when the next document is handed over, or at the end of the bundle
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
    docs, events = run(BUILTIN, raw("file:///d/huge.txt", b"first bytes only", oversize=reason))
    assert docs[0].content == "" and docs[0].preparation_error == reason and events == []


def test_summary_cut_at_last_space():
    assert summarize("one two three", 100) == "one two three"
    assert summarize("one two three", 9) == "one two..."
    assert summarize("x" * 20, 5) == "xxxxx..."


def test_prepared_defaults():
    assert Prepared().headlines == [] and Prepared().fields == {}


def test_a_document_is_emitted_when_the_next_is_handed_over():
    """The worker reads the next document while the child prepares this one."""
    fn = _PrepareFamily("test", BUILTIN, "fp", 250_000)
    fn.setup()
    try:
        first = list(fn.process(raw("file:///d/a.txt", b"first"), GlobalWindow(), MIN_TIMESTAMP))
        second = list(fn.process(raw("file:///d/b.txt", b"second"), GlobalWindow(), MIN_TIMESTAMP))
        rest = [o for o in fn.finish_bundle() if not isinstance(o, TaggedOutput)]
    finally:
        fn.teardown()
    assert first == [] and [o.value.content for o in second] == ["first"]
    assert [o.value.content for o in rest] == ["second"]
