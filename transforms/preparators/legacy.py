"""Legacy Microsoft Office binaries (Word 97–2003 .doc, Excel 97–2003 .xls, PowerPoint 97–2003 .ppt).

All three are OLE2 compound files, read with olefile (but for Excel 2.x–4.0 worksheets: bare BIFF streams); the SummaryInformation stream gives the title and
the metadata (author, subject, keywords, comments) for each. XLS cells come from xlrd. DOC and PPT text
is read here from the streams, as the format specifications ([MS-DOC] piece table, [MS-PPT] text atoms)
describe: both are a few dozen lines over olefile; an XLS's text boxes, charts' titles and drawn pictures come
from ``xls_drawing``, a PPT's comments from their Comment10 records. Embedded OLE objects (a workbook in a Word file, a PDF
in a presentation) are prepared by their own type and inlined (``ole_objects``, ``embedded``). Why not antiword/catdoc through the external
preparator: they are unmaintained (antiword's last release was 2005), need a Debian package on every
worker (Flink, Dataflow) and a process per document; these readers are pure Python and in-process.
"""

from __future__ import annotations

import io
import re
import struct

import olefile
from beamtrawl.transforms.preparators import embedded, encrypted, ole_objects, xls_drawing
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.cell_format import displayed, header_footer_text

REVISION = 5  # part of the preparation fingerprint (base.py): 1 shows an XLS sheet's cells as their formats do;
# 2 inlines embedded OLE objects (ole_objects), reads cells' comments, Excel 2-4 sheets, default-password workbooks;
# 3 reads XLS sheet names as headlines, text boxes, chart titles and metafile pictures (xls_drawing), PPT comments, Word objects' pictures;
# 4 reads sheets' headers and footers; 5 an embedded MS Graph chart's datasheet

DOC_TYPES = ("application/msword", "application/vnd.ms-word")
XLS_TYPES = ("application/vnd.ms-excel", "application/msexcel")
PPT_TYPES = ("application/vnd.ms-powerpoint", "application/mspowerpoint")
# libmagic names many OLE2 files only "Composite Document File V2" without saying which application.
OLE_TYPES = ("application/x-ole-storage", "application/CDFV2", "application/vnd.ms-office")
MIME_TYPES = DOC_TYPES + XLS_TYPES + PPT_TYPES + OLE_TYPES

_FIELD_CODE = re.compile(r"\x13[^\x13\x14\x15]*\x14")  # { field code | shown result } -> result
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f]")
_PPT_TEXT_CHARS, _PPT_TEXT_BYTES, _PPT_MAIN_MASTER = 0x0FA0, 0x0FA8, 0x03F8
_PPT_COMMENT, _PPT_CSTRING = 0x2EE0, 0x0FBA  # Comment10Container; its CStrings: author, text, initials
_PPT_TAG_BLOB = 0x138B  # BinaryTagDataBlob: records (a slide's comments among them) though not marked a container
_HEADER_FOOTER_RECORDS = (0x0014, 0x0015)  # HEADER, FOOTER
_BARE_BIFF_BOF = (0x0009, 0x0209, 0x0409)  # BIFF2, BIFF3, BIFF4; BIFF5 and later live in a compound file


def open_ole(data: bytes) -> olefile.OleFileIO:
    if data[:8] != olefile.MAGIC:
        raise PreparationError("not an OLE2 compound file (legacy Office)")
    try:
        return olefile.OleFileIO(data)
    except (OSError, ValueError, struct.error, IndexError) as err:
        raise PreparationError(f"not readable as an OLE2 compound file: {err}"[:200]) from None


def ole_stream(data: bytes, stream: str, what: str) -> tuple[bytes, str, str]:
    """(the stream's bytes, title, "author subject keywords comments") of an OLE2 file of one program, which
    must hold ``stream``; ``what`` names the program's file in the errors."""
    ole = open_ole(data)
    try:
        if not ole.exists(stream):
            raise PreparationError(f"no {stream} stream: not a {what}")
        contents = ole.openstream(stream).read()
        title, metadata = summary(ole)
    except (OSError, ValueError, struct.error, IndexError) as err:
        raise PreparationError(f"not readable as a {what}: {type(err).__name__}: {err}"[:200]) from None
    finally:
        ole.close()
    return contents, title, metadata


