"""PDF by PDFium (pypdfium2's wheel carries it) and pypdf (pure Python): nothing to install. Page text (PDFium's,
pypdf's where PDFium reads none: :func:`_pages`), then annotations (author, subject, comment) after
" Annotations " and "p.<pages> <author> <subject> <keywords>" as metadata, as regain's PdfBoxPreparator
did. An encrypted PDF is read when its user password is empty, as viewers open it without asking. A page
that cannot be read (a damaged content stream) costs that page only: the others are kept, and the
document's report line names the pages lost, as Tika reads such files.

A page without a usable text layer (none, or evidently garbage: :func:`usable`) is rendered by PDFium at
``ocr.dpi`` and its text recognised by tesseract (``ocr``), within the ``ocr:`` bounds (pages per document,
pixels per page, time per page); a page with a usable layer is never rendered. A mixed PDF gets both, in page
order; the document is marked ``ocr: true`` with ``ocr_pages``, and pages skipped by a bound are its report
line. File attachments (and a portfolio's documents) are prepared by their own type and inlined
(``embedded``)."""

from __future__ import annotations

import hashlib
import io
import re
import unicodedata

from beamtrawl.transforms.preparators import embedded, ocr
from beamtrawl.transforms.preparators.base import PreparationError, Prepared

MIME_TYPES = ("application/pdf",)
REVISION = 6  # part of the preparation fingerprint (base.py): 1 keeps the readable pages of a PDF with bad ones;
# 2 inlines its file attachments (embedded); 3 OCRs the pages without a text layer; 4 annotations' authors, subjects;
# 5 page text by PDFium; 6 a form's filled-in values, bookmarks as headlines, links' targets as furniture
DEFAULTS = (("ocr", ocr.DEFAULT),)
helpers_needed = ocr.helpers_needed
MAX_FIELDS = 10_000  # form fields and bookmarks read, at most
MIN_LETTERS = 3  # a page with fewer letters or digits has no text layer worth the name
_BAD_CATEGORIES = ("Co", "Cn", "Cc", "Cs")  # private use, unassigned, control: what a broken font encoding yields
_LETTERS = re.compile(r"[^\W_]" + r"(?:.*?[^\W_])" * (MIN_LETTERS - 1), re.DOTALL)  # MIN_LETTERS of them
_CONTROL = re.compile("[" + re.escape("".join(chr(code) for code in range(0x100) if unicodedata.category(chr(code))
                                              == "Cc" and not chr(code).isspace())) + "]")  # Latin-1's bad ones
_WIDE = re.compile(r"[^\x00-\xff]")
_UNAUTHORED = ("/Widget", "/Link", "/Popup")  # annotations whose /T is no author (a field's name) or absent


def _annotations(page) -> list[str]:
    """Each markup annotation's author (/T), subject (/Subj) and text (/Contents), as Tika writes them; a
    form field's /T is its name and a link's is none, so those give only their /Contents."""
    found = []
    for annotation in page.get("/Annots") or ():
        annotation = annotation.get_object()
        keys = ("/Contents",) if annotation.get("/Subtype") in _UNAUTHORED else ("/T", "/Subj", "/Contents")
        texts = (str(annotation.get(key) or "").strip() for key in keys)
        found.append(" ".join(text for text in texts if text))
    return [text for text in found if text]


