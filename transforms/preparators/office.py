"""Office Open XML (DOCX, XLSX, PPTX, their templates and macro-enabled variants) by python-docx, openpyxl
and python-pptx; a Word document's headers, footers, footnotes, endnotes and comments and a presentation's
notes and comments count as its text, as Tika reads them, and so do charts, SmartArt diagrams and a
spreadsheet's text boxes (``drawing_text``). The parts inside the
ZIP, not the MIME type, say which kind it is. (libmagic names some of these files only "Microsoft OOXML",
application/octet-stream, depending on the order of the archive's members; ``mime.MimeSniffer`` names
them from their parts, so this preparator need not accept every unknown binary.) Embedded files, OLE objects
and altChunk parts are prepared by their own type and inlined (``embedded``). A document saved as one XML file
(flat OPC) is read as the package it stands for (``flat_opc``)."""

from __future__ import annotations

import datetime
import io
import re
import zipfile
import zlib
from dataclasses import replace
from xml.sax.saxutils import unescape as xml_unescape

from beamtrawl.transforms.preparators import embedded, flat_opc, xlsb_parts
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.cell_format import displayed, header_footer_text
from beamtrawl.transforms.preparators.drawing_text import bounded_parts, drawing_texts
from beamtrawl.transforms.values import Bounds

REVISION = 14  # part of the preparation fingerprint (base.py): 14 keeps XLSX pictures' alternative text and hyperlinks' targets as furniture; 13 reads a Word paragraph's runs wherever they sit (inline content controls, fields, smart tags) and cells that are content controls, tabs in headers and footers; 12 keeps DOCX and PPTX pictures' alternative text in the furniture field; 11 shows XLSB numbers by their formats and reads a workbook calamine cannot open from its cell records; 10 reads flat OPC files (flat_opc) and tracked insertions; 9 reads XLSB comments, headers and footers; 8 reads shared strings' phonetic readings and sheets' headers and footers; 7 reads tables nested in tables and metafile thumbnails; 6 stops a workbook at max_characters, reads charts, SmartArt and spreadsheet drawings (drawing_text); 5 reads spreadsheet cells' comments; 4 OCRs pictures (embedded); 3 inlines embedded documents and altChunks (embedded); 1 reads every row of a sheet, whatever it declares,
# and a Word document's content controls and text boxes; each kind counts the text its XML holds and reports
# a document read noticeably short of it; 2 reads templates and macro-enabled variants, a Word document's
# headers, footers, footnotes, endnotes and comments, and a presentation's comments; a sheet's cells as their
# number formats display them (cell_format), its name a headline
SHORT_READ = 0.9  # a document read to less than this share of the text its XML holds is reported
# a workbook's cells are read until their text passes max_characters (the crawl keeps at most
# preparation.max_content_length characters of any document, by default as many)
DEFAULTS = (("max_characters", Bounds().max_content_length),)
_MAX_TABLE_NESTING = 20  # deeper tables in tables are not read (Word itself stops near 60)

_WORD, _PPT = "application/vnd.openxmlformats-officedocument.wordprocessingml", \
    "application/vnd.openxmlformats-officedocument.presentationml"
