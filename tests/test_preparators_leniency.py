"""Leniency where Tika is lenient, on Apache Tika's own test documents (Maven Central): a PDF with damaged
pages keeps the pages that can be read, and its report line names the ones lost."""

from __future__ import annotations

from tests.package_files import tika_test_document
from tests.preparing import prepare_bytes


def test_pdf_with_bad_pages_keeps_the_others():
    """testPDF_bad_page_303226.pdf (govdocs1): three of its 19 pages' content streams are damaged; pypdf's error
    on them cost the whole file before."""
    data = tika_test_document("pdf", "testPDF_bad_page_303226.pdf")
    prepared, errors, _ = prepare_bytes(data, "file:///pdf/bad_page.pdf")
    assert errors == []
    assert prepared.partial.startswith("3 of 19 pages unreadable (page 2, 12, 13: PdfReadError")
    assert len(prepared.content) > 50_000