def prepare_pdf(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    from pypdf import PdfReader  # loaded on the first PDF, not at every start-up
    from pypdf.errors import FileNotDecryptedError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise PreparationError("encrypted")
        pages, lost = _pages(reader, data, (PyPdfError, ValueError, KeyError, TypeError, AttributeError))
        annotations = [text for page in reader.pages for text in _safe_annotations(page)]
        failed: list[str] = []
        fields, bookmarks, links = (_guarded(read, reader, failed) for read in (_form_fields, _bookmarks, _links))
        info = reader.metadata or {}
        attached = _attachments(reader)
    except FileNotDecryptedError:
        raise PreparationError("encrypted") from None
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise PreparationError(f"not readable as PDF: {type(err).__name__}: {err}"[:200]) from None
    settings = ocr.settings_of(params)
    unread = [number for number, text in enumerate(pages) if not usable(text)] if settings.enabled else []
    recognised, skipped = _guarded_ocr(data, pages, unread, settings) if unread else ({}, [])
    pages = [recognised.get(number, text) for number, text in enumerate(pages)]
    if lost and not any(pages):
        raise PreparationError(f"not readable as PDF: {lost[0][1]}"[:200])
    content = "\n".join([*pages, *fields])
    if annotations:
        content += " Annotations " + " ".join(annotations)
    meta = [str(info.get(key) or "").strip() for key in ("/Author", "/Subject", "/Keywords")]
    lost = [(n, why) for n, why in lost if n - 1 not in recognised]  # OCR read what pypdf could not
    partial = (f"{len(lost)} of {len(pages)} pages unreadable (page {', '.join(str(n) for n, _ in lost)}: "
               f"{lost[0][1]})"[:300] if lost else "")
    if skipped or failed:
        partial = "; ".join(filter(None, [partial, *skipped, *failed]))[:300]
    marks = {ocr.PAGES_FIELD: str(len(recognised))} if recognised else {}
    if any(recognised.values()):
        marks[ocr.FIELD] = "true"
    prepared = Prepared(title=str(info.get("/Title") or "").strip(), content=content, headlines=bookmarks,
                        metadata=" ".join([f"p.{len(pages)}", *filter(None, meta)]), partial=partial, fields=marks,
                        furniture="\n".join(links))
    return embedded.inline(prepared, ((name, lambda b=body: io.BytesIO(b)) for name, body in attached), url)


def _guarded(read, reader, failed: list[str]) -> list[str]:
    """What ``read`` finds in the document's catalogue, or nothing when that part is damaged (the pages are kept,
    and ``failed`` says what was lost: a form's values went silently)."""
    try:
        return read(reader)
    except Exception as err:  # noqa: BLE001 - pypdf raises what a damaged dictionary makes it raise
        failed.append(f"{read.__name__.strip('_').replace('_', ' ')} unreadable ({type(err).__name__}: {err})"[:200])
        return []


def _resolved(value):
    """The object an indirect reference names, or ``value`` itself."""
    from pypdf.generic import IndirectObject

    return value.get_object() if isinstance(value, IndirectObject) else value


def _first_visit(reference, seen: set) -> bool:
    """Whether the walk of a form's fields or an outline meets ``reference`` for the first time (noted in ``seen``)."""
    from pypdf.generic import IndirectObject

    key = (reference.idnum, reference.generation) if isinstance(reference, IndirectObject) else id(reference)
    if key in seen:
        return False
    seen.add(key)
    return True


def _form_fields(reader) -> list[str]:
    """A filled-in form's values, a line each: ``label: value``, the label the field's tooltip (what a reader of the
    form sees beside it) or its name. PDFium's page text holds none of them (they are drawn by the fields' own
    appearance streams), so a form's answers were unsearchable; Tika reads them. Unfilled fields, an unchecked box
    (``Off``) and signatures give no line. The fields (``/Fields`` and their ``/Kids``) are walked here, each once,
    up to MAX_FIELDS of them, not through pypdf's ``get_fields``, which reads every field before the first is used
    (100,000 took 6 s and 350 MB) and fails on the whole form for one radio button without an appearance."""
    from pypdf.generic import ArrayObject, DictionaryObject, NameObject

    form = _resolved(reader.trailer["/Root"].get_object().get("/AcroForm"))
    fields = _resolved(form.get("/Fields")) if isinstance(form, DictionaryObject) else None
    lines, seen = [], set()
    stack = [(field, None) for field in reversed(fields)] if isinstance(fields, ArrayObject) else []
    while stack and len(seen) < MAX_FIELDS:
        reference, kind = stack.pop()
        if not _first_visit(reference, seen):  # fields can loop
            continue
        field = _resolved(reference)
        if not isinstance(field, DictionaryObject):
            continue
        kind = _resolved(field.get("/FT")) or kind  # inherited by the field's kids
        if isinstance(kids := _resolved(field.get("/Kids")), ArrayObject):
            stack += [(kid, kind) for kid in reversed(kids)]
        name = _resolved(field.get("/T")) or _resolved(field.get("/TM"))
        if name is None:  # a widget of the field above it
            continue
        value = _resolved(field.get("/V"))
        values = value if isinstance(value, list) else [value]
        text = ", ".join(v[1:] if isinstance(v, NameObject) else " ".join(v.split()) for v in values if isinstance(v, str))
        if text and text != "Off" and kind != "/Sig":
            label = " ".join(str(_resolved(field.get("/TU")) or str(name).split("[")[0]).split())
            lines.append(f"{label}: {text}")
    return list(dict.fromkeys(lines))


def _bookmarks(reader) -> list[str]:
    """The titles of the document's outline (its bookmarks: a table of contents), up to MAX_FIELDS, as headlines,
    in reading order (an item, its children, then the items after it). Walked here, each item once, not through
    pypdf's ``outline``, which builds every item before the first is read: 60,000 bookmarks took 8 s and 400 MB."""
    from pypdf.generic import DictionaryObject

    outlines = _resolved(reader.trailer["/Root"].get_object().get("/Outlines"))
    titles, seen = [], set()
    stack = [outlines.get("/First")] if isinstance(outlines, DictionaryObject) else []
    while stack and len(titles) < MAX_FIELDS:
        reference = stack.pop()
        if reference is None or not _first_visit(reference, seen):  # an outline can loop
            continue
        item = _resolved(reference)
        if isinstance(item, DictionaryObject):
            if title := " ".join(str(item.get("/Title") or "").split()):
                titles.append(title)
            stack += [item.get("/Next"), item.get("/First")]
    return titles


def _attachments(reader) -> list[tuple[str, bytes]]:
    """(name, bytes) of the PDF's embedded files (attachments, a portfolio's documents); none when its
    name tree is damaged (the pages' text is kept)."""
    try:
        return [(name, body) for name, bodies in reader.attachments.items() for body in bodies]
    except Exception:  # noqa: BLE001 - pypdf raises what a damaged name tree makes it raise
        return []


def usable(text: str) -> bool:
    """Whether a page's text layer is worth reading: some letters, and not mostly the private-use, control or
    replacement characters a font without a Unicode map gives. Decided for every page of every PDF, so by
    regular expressions: only characters past Latin-1 are looked up one by one."""
    if not _LETTERS.search(text):
        return False
    visible = len("".join(text.split()))
    bad = len(_CONTROL.findall(text)) + sum(
        char == "\ufffd" or unicodedata.category(char) in _BAD_CATEGORIES for char in _WIDE.findall(text))
    return bad <= 0.1 * visible  # dot leaders and tables are text: a letter ratio would OCR them


def _guarded_ocr(data: bytes, pages: list[str], numbers: list[int], settings) -> tuple[dict[int, str], list[str]]:
    """:func:`_ocr`, whose failure (a PDF PDFium chokes on) costs the scanned pages only, never the text layer."""
    try:
        return _ocr(data, pages, numbers, settings)
    except Exception as err:  # noqa: BLE001 - see above
        return {}, [f"pages without text not OCR'd: {type(err).__name__}: {' '.join(str(err).split())}"[:200]]


def _scanned(document, number: int, text: str) -> bool:
    """Whether a page without a usable text layer holds text to recognise: a picture (a scan, a photographed
    page), or glyphs whose text layer is garbage. A blank page, or one of only lines and shapes, is not
    rendered: a text PDF's empty pages cost a look at their objects, not an OCR."""
    import pypdfium2.raw as pdfium

    if len("".join(text.split())) >= 20:  # glyphs enough to be a page's text, read as garbage
        return True
    page = document[number]
    try:
        return any(True for _ in page.get_objects(filter=(pdfium.FPDF_PAGEOBJ_IMAGE,), max_depth=4))
    finally:
        page.close()


def _ocr(data: bytes, pages: list[str], numbers: list[int], settings) -> tuple[dict[int, str], list[str]]:
    """({page index: recognised text}, why pages were skipped) for those of the pages ``numbers`` (0-based,
    their text layers unusable) that hold text to recognise."""
    import pypdfium2

    content_hash = hashlib.sha256(data).hexdigest()
    cache, budget = ocr.Cache(settings), ocr.allowance(settings)
    recognised, skipped = {}, []
    try:
        document = pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError as err:
        return {}, [f"pages without text not OCR'd: PDFium cannot open the file ({err})"[:200]]
    try:
        numbers = [number for number in numbers if _scanned(document, number, pages[number])]
        granted = budget.take_pages(len(numbers))
        if granted < len(numbers):
            over = numbers[granted:]
            skipped.append(f"{len(over)} pages without text not OCR'd (from page {over[0] + 1}): "
                           f"{ocr.over_pages(settings)}")
            numbers = numbers[:granted]
        for number in numbers:
            key = ocr.page_key(content_hash, number, settings, settings.dpi)
            try:
                text = cache.get(key)
                recognised[number] = text if text is not None else _page(document, number, settings, key, budget)
            except ocr.Skipped as err:
                skipped.append(f"page {number + 1}: {err}")
            except pypdfium2.PdfiumError as err:
                skipped.append(f"page {number + 1}: not rendered: {err}"[:200])
    finally:
        document.close()
    budget.read(list(recognised.values()), skipped)
    return recognised, skipped


def _page(document, number: int, settings, key: str, budget) -> str:
    """Render one page at ``ocr.dpi`` (its pixels checked first) and recognise its text."""
    page = document[number]
    try:
        width, height = (round(side * settings.dpi / 72) for side in page.get_size())
        if width * height > settings.max_pixels:
            raise ocr.Skipped(f"{width}×{height} pixels at {settings.dpi} dpi, over ocr.max_pixels "
                              f"({settings.max_pixels})")
        image = page.render(scale=settings.dpi / 72, grayscale=True).to_pil()
    finally:
        page.close()
    return ocr.recognise(image, settings, key, budget)


def _pages(reader, data: bytes, errors) -> tuple[list[str], list[tuple[int, str]]]:
    """(each page's text, "" for one that cannot be read; (page number, why) of those). PDFium reads each page's
    text layer (C++, some fifteen times cheaper than pypdf's content-stream parsing in Python); pypdf reads a page
    PDFium cannot open or finds no usable text on, and every page of a file PDFium refuses (a damaged
    cross-reference table, a password PDFium will not try)."""
    document = _pdfium_document(data)
    pages, lost = [], []
    try:
        for number, page in enumerate(reader.pages, 1):
            text = _pdfium_text(document, number - 1) if document is not None else None
            if text is not None and usable(text):
                pages.append(text)
                continue
            try:
                pages.append((page.extract_text() or "").strip())
            except errors as err:
                pages.append(text or "")
                lost.append((number, f"{type(err).__name__}: {' '.join(str(err).split())}"[:120]))
    finally:
        if document is not None:
            document.close()
    return pages, lost


def _pdfium_document(data: bytes):
    import pypdfium2

    try:
        return pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError:
        return None


def _pdfium_text(document, index: int) -> str | None:
    """A page's text by PDFium, in content order; None when PDFium cannot load the page. PDFium joins a word
    hyphenated at a line's end and marks the join with U+FFFE: the printed hyphen is put back, as pypdf and Tika
    read it."""
    import pypdfium2

    if index >= len(document):
        return None
    try:
        page = document[index]
        try:
            textpage = page.get_textpage()
            try:
                text = textpage.get_text_range()
            finally:
                textpage.close()
        finally:
            page.close()
    except pypdfium2.PdfiumError:
        return None
    return text.replace("\r\n", "\n").replace("\ufffe", "-").strip()


def _links(reader) -> list[str]:
    """The targets of the link annotations (``/A /URI``), each once, up to MAX_FIELDS: for the furniture field
    (searched, never shown), as a link's address is no text of the page."""
    found: dict[str, None] = {}
    for page in reader.pages:
        for annotation in page.get("/Annots") or ():
            action = annotation.get_object().get("/A")
            uri = action.get_object().get("/URI") if action is not None else None
            if isinstance(uri, str) and uri.strip():
                found[" ".join(uri.split())] = None
                if len(found) >= MAX_FIELDS:
                    return list(found)
    return list(found)


def _safe_annotations(page) -> list[str]:
    try:
        return _annotations(page)
    except Exception:  # noqa: BLE001 - a damaged annotation costs that annotation's text only
        return []