_SHEET = "application/vnd.openxmlformats-officedocument.spreadsheetml"
#: The templates and macro-enabled variants, by the content type of their main part in [Content_Types].xml:
#: (their MIME type, as Tika names them; the main part's content type in the plain document). python-docx
#: and python-pptx refuse any main part but the plain document's ("is not a Word file"): they are handed
#: a copy whose [Content_Types].xml says the plain one (the parts are the same).
VARIANTS = {
    "application/vnd.ms-word.document.macroEnabled.main+xml":
        ("application/vnd.ms-word.document.macroenabled.12", f"{_WORD}.document.main+xml"),
    f"{_WORD}.template.main+xml": (f"{_WORD}.template", f"{_WORD}.document.main+xml"),
    "application/vnd.ms-word.template.macroEnabledTemplate.main+xml":
        ("application/vnd.ms-word.template.macroenabled.12", f"{_WORD}.document.main+xml"),
    "application/vnd.ms-excel.sheet.macroEnabled.main+xml":
        ("application/vnd.ms-excel.sheet.macroenabled.12", f"{_SHEET}.sheet.main+xml"),
    f"{_SHEET}.template.main+xml": (f"{_SHEET}.template", f"{_SHEET}.sheet.main+xml"),
    "application/vnd.ms-excel.template.macroEnabled.main+xml":
        ("application/vnd.ms-excel.template.macroenabled.12", f"{_SHEET}.sheet.main+xml"),
    "application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml":
        ("application/vnd.ms-powerpoint.presentation.macroenabled.12", f"{_PPT}.presentation.main+xml"),
    f"{_PPT}.template.main+xml": (f"{_PPT}.template", f"{_PPT}.presentation.main+xml"),
    "application/vnd.ms-powerpoint.template.macroEnabled.main+xml":
        ("application/vnd.ms-powerpoint.template.macroenabled.12", f"{_PPT}.presentation.main+xml"),
    f"{_PPT}.slideshow.main+xml": (f"{_PPT}.slideshow", f"{_PPT}.presentation.main+xml"),
    "application/vnd.ms-powerpoint.slideshow.macroEnabled.main+xml":
        ("application/vnd.ms-powerpoint.slideshow.macroenabled.12", f"{_PPT}.presentation.main+xml"),
}
XLSB = "application/vnd.ms-excel.sheet.binary.macroenabled.12"  # a workbook of binary parts (xl/workbook.bin)
MIME_TYPES = (f"{_WORD}.document", f"{_SHEET}.sheet", f"{_PPT}.presentation", XLSB, *flat_opc.TYPES.values(),
              *dict.fromkeys(mimetype for mimetype, _plain in VARIANTS.values()))
_CONTENT_TYPE = re.compile(r'ContentType="([^"]+)"')


def variant_of(content_types: bytes) -> str | None:
    """The MIME type of a template or macro-enabled variant, from its [Content_Types].xml; None otherwise."""
    found = (VARIANTS.get(t) for t in _CONTENT_TYPE.findall(content_types.decode("utf-8", "replace")))
    return next((variant[0] for variant in found if variant), None)


def _as_plain(data: bytes) -> io.BytesIO:
    """The document, with a variant's main part declared as the plain document's (see VARIANTS)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    declared = source.read("[Content_Types].xml").decode("utf-8", "replace")
    plain = _CONTENT_TYPE.sub(lambda m: f'ContentType="{VARIANTS.get(m.group(1), (0, m.group(1)))[1]}"', declared)
    if plain == declared:
        return io.BytesIO(data)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as copy:
        for info in source.infolist():
            body = plain.encode("utf-8") if info.filename == "[Content_Types].xml" else source.read(info)
            copy.writestr(info, body)
    out.seek(0)
    return out


def _join(values, separator: str = "\n") -> str:
    return separator.join(t for t in (str(v).strip() for v in values if v is not None) if t)


def _prepared(properties, creator: str, description: str, content: str, headlines=()) -> Prepared:
    """``creator`` and ``description`` name the core properties, which the three libraries call differently."""
    meta = (getattr(properties, name) for name in (creator, "subject", "keywords", description))
    return Prepared(title=(properties.title or "").strip(), content=content, headlines=list(headlines),
                    metadata=" ".join(m.strip() for m in meta if m and m.strip()))


# The Office libraries are imported where used: together they take a quarter of a second to load, which
# every crawl and every worker would pay whether or not it meets an Office file.
def _alt_texts(elements) -> str:
    """The pictures' alternative text (``descr``: what the author wrote for readers who cannot see it, or the
    inserted file's name Word and PowerPoint put there by default), each once: for the furniture field, searched
    and never shown, as it is no text of the page."""
    return _join(dict.fromkeys(text for text in (" ".join((e.get("descr") or "").split()) for e in elements) if text))


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_T, _BR, _SDT, _SDT_CONTENT, _CUSTOM_XML = (f"{_W}{name}" for name in ("t", "br", "sdt", "sdtContent", "customXml"))
_PARAGRAPH, _TABLE, _ROW, _CELL = (f"{_W}{name}" for name in ("p", "tbl", "tr", "tc"))
_CHARACTERS = {f"{_W}tab": "\t", f"{_W}ptab": "\t", f"{_W}cr": "\n", f"{_W}noBreakHyphen": "-"}
# Not the paragraph's own text: text boxes (read as such), tracked deletions and text moved away, the repeat of an
# mc:Choice for older readers, properties.
_NOT_TEXT = {f"{_W}txbxContent", f"{_W}del", f"{_W}moveFrom", _MC_FALLBACK, f"{_W}pPr", f"{_W}rPr"}


def _within_controls(element, *tags: str):
    """``element``'s children of ``tags`` in reading order, those wrapped in content controls (``w:sdt``: a
    template's cover page, a repeating section's rows, a cell that is a control) and custom XML too, which
    python-docx's ``iter_inner_content`` skips."""
    for child in element.iterchildren():
        if child.tag in tags:
            yield child
        elif child.tag == _CUSTOM_XML:
            yield from _within_controls(child, *tags)
        elif child.tag == _SDT and (content := child.find(_SDT_CONTENT)) is not None:
            yield from _within_controls(content, *tags)


