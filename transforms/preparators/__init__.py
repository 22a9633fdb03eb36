"""Preparators turn bytes into searchable text. One module per family of formats; this module
lists the built-in ones and picks, for a document, the preparators to try in order."""

from __future__ import annotations

import re

from transforms.preparators import archive, audio, epub, mail, odf, office, pdf, rtf, xml
from transforms.preparators.base import PreparationError, PreparatorSpec, Prepared
from transforms.preparators.html import prepare_html
from transforms.preparators.metadata_only import prepare_metadata_only
from transforms.preparators.text import prepare_text

BUILTIN = (
    PreparatorSpec("html", prepare_html, ("text/html", "application/xhtml+xml"), priority=10),
    PreparatorSpec("pdf", pdf.prepare_pdf, pdf.MIME_TYPES, priority=10),
    PreparatorSpec("office", office.prepare_ooxml, office.MIME_TYPES, priority=10),
    PreparatorSpec("mail", mail.prepare_mail, mail.MIME_TYPES, priority=10),
    PreparatorSpec("xml", xml.prepare_xml, xml.MIME_TYPES, priority=10),
    PreparatorSpec("archive", archive.prepare_archive, archive.MIME_TYPES, priority=10),
    PreparatorSpec("odf", odf.prepare_odf, odf.MIME_TYPES, priority=10),
    PreparatorSpec("rtf", rtf.prepare_rtf, rtf.MIME_TYPES, priority=10),
    PreparatorSpec("epub", epub.prepare_epub, epub.MIME_TYPES, priority=10),
    PreparatorSpec("audio", audio.prepare_audio, audio.MIME_TYPES, priority=10),
    PreparatorSpec("text", prepare_text, ("text/*",), priority=0),
    # regain's EmptyPreparator catch-all: every document is at least found by name, path, type, date.
    PreparatorSpec("metadata_only", prepare_metadata_only, priority=-10, url_pattern=re.compile(""),
                   catch_all=True),
)


def chain_for(preparators: tuple[PreparatorSpec, ...], mimetype: str, url: str) -> list[PreparatorSpec]:
    """The preparators accepting a document, highest priority first (ties keep configuration order).
    A catch-all joins only when nothing else accepts: a corrupt PDF must become a substitute document
    with its error in the report, not quietly a metadata-only one."""
    accepting = [p for p in preparators if p.accepts(mimetype, url)]
    specific = [p for p in accepting if not p.catch_all]
    return sorted(specific or accepting, key=lambda p: -p.priority)


__all__ = ["BUILTIN", "PreparationError", "PreparatorSpec", "Prepared", "chain_for"]