def summary(ole: olefile.OleFileIO) -> tuple[str, str]:
    """(title, "author subject keywords comments") from SummaryInformation."""
    try:
        meta = ole.get_metadata()
    except Exception:  # noqa: BLE001 - a damaged property stream loses metadata, not the text
        return "", ""
    codepage = f"cp{meta.codepage}" if meta.codepage and meta.codepage not in (1200, 65001) else "cp1252"

    def text(value) -> str:
        if isinstance(value, bytes):
            try:
                value = value.decode(codepage)
            except (LookupError, UnicodeDecodeError):
                value = value.decode("latin-1")
        return " ".join(str(value or "").replace("\0", " ").split())

    values = (text(getattr(meta, name)) for name in ("author", "subject", "keywords", "comments"))
    return text(meta.title), " ".join(v for v in values if v)


def _doc_text(ole: olefile.OleFileIO) -> str:
    """The text of a Word 97+ document through its piece table ([MS-DOC] 2.8.35 Clx, 2.9.177 Pcd)."""
    if not ole.exists("WordDocument"):
        raise PreparationError("no WordDocument stream: not a Word document")
    word = ole.openstream("WordDocument").read()
    ident, nfib, _, _, _, flags = struct.unpack_from("<HHHHHH", word, 0)
    if ident != 0xA5EC or nfib < 101:
        raise PreparationError("Word 6/95 or older document: not supported")
    if flags & 0x0100:
        raise PreparationError("encrypted")
    table_name = "1Table" if flags & 0x0200 else "0Table"
    csw = struct.unpack_from("<H", word, 32)[0]
    cslw = struct.unpack_from("<H", word, 34 + csw * 2)[0]
    fc_lcb = 34 + csw * 2 + 2 + cslw * 4 + 2
    fc_clx, lcb_clx = struct.unpack_from("<II", word, fc_lcb + 33 * 8)
    if not ole.exists(table_name):
        raise PreparationError(f"no {table_name} stream")
    clx = ole.openstream(table_name).read()[fc_clx:fc_clx + lcb_clx]
    pos = 0
    while pos < len(clx) and clx[pos] == 0x01:  # Prc: property modifiers, skipped
        pos += 3 + struct.unpack_from("<H", clx, pos + 1)[0]
    if pos >= len(clx) or clx[pos] != 0x02:
        raise PreparationError("no piece table in the document")
    lcb = struct.unpack_from("<I", clx, pos + 1)[0]
    plc = clx[pos + 5:pos + 5 + lcb]
    count = (len(plc) - 4) // 12
    cps = struct.unpack_from(f"<{count + 1}I", plc, 0)
    parts = []
    for i in range(count):
        fc = struct.unpack_from("<I", plc, (count + 1) * 4 + i * 8 + 2)[0]
        chars = cps[i + 1] - cps[i]
        if fc & 0x40000000:  # compressed: 8-bit cp1252 at fc/2
            start = (fc & ~0x40000000) // 2
            parts.append(word[start:start + chars].decode("cp1252", "replace"))
        else:
            parts.append(word[fc:fc + 2 * chars].decode("utf-16-le", "replace"))
    text = _FIELD_CODE.sub("", "".join(parts))
    text = text.replace("\x07\x07", "\n").replace("\r", "\n").replace("\x0b", "\n").replace("\x0c", "\n")
    text = text.replace("\x07", "\t")  # cell marks; two end a table row
    text = _CONTROL.sub("", text)
    return "\n".join(line.strip() for line in text.split("\n") if line.strip())