def _paragraph_text(paragraph) -> str:
    """A paragraph's text as Word shows it: its runs wherever they sit (hyperlinks, tracked insertions, fields,
    inline content controls, smart tags: python-docx's ``Paragraph.text`` reads runs and hyperlinks only, and lost
    "BigCompany" in a control and "dog" in an insertion), tabs and line breaks as such; not tracked deletions."""
    out, stack = [], list(reversed(paragraph))
    while stack:
        node = stack.pop()
        if node.tag == _T:
            out.append(node.text or "")
        elif node.tag in _CHARACTERS:
            out.append(_CHARACTERS[node.tag])
        elif node.tag == _BR:  # a line break; a page or column break is no character (as python-docx reads it)
            out.append("\n" if node.get(f"{_W}type", "textWrapping") == "textWrapping" else "")
        elif node.tag not in _NOT_TEXT:
            stack.extend(reversed(node))
    return "".join(out)


def _row_text(row, depth: int = 0) -> str:
    """A table row's cells, each as its XML holds it (a merged cell once, a cell that is a content control
    too); a cell's text includes the tables nested in it (a layout of tables in tables, as mail templates
    are made), which python-docx's ``cell.text`` leaves out."""
    cells = []
    for cell in _within_controls(row, _CELL):
        lines = []
        for block in _within_controls(cell, _PARAGRAPH, _TABLE):
            if block.tag == _PARAGRAPH:
                lines.append(_paragraph_text(block))
            elif depth < _MAX_TABLE_NESTING:
                lines.extend(_row_text(inner, depth + 1) for inner in _within_controls(block, _ROW))
        cells.append("\n".join(line for line in lines if line))
    return " ".join(cell for cell in cells if cell)


def _docx(stream, params: dict) -> Prepared:
    import docx
    from docx.oxml.ns import qn

    document = docx.Document(stream)
    # Style names by id, read once: Paragraph.style looks the default style up anew for every paragraph,
    # which took most of the time of a DOCX.
    names = {style.style_id: style.name or "" for style in document.styles}
    blocks, headlines = [], []
    for block in _within_controls(document.element.body, _PARAGRAPH, _TABLE):
        if block.tag == _TABLE:
            blocks.extend(_row_text(row) for row in _within_controls(block, _ROW))
            continue
        text = _paragraph_text(block)
        blocks.append(text)
        style = names.get(block.style, "")  # no style id: the default paragraph style, never a heading
        if style.startswith(("Heading", "Title")) and text.strip():
            headlines.append(text.strip())
    body = document.element.body
    for box in _visible(body.iter(qn("w:txbxContent"))):  # text boxes, which paragraphs do not show
        blocks.append(_join(_paragraph_text(p) for p in box.iter(_PARAGRAPH)))
    parts = _word_parts(document.part.package)
    text = _join([*parts["header"], *blocks, *parts["footer"], *parts["footnotes"], *parts["endnotes"],
                  *parts["comments"]])
    prepared = _prepared(document.core_properties, "author", "comments", text, headlines)
    deleted = qn("w:del")  # a picture deleted with changes tracked is no longer in the document
    prepared.furniture = _alt_texts(e for e in _visible(body.iter(qn("wp:docPr")))
                                    if not any(a.tag == deleted for a in e.iterancestors()))
    _say_if_short(prepared, _characters(_visible(body.iter(qn("w:t")))), "characters")
    return prepared


