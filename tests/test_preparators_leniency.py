"""Leniency where Tika is lenient, on Apache Tika's own test documents (Maven Central): a PDF with damaged
pages is read whole."""

from __future__ import annotations

from tests.package_files import tika_test_document
from tests.preparing import prepare_bytes


def test_pdf_with_bad_pages_is_read_whole():
    """testPDF_bad_page_303226.pdf (govdocs1): three of its 19 pages' content streams are damaged. pypdf's error
    on them cost the whole file once, then those three pages; PDFium reads them (as Tika does)."""
    data = tika_test_document("pdf", "testPDF_bad_page_303226.pdf")
    prepared, errors, _ = prepare_bytes(data, "file:///pdf/bad_page.pdf")
    assert errors == []
    assert prepared.partial == ""
    assert len(prepared.content) > 80_000
    assert "§ 1308.01 Scope of part 1308." in prepared.content  # page 2
    assert "chemical preparation after it is in the" in prepared.content  # page 12
