"""Documents embedded in documents (issue 24, item 2), on Apache Tika's test documents: attachments and OLE
objects in DOCX/XLSX/PPTX, Word's altChunk parts, OpenDocument objects and PDF file attachments, each
prepared by its own type within the archive bounds and inlined into the container's text, where
``beamtrawl search`` finds it."""

from __future__ import annotations

import io
import zipfile

import pytest
from beamtrawl.transforms.preparators import BUILTIN, Chain, archive, embedded
from beamtrawl.transforms.preparators.base import Prepared
from beamtrawl.transforms.preparators.chain import _CONTEXT

from tests.package_files import tika_test_document
from tests.preparing import SNIFF, prepare_bytes

# WPS Office's test files: one attachment of each kind, each holding "<kind>_content"
WPS_KINDS = ("txt", "pdf", "xml", "doc", "docx", "xls", "xlsx", "ppt", "pptx")


def prepare(module: str, name: str):
    data = tika_test_document(module, name)
    prepared, errors, _ = prepare_bytes(data, f"file:///embedded/{name}")
    assert errors == [], errors
    return prepared


@pytest.mark.parametrize("name", ["testWPSAttachment.docx", "testWPSAttachment.pptx", "testWPSAttachment.xlsx"])
def test_office_attachments_of_every_kind_are_read_by_their_type(name):
    """OLE-wrapped files (Ole10Native, "package" streams), OLE storages that are legacy Office files, and
    OOXML files inserted as they are."""
    prepared = prepare("microsoft", name)
    words = set(prepared.content.split())
    missing = [kind for kind in WPS_KINDS if f"{kind}_content" not in words]
    assert missing == [] or (name.endswith(".xlsx") and set(missing) <= {"txt", "xml"}), missing
    assert int(prepared.fields["embedded"]) >= 7


def test_embedded_file_is_named_by_its_wrapper_and_its_own_name():
    prepared = prepare("microsoft", "testWPSAttachment.docx")
    assert "embedded: word/embeddings/oleObject2.bin!/PDF.pdf\npdf_content" in prepared.content


def test_pdf_inserted_by_acrobat_and_alt_chunk_are_read():
    assert "This is a 2010 Word Document embedded as an icon and saved as a pdf." in \
        prepare("microsoft", "EmbeddedPDF.docx").content  # the OLE object's CONTENTS stream
    assert "Simple paragraph with a emphasized word." in prepare("microsoft", "testAltChunkMHT.docx").content


def test_embedded_office_files_in_office_files():
    content = prepare("microsoft", "testWORD_embeded.docx").content
    for part in ("Microsoft_Office_Word_97_-_2003_Document1.doc", "Microsoft_Office_PowerPoint_Presentation2.pptx",
                 "Microsoft_Office_Excel_Worksheet1.xlsx"):
        assert f"embedded: word/embeddings/{part}\n" in content


def test_opendocument_object_is_read():
    prepared = prepare("miscoffice", "testODFwithOOo3.odt")
    assert "embedded: Object 1/\nSheet1\nNumber Name\n1 one embedded" in prepared.content


def test_pdf_file_attachments_are_read():
    prepared = prepare("pdf", "testPDF_childAttachments.pdf")
    assert prepared.fields["embedded"] == "2"
    assert "embedded: Unit10.doc\nUNIT 10—TAXING & BUDGETING" in prepared.content


def test_embedded_documents_are_bounded_like_archive_members():
    """max_entries and max_bytes stop the walk; the container's own text stays, and a report line says so."""
    data = tika_test_document("microsoft", "testWPSAttachment.docx")
    token = _CONTEXT.set(Chain(BUILTIN, SNIFF))
    try:
        parts = list(embedded.ooxml_parts(zipfile.ZipFile(io.BytesIO(data))))
        bounded = embedded.inline(Prepared(content="own text"), iter(parts), "file:///a.docx",
                                  {**dict(archive.DEFAULTS), "max_entries": 3})
    finally:
        _CONTEXT.reset(token)
    assert bounded.content.startswith("own text") and "pdf_content" in bounded.content
    assert "doc_content" not in bounded.content
    assert bounded.partial == "embedded documents read partially: reached max_entries (3)"


def test_crawl_finds_container_by_its_embedded_text(tmp_path, make_config, crawl, search):
    root = tmp_path / "embedded"
    root.mkdir()
    files = {"testWPSAttachment.docx": ("microsoft", "xlsx_content"),
             "testPDF_childAttachments.pdf": ("pdf", '"FINANCING STATE GOVERNMENT"'),
             "testODFwithOOo3.odt": ("miscoffice", '"three embedded"'),
             "EmbeddedPDF.docx": ("microsoft", '"embedded as an icon and saved as a pdf"')}
    for name, (module, _query) in files.items():
        (root / name).write_bytes(tika_test_document(module, name))
    config = make_config(root, preparation={"timeout": 600})  # a 2.3 MB PDF and its Word file, on a busy machine
    run = crawl(config)
    assert run.code == 0, (run.stderr, run.report.get("problems"))
    for name, (_module, query) in files.items():
        assert [hit["url"].rsplit("/", 1)[1] for hit in search(config, query)] == [name], query
