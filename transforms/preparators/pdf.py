"""PDF by pypdf (pure Python, no poppler to install): page text, then annotation comments after
" Annotations " and "p.<pages> <author> <subject> <keywords>" as metadata, as regain's PdfBoxPreparator
did. An encrypted PDF is read when its user password is empty, as viewers open it without asking."""

from __future__ import annotations

import io

from beamtrawl.transforms.preparators.base import PreparationError, Prepared

MIME_TYPES = ("application/pdf",)


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
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
        annotations = [text for page in reader.pages for text in _annotations(page)]
        info = reader.metadata or {}
    except FileNotDecryptedError:
        raise PreparationError("encrypted") from None
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise PreparationError(f"not readable as PDF: {type(err).__name__}: {err}"[:200]) from None
    content = "\n".join(pages)
    if annotations:
        content += " Annotations " + " ".join(annotations)
    meta = [str(info.get(key) or "").strip() for key in ("/Author", "/Subject", "/Keywords")]
    return Prepared(title=str(info.get("/Title") or "").strip(), content=content,
                    metadata=" ".join([f"p.{len(pages)}", *filter(None, meta)]))
