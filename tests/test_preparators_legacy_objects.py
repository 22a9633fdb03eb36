"""OLE objects embedded in the legacy formats (issue 24, item 2), on Apache Tika's test documents: Word's
``ObjectPool`` storages, Excel's ``MBD`` storages, PowerPoint's ExOleObjStg records and RTF's ``\\objdata``
groups, each prepared by its own type within the archive bounds and inlined into the container's text,
where ``beamtrawl search`` finds it."""

from __future__ import annotations

import re
import struct
import zlib

import pytest
from beamtrawl.transforms.preparators import BUILTIN, Chain, archive, embedded, ole_objects
from beamtrawl.transforms.preparators.base import Prepared
from beamtrawl.transforms.preparators.chain import _CONTEXT

from tests.package_files import tika_test_document
from tests.preparing import SNIFF, prepare_bytes

WPS_KINDS = ("txt", "pdf", "xml", "doc", "docx", "xls", "xlsx", "ppt", "pptx")  # each holds "<kind>_content"
RTF = "testRTFEmbeddedFiles.rtf"


def prepare(data: bytes, name: str) -> Prepared:
    prepared, errors, _ = prepare_bytes(data, f"file:///objects/{name}")
    assert errors == [], errors
    return prepared


@pytest.mark.parametrize("name, parts", [("testWPSAttachment.doc", "9"), ("testWPSAttachment.xls", "18"),
                                         ("testWPSAttachment.ppt", "9")])
def test_objects_of_every_kind_in_legacy_office_files_are_read_by_their_type(name, parts):
    """Wrapped files (Ole10Native, "package" streams) and storages that are Office documents themselves (the
    workbook's drawing layer holds a picture of each object too: ``xls_drawing``)."""
    prepared = prepare(tika_test_document("microsoft", name), name)
    words = set(prepared.content.split())
    assert [kind for kind in WPS_KINDS if f"{kind}_content" not in words] == []
    assert prepared.fields["embedded"] == parts


def test_word_object_pool_and_excel_storages_are_named_and_nest():
    doc = prepare(tika_test_document("microsoft", "testWORD_embeded.doc"), "testWORD_embeded.doc").content
    assert "embedded: ObjectPool/_1345470949\nSheet1\nThe quick brown fox" in doc  # a workbook in a Word file
    assert "embedded: ObjectPool/_1345471035\nThe quick brown fox" in doc  # a presentation
    xls = prepare(tika_test_document("microsoft", "testEXCEL_embeded.xls"), "testEXCEL_embeded.xls").content
    assert "embedded: MBD0003271D\n" in xls and "embedded: object 1\nSheet1" in xls  # a workbook in a slide in a sheet


def test_rtf_objects_are_read_by_their_class_and_packages_by_their_file():
    content = prepare(tika_test_document("microsoft", RTF), RTF).content
    flat = " ".join(content.split())
    assert "embedded: object 2 (Excel.Sheet.12)\nFeuil1\nSample Excel Worksheet - Numbers and their Squares" in content
    assert re.search(r"embedded: object 7 \(Package\)!/testMSG_.*\.msg\nSubject: MIME registry use cases", content)
    assert "embedded: ObjectPool/_1457338542!/Hw.txt\nHello World" in content  # a file in a Word object in RTF
    assert "Apache Tika is a toolkit for detecting and extracting metadata" in flat  # AcroExch: a PDF
    assert "This is a sample Microsoft Word Document." in flat


def test_objects_are_bounded_like_archive_members():
    data = tika_test_document("microsoft", "testWPSAttachment.doc")
    token = _CONTEXT.set(Chain(BUILTIN, SNIFF))
    try:
        bounded = embedded.inline(Prepared(content="own text"), ole_objects.storage_parts(data), "file:///a.doc",
                                  {**dict(archive.DEFAULTS), "max_entries": 2})
    finally:
        _CONTEXT.reset(token)
    assert bounded.content.startswith("own text") and "pdf_content" in bounded.content
    assert "xml_content" not in bounded.content
    assert bounded.partial == "embedded documents read partially: reached max_entries (2)"


def test_damaged_objects_lose_themselves_only():
    """Truncated hex in RTF, a PowerPoint object whose zlib stream is broken, a Word file cut short: the
    container's own text stays, the broken object is a name at most."""
    rtf = tika_test_document("microsoft", RTF)
    cut = rtf[: rtf.index(b"Excel.Sheet.8") + 5000]  # inside object 6's hex, with no closing brace
    prepared = prepare(cut, RTF)
    assert "MIME registry use cases" not in prepared.content and "Numbers and their Squares" in prepared.content
    ppt = bytearray(tika_test_document("microsoft", "testPPT_embeded.ppt"))
    stream_at = bytes(ppt).index(b"\x10\x00\x11\x10")  # ExOleObjStg, instance 1 (compressed)
    ppt[stream_at + 12: stream_at + 40] = b"\xff" * 28  # the zlib header and first block
    assert "The quick brown fox" in prepare(bytes(ppt), "testPPT_embeded.ppt").content
    assert list(ole_objects.storage_parts(b"\xd0\xcf\x11\xe0 not a compound file")) == []


def test_ppt_object_that_claims_too_much_is_not_decompressed():
    record = struct.pack("<HHI", 0x0010, 0x1011, 4 + 10) + struct.pack("<I", 1 << 30) + zlib.compress(b"x")[:10]
    assert [(name, opener) for name, opener in ole_objects.ppt_parts(record)] == [("object 1", None)]


def _without_object(rtf: bytes, kind: bytes) -> bytes:
    """The RTF with the ``\\object`` group of class ``kind`` removed (brace-matched)."""
    start = rtf.rindex(b"{\\object", 0, rtf.index(b"{\\*\\objclass " + kind + b"}"))
    depth, at = 0, start
    while True:
        depth += {0x7B: 1, 0x7D: -1}.get(rtf[at], 0)
        at += 1
        if depth == 0:
            return rtf[:start] + rtf[at:]


def test_crawl_finds_containers_by_their_objects_and_follows_their_changes(tmp_path, make_config, crawl, search):
    root = tmp_path / "objects"
    root.mkdir()
    files = {"testWPSAttachment.doc": "pptx_content", "testWPSAttachment.xls": "docx_content",
             "testWPSAttachment.ppt": "xlsx_content", RTF: '"MIME registry use cases"'}
    for name in files:
        (root / name).write_bytes(tika_test_document("microsoft", name))
    config = make_config(root, preparation={"timeout": 600})
    run = crawl(config)
    assert run.code == 0, (run.stderr, run.report.get("problems"))

    def found(query: str) -> list[str]:
        return sorted(hit["url"].rsplit("/", 1)[1] for hit in search(config, query))

    for name, query in files.items():
        assert name in found(query), query
    rtf = tika_test_document("microsoft", RTF)
    (root / RTF).write_bytes(_without_object(rtf, b"AcroExch.Document.11"))
    assert crawl(config).code == 0
    assert found('"Apache Tika is a toolkit"') == []
    hello, beam = b"Hello World".hex().encode(), b"Hello Beam!".hex().encode()  # a text file in a Word object
    (root / RTF).write_bytes(_without_object(rtf, b"Package").replace(hello, beam))  # the first Package: a ZIP
    assert crawl(config).code == 0
    assert found('"Apache Tika is a toolkit"') == [RTF]  # added
    assert found('"Hello Beam"') == [RTF] and found('"Hello World"') == []  # changed
    assert found('"html within zip"') == []  # removed
    assert found('"MIME registry use cases"') == [RTF]  # kept
