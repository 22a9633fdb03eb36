"""OpenDocument text, spreadsheet, presentation and drawing (and their templates) with the standard
library: the text of content.xml in reading order (paragraphs, headings, table rows, slide frames and
notes), then the master pages' text in styles.xml (headers, footers, shapes; their date and time fields as the
``furniture`` field), headings as headlines, and
meta.xml's title, creator, subject, keywords and description. A package without content.xml (a styles
template such as LibreOffice's Default.ott) is a document all the same; only a package that is not a ZIP,
has no OpenDocument mimetype member or holds none of those three parts is refused. XML is parsed by
defusedxml, as these files come from the crawl."""

from __future__ import annotations

import io
import re
import zipfile
import zlib

from beamtrawl.transforms.preparators import embedded
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError, fromstring

MIME_TYPES = (
    "application/vnd.oasis.opendocument.text",
    "application/vnd.oasis.opendocument.spreadsheet",
    "application/vnd.oasis.opendocument.presentation",
    "application/vnd.oasis.opendocument.text-template",
    "application/vnd.oasis.opendocument.spreadsheet-template",
    "application/vnd.oasis.opendocument.presentation-template",
    "application/vnd.oasis.opendocument.graphics",
    "application/vnd.oasis.opendocument.graphics-template",
    "application/vnd.oasis.opendocument.chart",  # an embedded object's own package (embedded)
    "application/vnd.oasis.opendocument.formula",
)
REVISION = 5  # part of the preparation fingerprint (base.py): 3 OCRs pictures (embedded); 1 reads styles.xml and styles-only packages; 2 inlines
# embedded objects (embedded); 4 keeps the dates and times of shown headers and footers in the furniture field; 5 reads
# formula objects as their MathML
_PARTS = ("content.xml", "styles.xml", "meta.xml")  # a package holding none of them is not a document

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "meta": "urn:oasis:names:tc:opendocument:xmlns:meta:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
}


def _q(name: str) -> str:
    prefix, local = name.split(":")
    return f"{{{_NS[prefix]}}}{local}"


_P, _H = _q("text:p"), _q("text:h")
_S, _TAB, _BREAK = _q("text:s"), _q("text:tab"), _q("text:line-break")
_TABLE, _ROW, _CELL = _q("table:table"), _q("table:table-row"), _q("table:table-cell")
_SPACES = re.compile(r"[ \t\r\n]+")
_SPREADSHEET = _q("office:spreadsheet")
_SKIP = {_q("text:tracked-changes"), _q("text:note-citation"), _q("office:forms")}
_BLOCKS = {_P, _H, _ROW, _TABLE, _q("text:list"), _q("text:note"), _q("office:annotation"), _q("draw:frame"),
           _q("draw:custom-shape")}  # in a paragraph, yet their text follows it as lines of their own


def _inline(element, out: list[str], nested: list) -> None:
    """The text of a paragraph into ``out``; blocks nested in it (a frame's, a note's) into ``nested``.
    Runs of white space in the XML count as one space, as ODF says; text:s, text:tab and text:line-break
    are the literal ones."""
    if element.text:
        out.append(_SPACES.sub(" ", element.text))
    for child in element:
        if child.tag == _S:
            out.append(" " * min(int(child.get(_q("text:c")) or 1), 100))  # no memory for a forged count
        elif child.tag == _TAB:
            out.append("\t")
        elif child.tag == _BREAK:
            out.append("\n")
        elif child.tag in _BLOCKS:
            nested.append(child)
        elif child.tag not in _SKIP:
            _inline(child, out, nested)
        if child.tail:
            out.append(_SPACES.sub(" ", child.tail))


def _paragraph(element, lines: list[str], headlines: list[str]) -> None:
    out, nested = [], []
    _inline(element, out, nested)
    text = "".join(out).strip(" ")
    lines.append(text)
    if element.tag == _H and text:
        headlines.append(" ".join(text.split()))
    for child in nested:
        _walk(child, lines, headlines)


def _cell_text(cell) -> str:
    lines: list[str] = []
    _walk_children(cell, lines, [])
    return " ".join(line for line in lines if line)


def _walk(element, lines: list[str], headlines: list[str]) -> None:
    if element.tag in (_P, _H):
        _paragraph(element, lines, headlines)
    elif element.tag == _ROW:
        lines.append(" ".join(t for t in (_cell_text(c) for c in element if c.tag == _CELL) if t))
    elif element.tag == _SPREADSHEET:
        for sheet in element:
            if sheet.tag == _TABLE:  # the sheet's name first, as for XLSX
                lines.append(sheet.get(_q("table:name")) or "")
                _walk_children(sheet, lines, headlines)
            else:
                _walk(sheet, lines, headlines)
    elif element.tag not in _SKIP:
        _walk_children(element, lines, headlines)


