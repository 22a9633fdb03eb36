"""Mutation fuzzing of the preparation stage with real files: truncated, bit-flipped, spliced and
padded variants of one valid file per format. Whatever the bytes, the stage yields exactly one index
document, and a failure is a report line, never an exception that escapes. Bounded: a fixed number of
examples per format, so CI time stays predictable."""

from __future__ import annotations

import email.message
import io
import tarfile
import zipfile

import docx
import openpyxl
import pptx
import pytest
from apache_beam.pvalue import TaggedOutput
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reportlab.pdfgen import canvas

from transforms.preparators import BUILTIN
from transforms.preparators.mime import MimeSniffer
from transforms.prepare import _PrepareFamily
from transforms.records import Entry, RawDocument
from transforms.urls import doc_id

PHRASE = "zebra crossing quarterly"


def _docx() -> bytes:
    document = docx.Document()
    document.add_heading("Fuzz heading", 1)
    document.add_paragraph(PHRASE)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _xlsx() -> bytes:
    book = openpyxl.Workbook()
    book.active.append(["name", PHRASE])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _pptx() -> bytes:
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Fuzz slide"
    slide.placeholders[1].text = PHRASE
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _pdf() -> bytes:
    out = io.BytesIO()
    page = canvas.Canvas(out)
    page.setTitle("Fuzz PDF")
    page.drawString(72, 720, PHRASE)
    page.showPage()
    page.save()
    return out.getvalue()


def _mail() -> bytes:
    msg = email.message.EmailMessage()
    msg["Subject"], msg["From"], msg["To"] = "Fuzz mail", "a@example.org", "b@example.org"
    msg.set_content(PHRASE)
    msg.add_attachment(b"%PDF-1.4 not really", maintype="application", subtype="pdf", filename="a.pdf")
    return msg.as_bytes()


def _zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("notes/readme.txt", PHRASE)
        archive.writestr("page.html", f"<html><title>t</title><p>{PHRASE}</p></html>")
    return out.getvalue()


def _tar() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        data = PHRASE.encode()
        info = tarfile.TarInfo("readme.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


SEEDS = {
    "a.html": lambda: f"<html><head><title>Fuzz</title></head><body><h1>H</h1><p>{PHRASE}</p></body></html>".encode(),
    "a.txt": lambda: f"{PHRASE}\nGrüße".encode(),
    "a.xml": lambda: f"<?xml version='1.0'?><root><item>{PHRASE}</item></root>".encode(),
    "a.rtf": lambda: ("{\\rtf1\\ansi{\\fonttbl\\f0 Arial;}\\f0 " + PHRASE + "\\par}").encode(),
    "a.docx": _docx, "a.xlsx": _xlsx, "a.pptx": _pptx, "a.pdf": _pdf, "a.eml": _mail,
    "a.zip": _zip, "a.tar.gz": _tar,
}


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


def prepare_once(stage: _PrepareFamily, name: str, data: bytes, sniff: MimeSniffer) -> None:
    url = f"file:///fuzz/{name}"
    entry = Entry(doc_id(url), url, "file:///fuzz/", 0, len(data), 1_700_000_000_000_000_000, "", None, "",
                  [], "", "", "", "")
    document = RawDocument(entry, sniff(data, url), data, False)
    # outputs come when the next document is handed over, or at the end of the bundle
    out = list(stage.process(document, GlobalWindow(), MIN_TIMESTAMP)) + list(stage.finish_bundle())
    docs = [o.value for o in out if not isinstance(o, TaggedOutput)]
    events = [o.value.value for o in out if isinstance(o, TaggedOutput)]
    assert len(docs) == 1, out  # exactly one document: prepared, or the substitute
    failed = [e for e in events if e.kind == "failed"]
    assert all(e.reason for e in failed)
    assert bool(docs[0].preparation_error) == bool(failed)


@pytest.fixture(scope="module")
def stage():
    stage = _PrepareFamily("fuzz", BUILTIN, "fp", 10_000)
    stage.setup()
    yield stage
    stage.teardown()


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_mutated_files_never_crash_the_stage(stage, name):
    seed = SEEDS[name]()
    sniff = MimeSniffer()
    prepare_once(stage, name, seed, sniff)  # the seed itself is valid

    @settings(max_examples=100, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutations(seed))
    def fuzz(data):
        prepare_once(stage, name, data, sniff)

    fuzz()