_WORD_PARTS = re.compile(r"/word/(header|footer|footnotes|endnotes|comments)\d*\.xml")


def _word_parts(package) -> dict[str, list[str]]:
    """The paragraphs of the parts beside the body, as Tika reads them: headers (before the body), footers,
    footnotes, endnotes and comments (after it); a header repeated by each section is read once."""
    from docx.oxml import parse_xml

    found: dict[str, dict[str, None]] = {kind: {} for kind in ("header", "footer", "footnotes", "endnotes",
                                                                 "comments")}
    for part in sorted(package.iter_parts(), key=lambda p: str(p.partname)):
        kind = _WORD_PARTS.fullmatch(str(part.partname))
        if kind is None:
            continue
        for paragraph in parse_xml(part.blob).iter(_PARAGRAPH):
            text = _paragraph_text(paragraph).strip()
            if text:
                found[kind.group(1)][text] = None
    return {kind: list(texts) for kind, texts in found.items()}


def _slide_comments(package) -> list[str]:
    """The text of the comments on slides (``ppt/comments/``: ``p:text`` in the classic form, ``a:t`` in the
    modern one), which python-pptx does not read."""
    from lxml import etree

    texts = []
    for part in sorted(package.iter_parts(), key=lambda p: str(p.partname)):
        if str(part.partname).startswith("/ppt/comments/"):
            root = etree.fromstring(part.blob, etree.XMLParser(resolve_entities=False, no_network=True))
            texts.extend(e.text for e in root.iter() if isinstance(e.tag, str)
                         and etree.QName(e).localname in ("text", "t") and e.text)
    return texts


def _characters(texts) -> int:
    """Characters other than white space in text elements (w:t, a:t)."""
    return sum(len("".join((t.text or "").split())) for t in texts)


def _visible(elements) -> list:
    """The elements not inside a ``mc:Fallback``: its content repeats the ``mc:Choice`` beside it."""
    fallback = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
    return [e for e in elements if not any(a.tag == fallback for a in e.iterancestors())]


def _say_if_short(prepared: Prepared, held: int, unit: str) -> None:
    """Note in ``partial`` (a report line) when the text read falls noticeably short of what the file's
    XML holds, so that text a library skips is never lost without a word."""
    read = len("".join(prepared.content.split()))
    if read < held * SHORT_READ:
        prepared.partial = (f"read {read:,} of the {held:,} {unit} of text the file's XML holds: the rest is in parts "
                            f"the reading library skipped")


def _sheet_lines(workbook, max_characters: int) -> tuple[list[str], list[str], int, bool]:
    """(lines, sheet names, cells with a value read, whether ``max_characters`` stopped the reading)."""
    lines, sheets, read, characters = [], [], 0, 0
    for sheet in workbook.worksheets:
        # Read-only mode stops at the size a sheet declares (``<dimension ref="A1"/>`` in files some
        # writers make, readxl's datasets.xlsx among them): forget it and read every row there is.
        sheet.reset_dimensions()
        lines.append(sheet.title)
        sheets.append(sheet.title)
        for row in sheet.iter_rows():
            line = _join((displayed(cell.value, getattr(cell, "number_format", None)) for cell in row), " ")
            read += sum(cell.value is not None for cell in row)
            lines.append(line)
            characters += len(line) + 1
            if characters > max_characters:
                return lines, sheets, read, True
    return lines, sheets, read, False