def _walk_children(element, lines: list[str], headlines: list[str]) -> None:
    for child in element:
        _walk(child, lines, headlines)


def _content(xml: bytes, lines: list[str], headlines: list[str]) -> None:
    body = fromstring(xml).find("office:body", _NS)
    if body is None:
        raise PreparationError("content.xml has no office:body")
    _walk_children(body, lines, headlines)


# On a master page these show what the page will say when laid out, not what the author wrote: a page
# number, a date, a sheet's name or the title ("???" in a template), a placeholder's prompt ("Click to edit
# the title"); and a header or footer turned off is not shown at all.
_RENDERED = {_q(f"text:{name}") for name in ("page-number", "page-count", "date", "time", "sheet-name",
                                              "file-name", "title")} | {_q("presentation:notes")}
_PLACEHOLDER_CLASS, _DISPLAY = _q("presentation:class"), _q("style:display")
_DATED = {_q("text:date"), _q("text:time")}


def _dates_shown(element, found: list[str]) -> None:
    """The values of the date and time fields in ``element`` that are not in a header or footer turned off."""
    if element.get(_DISPLAY) == "false":
        return
    if element.tag in _DATED:
        found.append(" ".join("".join(element.itertext()).split()))
        return
    for child in element:
        _dates_shown(child, found)


def _master_pages(xml: bytes, lines: list[str]) -> list[str]:
    """The text of styles.xml's master pages: headers, footers and shapes every page shows. Returned: the
    values their date and time fields had when the file was last laid out (``10/26/2011``, ``11:13:57``), a
    date a searcher may look for though no one wrote it, for the furniture field (searched, never shown)."""
    masters = fromstring(xml).find("office:master-styles", _NS)
    if masters is None:
        return []
    dates: list[str] = []
    _dates_shown(masters, dates)
    hidden = [e for e in masters.iter()
              if e.tag in _RENDERED or e.get(_PLACEHOLDER_CLASS) or e.get(_DISPLAY) == "false"]
    for element in hidden:
        tail = element.tail
        element.clear()
        element.tail = tail
    _walk_children(masters, lines, [])
    return list(dict.fromkeys(d for d in dates if d))


def _meta(xml: bytes) -> tuple[str, str]:
    meta = fromstring(xml).find("office:meta", _NS)
    if meta is None:
        return "", ""

    def texts(path: str) -> list[str]:
        return [" ".join(e.text.split()) for e in meta.iterfind(path, _NS) if e.text and e.text.strip()]

    creator = texts("dc:creator") or texts("meta:initial-creator")
    values = [*creator[:1], *texts("dc:subject"), *texts("meta:keyword"), *texts("dc:description")]
    return " ".join(texts("dc:title")[:1]), " ".join(values)


def prepare_odf(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            _check_package(archive, names)
            lines: list[str] = []
            headlines: list[str] = []
            if "content.xml" in names:
                _content(archive.read("content.xml"), lines, headlines)
            dates = _master_pages(archive.read("styles.xml"), lines) if "styles.xml" in names else []
            title, metadata = _meta(archive.read("meta.xml")) if "meta.xml" in names else ("", "")
            content = "\n".join(line for line in lines if line)
            prepared = Prepared(title=title, content=content, headlines=headlines, metadata=metadata,
                                furniture="\n".join(dates))
            return embedded.inline(prepared, embedded.odf_parts(archive), url)
    except (zipfile.BadZipFile, zlib.error, KeyError, ValueError, EOFError, ParseError, DefusedXmlException) as err:
        raise PreparationError(f"not readable as OpenDocument: {type(err).__name__}: {err}"[:200]) from None



def _check_package(archive: zipfile.ZipFile, names: set[str]) -> None:
    """An OpenDocument package names its type in a ``mimetype`` member and holds at least one of the
    parts a document is made of; anything else is another kind of ZIP or a broken package."""
    if "mimetype" not in names:
        raise PreparationError("not an OpenDocument file: no mimetype member")
    declared = archive.open("mimetype").read(200).decode("ascii", "replace").strip()
    if not declared.startswith("application/vnd.oasis.opendocument."):
        raise PreparationError(f"not an OpenDocument file: mimetype {declared[:80]!r}")
    if names.isdisjoint(_PARTS):
        raise PreparationError(f"broken OpenDocument package: none of {', '.join(_PARTS)}")
