"""Mutation fuzzing of the preparation stage with real files: truncated, bit-flipped, spliced and
padded variants of one valid file per format (the format corpus, LibreOffice samples included).
Whatever the bytes, the stage yields exactly one index document, and a failure is a report line, never
an exception that escapes. Bounded: a fixed number of examples per format, so CI time stays
predictable."""

from __future__ import annotations

import pytest
from apache_beam.pvalue import TaggedOutput
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from beamtrawl.transforms.preparators import BUILTIN
from beamtrawl.transforms.preparators.mime import MimeSniffer
from beamtrawl.transforms.prepare import PrepareOptions, _Prepare
from beamtrawl.transforms.records import Entry, RawDocument
from beamtrawl.transforms.urls import doc_id
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.format_corpus import documents

SEEDS = {doc.name: doc.data for doc in documents()}  # one real file of every format (tests/format_corpus.py)


@st.composite
def mutations(draw, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["truncate", "flip", "splice", "pad", "zero"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "truncate":
            del data[at:]
        elif kind == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "splice":
            data[at:at] = draw(st.binary(min_size=1, max_size=64))
        elif kind == "pad":
            data += draw(st.binary(max_size=256))
        elif kind == "zero":
            data[at:at + draw(st.integers(1, 512))] = b"\0" * min(512, len(data) - at)
    return bytes(data)


def prepare_once(stage: _Prepare, name: str, data: bytes, sniff: MimeSniffer) -> None:
    url = f"file:///fuzz/{name}"
    entry = Entry(doc_id(url), url, "file:///fuzz/", 0, len(data), 1_700_000_000_000_000_000, "", None, "",
                  [], "", "", "", "")
    document = RawDocument(entry, sniff(data, url), data, "")
    # outputs come when more documents wait than are in flight, or at the end of the bundle
    out = list(stage.process(document, GlobalWindow(), MIN_TIMESTAMP)) + list(stage.finish_bundle())
    docs = [o.value for o in out if not isinstance(o, TaggedOutput)]
    events = [o.value.value for o in out if isinstance(o, TaggedOutput)]
    assert len(docs) == 1, out  # exactly one document: prepared, or the substitute
    failed = [e for e in events if e.kind == "failed"]
    assert all(e.reason for e in failed)
    assert docs[0].preparation_error == "; ".join(e.reason for e in events if e.reason)  # its report lines


@pytest.fixture(scope="module")
def stage():
    stage = _Prepare(PrepareOptions(BUILTIN, "fp", 2**20, 10_000))
    stage.setup()
    yield stage
    stage.teardown()


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_mutated_files_never_crash_the_stage(stage, name):
    seed = SEEDS[name]
    sniff = MimeSniffer()
    prepare_once(stage, name, seed, sniff)  # the seed itself is valid

    @settings(max_examples=100, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutations(seed))
    def fuzz(data):
        prepare_once(stage, name, data, sniff)

    fuzz()