def _xlsx(stream, params: dict) -> Prepared:
    import openpyxl

    workbook = openpyxl.load_workbook(stream, read_only=True, data_only=True)
    try:
        lines, sheets, read, stopped = _sheet_lines(workbook, params["max_characters"])
        comments, unread = _sheet_comments(zipfile.ZipFile(stream))
        lines.extend(comments)
        lines.extend(_phonetic_readings(zipfile.ZipFile(stream)))
        if not stopped:  # (past max_characters the rest would be cut: a sheet is not inflated again for them)
            lines.extend(_headers_footers(zipfile.ZipFile(stream)))
        prepared = _prepared(workbook.properties, "creator", "description", _join(lines), sheets)
        prepared.furniture = _furniture(zipfile.ZipFile(stream))
    finally:
        workbook.close()
    if stopped:  # the rest would be cut at max_content_length anyway: reading it cost the time, not the text
        prepared.partial = (f"read the first {read:,} cells: their text reached max_characters "
                            f"({params['max_characters']:,})")
    elif read < (held := _cells_held(zipfile.ZipFile(stream))):
        prepared.partial = (f"read {read:,} of the {held:,} cells the file's sheets hold: the rest is in parts "
                            f"the reading library skipped")
    prepared.partial = "; ".join(filter(None, (prepared.partial, unread)))
    return prepared


_SHEET_COMMENTS = re.compile(r"xl/comments\d*\.xml")
_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def _sheet_comments(archive: zipfile.ZipFile) -> tuple[list[str], str]:
    """The text of the cells' comments (notes), one line each, after the sheets: openpyxl's read-only
    mode skips them. And a report line naming the comments parts that could not be read, or ""."""
    from defusedxml import ElementTree

    lines, lost = [], []
    for name, data in bounded_parts(archive, _SHEET_COMMENTS, lost):
        try:
            root = ElementTree.fromstring(data)
        except (ElementTree.ParseError, ValueError) as err:  # defusedxml's refusals are ValueErrors
            lost.append(f"{name}: {type(err).__name__}: {err}")
            continue
        for comment in root.iter(f"{_MAIN}comment"):
            text = "".join(t.text or "" for t in comment.iter(f"{_MAIN}t"))
            if text.strip():
                lines.append(" ".join(text.split()))
    return lines, (f"{len(lost)} comments parts not read ({lost[0]})"[:200] if lost else "")


#: the drawings over the sheets, and the sheets' relationships (hyperlinks' targets)
_SHEET_PARTS = re.compile(r"xl/drawings/drawing\d*\.xml|xl/worksheets/_rels/sheet\d*\.xml\.rels")
_DRAWING_NAME = "{http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing}cNvPr"
_HYPERLINK = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink"


def _furniture(archive: zipfile.ZipFile) -> str:
    """What is searched but never shown, as for a DOCX and a PPTX: the alternative text of the pictures and shapes
    drawn over the sheets (``xdr:cNvPr/@descr``), then the targets of the cells' hyperlinks (``mailto:``, a URL, a
    file), each once."""
    from defusedxml import ElementTree

    names, targets = [], {}
    for name, data in bounded_parts(archive, _SHEET_PARTS):
        try:
            root = ElementTree.fromstring(data)
        except (ElementTree.ParseError, ValueError):  # defusedxml's refusals are ValueErrors
            continue
        if name.startswith("xl/drawings/"):
            names.extend(root.iter(_DRAWING_NAME))
        else:
            targets.update(dict.fromkeys(" ".join(r.get("Target", "").split()) for r in root
                                         if r.get("Type") == _HYPERLINK and r.get("Target", "").strip()))
    return _join([_alt_texts(names), *targets])


_SHARED_STRINGS = "xl/sharedStrings.xml"


def _holds(archive: zipfile.ZipFile, name: str, marker: bytes) -> bool:
    """Whether a part's bytes hold ``marker``, read a chunk at a time (a marker cut by a chunk's end is found)."""
    previous = b""
    with archive.open(name) as part:
        while chunk := part.read(_CHUNK):
            if marker in previous + chunk[:len(marker)] or marker in chunk:
                return True
            previous = chunk[-len(marker):]
    return False


