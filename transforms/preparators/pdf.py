"""PDF by pypdf (pure Python, no poppler to install): page text, then annotation comments after
" Annotations " and "p.<pages> <author> <subject> <keywords>" as metadata, as regain's PdfBoxPreparator
did. An encrypted PDF is read when its user password is empty, as viewers open it without asking. A page
that cannot be read (a damaged content stream) costs that page only: the others are kept, and the
document's report line names the pages lost, as Tika reads such files. File attachments (and a portfolio's documents) are prepared by their own type and
inlined (``embedded``)."""

from __future__ import annotations

import io

from beamtrawl.transforms.preparators import embedded
from beamtrawl.transforms.preparators.base import PreparationError, Prepared

MIME_TYPES = ("application/pdf",)
REVISION = 2  # part of the preparation fingerprint (base.py): 1 keeps the readable pages of a PDF with bad ones;
# 2 inlines its file attachments (embedded)


def _annotations(page) -> list[str]:
    contents = (annotation.get_object().get("/Contents") for annotation in page.get("/Annots") or ())
    return [str(text).strip() for text in contents if text and str(text).strip()]


def prepare_pdf(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    from pypdf import PdfReader  # loaded on the first PDF, not at every start-up
    from pypdf.errors import FileNotDecryptedError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise PreparationError("encrypted")
        pages, lost = _pages(reader, (PyPdfError, ValueError, KeyError, TypeError, AttributeError))
        annotations = [text for page in reader.pages for text in _safe_annotations(page)]
        info = reader.metadata or {}
        attached = _attachments(reader)
    except FileNotDecryptedError:
        raise PreparationError("encrypted") from None
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise PreparationError(f"not readable as PDF: {type(err).__name__}: {err}"[:200]) from None
    if lost and not any(pages):
        raise PreparationError(f"not readable as PDF: {lost[0][1]}"[:200])
    content = "\n".join(pages)
    if annotations:
        content += " Annotations " + " ".join(annotations)
    meta = [str(info.get(key) or "").strip() for key in ("/Author", "/Subject", "/Keywords")]
    partial = (f"{len(lost)} of {len(pages)} pages unreadable (page {', '.join(str(n) for n, _ in lost)}: "
               f"{lost[0][1]})"[:300] if lost else "")
    prepared = Prepared(title=str(info.get("/Title") or "").strip(), content=content,
                        metadata=" ".join([f"p.{len(pages)}", *filter(None, meta)]), partial=partial)
    return embedded.inline(prepared, ((name, lambda b=body: io.BytesIO(b)) for name, body in attached), url)


def _attachments(reader) -> list[tuple[str, bytes]]:
    """(name, bytes) of the PDF's embedded files (attachments, a portfolio's documents); none when its
    name tree is damaged (the pages' text is kept)."""
    try:
        return [(name, body) for name, bodies in reader.attachments.items() for body in bodies]
    except Exception:  # noqa: BLE001 - pypdf raises what a damaged name tree makes it raise
        return []


def _pages(reader, errors) -> tuple[list[str], list[tuple[int, str]]]:
    """(each page's text, "" for one that cannot be read; (page number, why) of those)."""
    pages, lost = [], []
    for number, page in enumerate(reader.pages, 1):
        try:
            pages.append((page.extract_text() or "").strip())
        except errors as err:
            pages.append("")
            lost.append((number, f"{type(err).__name__}: {' '.join(str(err).split())}"[:120]))
    return pages, lost


def _safe_annotations(page) -> list[str]:
    try:
        return _annotations(page)
    except Exception:  # noqa: BLE001 - a damaged annotation costs that annotation's text only
        return []