def _ppt_text(ole: olefile.OleFileIO) -> str:
    """Text atoms of a PowerPoint 97+ file ([MS-PPT] TextCharsAtom, TextBytesAtom), in stream order,
    without the master slides' placeholder prompts."""
    if not ole.exists("PowerPoint Document"):
        raise PreparationError("no 'PowerPoint Document' stream: not a presentation")
    stream = ole.openstream("PowerPoint Document").read()
    texts: list[str] = []
    stack = [(0, len(stream))]
    while stack:
        pos, end = stack.pop()
        while pos + 8 <= end:
            ver_instance, kind, length = struct.unpack_from("<HHI", stream, pos)
            body = pos + 8
            if kind == _PPT_COMMENT:
                texts.append(_ppt_comment(stream[body:body + length]))
            elif (ver_instance & 0xF) == 0xF or kind == _PPT_TAG_BLOB:  # a container: its children, then the rest
                if kind != _PPT_MAIN_MASTER:
                    stack.append((body + length, end))
                    end = min(body + length, end)
                    pos = body
                    continue
            elif kind == _PPT_TEXT_CHARS:
                texts.append(stream[body:body + length].decode("utf-16-le", "replace"))
            elif kind == _PPT_TEXT_BYTES:
                texts.append(stream[body:body + length].decode("latin-1"))
            pos = body + length
    lines = (" ".join(_CONTROL.sub(" ", t.replace("\r", "\n").replace("\x0b", "\n")).split()) for t in texts)
    return "\n".join(dict.fromkeys(line for line in lines if line))


def _ppt_comment(container: bytes) -> str:
    """A comment as Tika writes it: "author (initials) - text", from the container's CString atoms."""
    strings = {}
    pos = 0
    while pos + 8 <= len(container):
        ver_instance, kind, length = struct.unpack_from("<HHI", container, pos)
        if kind == _PPT_CSTRING:
            strings[ver_instance >> 4] = container[pos + 8:pos + 8 + length].decode("utf-16-le", "replace")
        pos += 8 + length
    author, text, initials = (strings.get(i, "") for i in range(3))
    return f"{author} ({initials}) - {text}" if initials else f"{author} - {text}" if author else text


def _open_book(data: bytes, decrypted: bool = False):
    """xlrd's workbook, with the cells' formats where xlrd reads them and the values alone where not (an
    old BIFF); one encrypted with Excel's default password is decrypted first (``encrypted``)."""
    import xlrd  # loaded on the first spreadsheet

    try:
        return xlrd.open_workbook(file_contents=data, on_demand=True, formatting_info=True, logfile=io.StringIO())
    except NotImplementedError:
        pass
    except xlrd.XLRDError as err:
        if "encrypted" in str(err):
            plain = None if decrypted else encrypted.decrypt(data)
            if plain is None:
                raise PreparationError(encrypted.NOT_DEFAULT) from None
            return _open_book(plain, decrypted=True)
    try:
        return xlrd.open_workbook(file_contents=data, on_demand=True, logfile=io.StringIO())  # says BIFF4 has no on_demand
    except xlrd.XLRDError as err:
        raise PreparationError(f"not readable as XLS: {err}"[:200]) from None


def _xls_text(data: bytes) -> tuple[str, list[str]]:
    """(the sheets' names and cells, the names: headlines, as an XLSX's are)."""
    book = _open_book(data)
    try:
        lines, names = [], []
        for index in range(book.nsheets):
            sheet = book.sheet_by_index(index)
            lines.append(sheet.name)
            names.append(sheet.name)
            for row in range(sheet.nrows):
                values = (_cell(book, cell) for cell in sheet.row(row))
                line = " ".join(v for v in values if v)
                if line:
                    lines.append(line)
            notes = getattr(sheet, "cell_note_map", {})  # the cells' comments (read with the formats: BIFF8)
            lines.extend(" ".join(note.text.split()) for _, note in sorted(notes.items()) if note.text.strip())
            book.unload_sheet(index)
        # xlrd keeps the workbook stream as (mem, base, stream_len): the file's bytes, where it starts, its length
        stream = (book.mem or b"")[book.base:book.base + book.stream_len]
        lines.extend(_headers_footers(stream, book.biff_version, book.encoding))
        return "\n".join(lines), names
    finally:
        book.release_resources()


def _headers_footers(stream: bytes, biff: int, encoding: str | None) -> list[str]:
    """The sheets' page headers and footers (HEADER and FOOTER records), each once, without Excel's codes:
    xlrd does not read them."""
    lines, at = [], 0
    while at + 4 <= len(stream):
        kind, size = struct.unpack_from("<HH", stream, at)
        body, at = stream[at + 4:at + 4 + size], at + 4 + size
        if kind in _HEADER_FOOTER_RECORDS and body:
            line = header_footer_text(_biff_string(body, biff, encoding))
            if line and line not in lines:
                lines.append(line)
    return lines