def _phonetic_readings(archive: zipfile.ZipFile) -> list[str]:
    """Each shared string that carries phonetic readings (Japanese furigana, ``<rPh>``: 豊田 as トヨ タ) as
    the string then its readings, one line each, after the sheets: a search in kana finds the kanji cell,
    and openpyxl drops the readings. Parsed string by string, so a large table is not held as a tree."""
    from defusedxml import ElementTree

    if _SHARED_STRINGS not in archive.namelist():
        return []
    if not _holds(archive, _SHARED_STRINGS, b"<rPh"):
        return []
    lines = []
    try:
        with archive.open(_SHARED_STRINGS) as part:
            for _event, item in ElementTree.iterparse(part):
                if item.tag != f"{_MAIN}si":
                    continue
                readings = [" ".join("".join(t.text or "" for t in run.iter(f"{_MAIN}t")).split())
                            for run in item.iter(f"{_MAIN}rPh")]
                if any(readings):
                    text = "".join(t.text or "" for child in item if child.tag != f"{_MAIN}rPh"
                                   for t in child.iter(f"{_MAIN}t"))
                    lines.append(_join([" ".join(text.split()), *readings], " "))
                item.clear()
    except (ElementTree.ParseError, ValueError):  # defusedxml's refusals are ValueErrors: what was read stays
        pass
    return lines


_HEADER_FOOTER = re.compile(rb"<(?:\w{1,16}:)?headerFooter\b.{0,65536}?</(?:\w{1,16}:)?headerFooter>", re.DOTALL)
_ELEMENT_TEXT = re.compile(rb">([^<]+)<")


def _headers_footers(archive: zipfile.ZipFile) -> list[str]:
    """The text of each sheet's page headers and footers ("Header - For Internal Use Only"), one line each
    and each once, without Excel's codes: openpyxl's read-only mode skips them. Found in the sheet's bytes
    as they are inflated (the element follows the cells), so a large sheet is not parsed twice."""
    lines: list[str] = []
    for name in archive.namelist():
        if not (name.startswith("xl/worksheets/") and name.endswith(".xml")):
            continue
        block = _first_match(archive, name, b"headerFooter", _HEADER_FOOTER, 65536 + 64)
        for raw in _ELEMENT_TEXT.findall(block or b""):
            line = header_footer_text(xml_unescape(raw.decode("utf-8", "replace")))
            if line and line not in lines:
                lines.append(line)
    return lines


def _first_match(archive: zipfile.ZipFile, name: str, marker: bytes, pattern: re.Pattern, longest: int) -> bytes | None:
    """The first match of ``pattern`` (at most ``longest`` bytes, holding ``marker``) in a part, read a chunk
    at a time."""
    buffer = b""
    with archive.open(name) as part:
        while chunk := part.read(_CHUNK):
            buffer = buffer[-longest:] + chunk
            found = pattern.search(buffer) if marker in buffer else None  # find() first: it is memchr-fast
            if found is not None:
                return found.group()
    return None


# A cell's value in the sheet XML: <v> (a number, or a shared string's index) or an inline string <is>.
_CELL_VALUE = re.compile(rb"<(?:\w{1,16}:)?(?:v|is)[\s>/]")
_CHUNK = 1 << 20


def _cells_held(archive: zipfile.ZipFile) -> int:
    """The cells with a value that the worksheets' XML holds, counted in the bytes themselves, so that
    a sheet openpyxl read short is reported rather than lost without a word."""
    overlap = 24  # longer than any match: a match cut by a chunk's end is found whole in the next buffer
    held = 0
    for name in archive.namelist():
        if not (name.startswith("xl/worksheets/") and name.endswith(".xml")):
            continue
        with archive.open(name) as part:
            buffer = b""
            while chunk := part.read(_CHUNK):
                buffer += chunk
                edge = len(buffer) - overlap
                held += sum(1 for m in _CELL_VALUE.finditer(buffer) if m.start() < edge)
                buffer = buffer[max(edge, 0):]
            held += len(_CELL_VALUE.findall(buffer))
    return held


def _shape_texts(shapes):
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    for shape in shapes:
        if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            yield from _shape_texts(shape.shapes)
        elif shape.has_text_frame:
            yield shape.text_frame.text
        elif shape.has_table:
            yield from (cell.text for row in shape.table.rows for cell in row.cells)