def _biff_string(body: bytes, biff: int, encoding: str | None) -> str:
    """A record's string: BIFF8's 16-bit count, flags and Latin-1 or UTF-16 characters; earlier BIFF's
    8-bit count and bytes in the workbook's code page."""
    if biff >= 80:
        if len(body) < 3:
            return ""
        count, flags = struct.unpack_from("<HB", body)
        return (body[3:3 + 2 * count].decode("utf-16-le", "replace") if flags & 1
                else body[3:3 + count].decode("latin-1"))
    try:
        return body[1:1 + body[0]].decode(encoding or "cp1252", "replace")
    except LookupError:
        return body[1:1 + body[0]].decode("cp1252", "replace")


def _cell(book, cell) -> str:
    """A cell as its number format displays it (a date, not its serial number 43363)."""
    import xlrd

    value = cell.value
    if cell.ctype in (xlrd.XL_CELL_NUMBER, xlrd.XL_CELL_DATE):
        try:
            code = book.format_map[book.xf_list[cell.xf_index].format_key].format_str
        except (IndexError, KeyError, AttributeError, TypeError):  # no formats read
            code = None
        if cell.ctype == xlrd.XL_CELL_DATE:
            try:
                value = xlrd.xldate.xldate_as_datetime(value, book.datemode)
            except (xlrd.xldate.XLDateError, ValueError, OverflowError):
                pass
        return displayed(value, code).strip()
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return "TRUE" if value else "FALSE"
    if cell.ctype == xlrd.XL_CELL_ERROR:
        return ""
    return str(value).strip()


def _is_biff_stream(data: bytes) -> bool:
    """An Excel 2.x–4.0 worksheet: a bare BIFF stream, no compound file around it, opened by a BOF
    record (0x0009, 0x0209, 0x0409) of a few bytes."""
    if len(data) < 8:
        return False
    kind, length = struct.unpack_from("<HH", data, 0)
    return kind in _BARE_BIFF_BOF and 4 <= length <= 16


def _is_graph(ole) -> bool:
    """Is this (an object's storage) an MS Graph chart? Its CompObj stream names the program (``MSGraph.Chart.8``);
    the root's class is the container's when the storage is read in place (``ole_objects``)."""
    return ole.exists("\x01CompObj") and b"MSGraph" in ole.openstream("\x01CompObj").read(4096)


def prepare_legacy_office(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    """Any of the three: the streams inside, not the MIME type, say which (libmagic often cannot)."""
    if _is_biff_stream(data):
        content, headlines = _xls_text(data)
        return Prepared(content=content, headlines=headlines)
    ole = open_ole(data)
    try:
        title, metadata = summary(ole)
        parts, headlines = ole_objects.storage_parts(data), []
        if ole.exists("WordDocument"):
            content = _doc_text(ole)
        elif ole.exists("Workbook"):  # BIFF8: cells, then what is drawn over them
            workbook = ole.openstream("Workbook").read()
            drawing = xls_drawing.read_drawing(workbook)
            if _is_graph(ole):  # a chart embedded in a Word, Excel or PowerPoint file: its datasheet
                sheet = xls_drawing.graph_datasheet(workbook)
                cells, drawing_texts = "\n".join(sheet), [t for t in drawing.texts if t not in " ".join(sheet)]
            else:
                (cells, headlines), drawing_texts = _xls_text(data), drawing.texts
            content = "\n".join(filter(None, (cells, *drawing_texts)))
            parts = [*parts, *drawing.pictures]
        elif ole.exists("Book"):
            content, headlines = _xls_text(data)
        elif ole.exists("PowerPoint Document"):
            content = _ppt_text(ole)
            parts = ole_objects.ppt_parts(ole.openstream("PowerPoint Document").read())
        elif ole.exists("EncryptedPackage"):  # an OOXML file, encrypted
            return encrypted.prepare_encrypted(data, url, mimetype, params)
        else:  # another program's OLE2 file (a StarOffice gallery, an MSI): unsupported, not broken
            return Prepared(title=title, metadata=metadata,
                            partial="an OLE2 file of another program: indexed by its properties only")
    except (struct.error, OSError, IndexError, ValueError) as err:
        raise PreparationError(f"not readable as legacy Office: {type(err).__name__}: {err}"[:200]) from None
    finally:
        ole.close()
    return embedded.inline(Prepared(title=title, content=content, metadata=metadata, headlines=headlines), parts, url)