def _pptx(stream, params: dict) -> Prepared:
    import pptx
    from pptx.oxml.ns import qn

    presentation = pptx.Presentation(stream)
    texts, held, pictures = [], 0, []
    for slide in presentation.slides:
        texts.extend(_shape_texts(slide.shapes))
        pictures.extend(slide._element.iter(qn("p:cNvPr")))
        held += _characters(_visible(slide._element.iter(qn("a:t"))))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            texts.append(slide.notes_slide.notes_text_frame.text)
            held += _characters(slide.notes_slide.notes_text_frame._txBody.iter(qn("a:t")))
    texts.extend(_slide_comments(presentation.part.package))
    prepared = _prepared(presentation.core_properties, "author", "comments", _join(texts))
    prepared.furniture = _alt_texts(pictures)
    _say_if_short(prepared, held, "characters")
    return prepared


def _xlsb(stream, params: dict) -> Prepared:
    """An XLSB workbook by python-calamine (openpyxl reads no binary parts): each sheet's name, a headline,
    then its rows; numbers as their formats show them (xlsb_parts finds each cell's format, which calamine
    does not give), dates as calamine types them; then the cells' comments and the sheets' headers and
    footers, which calamine skips. A workbook calamine cannot open (Excel 2007 beta 2's) is read from its
    cell records (xlsb_parts.cell_lines), and says so."""
    import python_calamine

    package = zipfile.ZipFile(stream)
    lines, sheets, partial = [], [], ""
    try:
        stream.seek(0)
        workbook = python_calamine.CalamineWorkbook.from_filelike(stream)
        formats = xlsb_parts.number_formats(package)
        for name in workbook.sheet_names:
            lines.append(name)
            sheets.append(name)
            sheet, cells = workbook.get_sheet_by_name(name), formats.get(name, {})
            top, left = sheet.start or (0, 0)  # the rows begin at the first cell with a value
            lines.extend(_join((displayed(v, cells.get((top + r, left + c)) if _formatted(v) else None)
                                for c, v in enumerate(row)), " ") for r, row in enumerate(sheet.to_python()))
    except BaseException as err:  # calamine's Rust panics arrive as BaseException
        if isinstance(err, (KeyboardInterrupt, SystemExit)):
            raise
        problem = f"not readable as XLSB: {type(err).__name__}: {err}"[:200]
        lines, sheets = xlsb_parts.cell_lines(package)
        if not lines:
            raise PreparationError(problem) from None
        partial = f"{problem}; its cells' strings and numbers read without their formats"
    lines.extend([*xlsb_parts.comment_lines(package), *xlsb_parts.header_footer_lines(package)])
    return Prepared(content=_join(lines), headlines=sheets, partial=partial)


def _formatted(value) -> bool:
    """Whether a number format applies to calamine's value (a number or a date; not text, a truth value or a
    duration)."""
    return isinstance(value, (int, float, datetime.date, datetime.time)) and not isinstance(value, bool)


_KINDS = {"word/document.xml": _docx, "xl/workbook.xml": _xlsx, "ppt/presentation.xml": _pptx,
          "xl/workbook.bin": _xlsb}


def prepare_ooxml(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    if mimetype in flat_opc.TYPES.values() and not data.startswith(b"PK"):
        data = flat_opc.package(data)
    try:
        names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
        read = next((read for part, read in _KINDS.items() if part in names), None)
        if read is None:
            raise PreparationError("not an Office Open XML document")
        prepared = read(_as_plain(data), {**dict(DEFAULTS), **params})
    except (zipfile.BadZipFile, zlib.error, KeyError, ValueError, SyntaxError) as err:
        raise PreparationError(f"not readable as Office Open XML: {type(err).__name__}: {err}"[:200]) from None
    package = zipfile.ZipFile(io.BytesIO(data))
    drawn = drawing_texts(package)
    if drawn:
        prepared = replace(prepared, content="\n\n".join((prepared.content, *drawn)).strip())
    return embedded.inline(prepared, embedded.ooxml_parts(package), url)
