"""What python-calamine does not read of an XLSB workbook: its cells' comments (``xl/comments*.bin``), its
sheets' page headers and footers (``xl/worksheets/sheet*.bin``) and its numbers' formats (``xl/styles.bin``
and each number cell's style), from their BIFF12 records ([MS-XLSB] 2.1.4: a record's type and size as 7-bit
varints, then its data); and the cells (strings, shared ones too, and numbers) of a workbook calamine cannot
open at all (Excel 2007 beta 2's). The text is written as for XLSX: each comment a line, after the sheets; each
header and footer without Excel's codes (cell_format.header_footer_text); a number as its format shows it.
A part cut short or holding nonsense ends its records where it stops making sense; it never fails the file."""

from __future__ import annotations

import posixpath
import re
import struct
import zipfile
from collections.abc import Iterator

from beamtrawl.transforms.preparators.cell_format import header_footer_text
from defusedxml import ElementTree

_COMMENT_AUTHOR, _BEGIN_COMMENT, _COMMENT_TEXT = 632, 635, 637  # BrtCommentAuthor, BrtBeginComment, BrtCommentText
_COMMENTS = re.compile(r"xl/comments\d*\.bin")
_SHEETS = re.compile(r"xl/worksheets/sheet\d*\.bin")
_MAX_PART = 64 * 2**20  # a comments or sheet part read whole at most this long (the archive's bounds came first)
_MAX_RECORDS = 500_000  # a comments part walked this far at most: 64 MiB of zeros are 32 million empty records
_ROW, _RK_CELL, _SHARED_CELL = 0, 2, 7  # BrtRowHdr, BrtCellRk, BrtCellIsst
_REAL_CELLS, _STRING_CELLS = (5, 9), (6, 8)  # BrtCellReal and BrtFmlaNum, BrtCellSt and BrtFmlaString
_NUMBER_CELLS = (_RK_CELL, *_REAL_CELLS)
_FORMAT, _BEGIN_CELL_XFS, _XF, _END_CELL_XFS = 44, 617, 47, 618  # BrtFmt, BrtBeginCellXFs, BrtXF, BrtEndCellXFs
_SHEET, _SHARED_STRING = 156, 19  # BrtBundleSh, BrtSSTItem
_RELATIONSHIP = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_HEADER_FOOTER_TAG = b"\xdf\x03"  # BrtBeginHeaderFooter's type (479) as its varint; then 2 bytes of flags, six strings


def _varint(data: bytes, at: int, most: int) -> tuple[int, int]:
    value = 0
    for shift in range(most):
        if at >= len(data):
            raise IndexError(at)
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << (7 * shift)
        if byte < 0x80:
            return value, at
    return value, at


def records(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(type, data) of each record of a BIFF12 part, until its end, the first record that overruns it or
    ``_MAX_RECORDS``."""
    at = 0
    try:
        for _ in range(_MAX_RECORDS):
            if at >= len(data):
                return
            kind, at = _varint(data, at, 2)
            size, at = _varint(data, at, 4)
            if at + size > len(data):
                return
            yield kind, data[at:at + size]
            at += size
    except IndexError:
        return


def _wide_string(data: bytes, at: int) -> tuple[str | None, int]:
    """An XLWideString (a count of UTF-16 units, then them) at ``at``; None for the null count 0xFFFFFFFF."""
    (count,) = struct.unpack_from("<I", data, at)
    if count == 0xFFFFFFFF:
        return None, at + 4
    end = at + 4 + 2 * count
    if end > len(data):
        raise struct.error("a string past its record")
    return data[at + 4:end].decode("utf-16-le", "replace"), end


def comment_lines(archive: zipfile.ZipFile) -> list[str]:
    """Each comment as ``author: text`` on a line (Tika writes the author too), in the order of the parts."""
    lines = []
    for name in sorted(n for n in archive.namelist() if _COMMENTS.fullmatch(n)):
        authors, author = [], ""
        for kind, data in records(_read(archive, name)):
            try:
                if kind == _COMMENT_AUTHOR:
                    authors.append(_wide_string(data, 0)[0] or "")
                elif kind == _BEGIN_COMMENT:
                    (index,) = struct.unpack_from("<I", data, 0)
                    author = authors[index] if index < len(authors) else ""
                elif kind == _COMMENT_TEXT:  # a RichStr: a byte of flags, then its XLWideString
                    text = " ".join((_wide_string(data, 1)[0] or "").split())
                    if text:  # Excel begins a note's text with its author's name: then not twice
                        lines.append(text if not author.strip() or text.startswith(author) else f"{author}: {text}")
            except struct.error:
                continue
    return lines


def header_footer_lines(archive: zipfile.ZipFile) -> list[str]:
    """Each sheet's page headers and footers (odd, even, first page), one line each, without Excel's codes.

    A sheet part holds a record per cell: walking them all in Python took seconds per million cells (and 17 s
    for 8 MiB of zeros), so the header record is found by its type's bytes and taken only where its six
    strings fill its stated size exactly."""
    lines = []
    for name in sorted(n for n in archive.namelist() if _SHEETS.fullmatch(n)):
        part = _read(archive, name)
        at = part.find(_HEADER_FOOTER_TAG)
        while at >= 0:
            lines.extend(_header_footer(part, at + len(_HEADER_FOOTER_TAG)))
            at = part.find(_HEADER_FOOTER_TAG, at + 1)
    return list(dict.fromkeys(lines))


def _header_footer(part: bytes, at: int) -> list[str]:
    """The texts of a BrtBeginHeaderFooter whose size varint starts at ``at``; none unless it is one."""
    try:
        size, at = _varint(part, at, 4)
        data = part[at:at + size]
        if len(data) < size or size < 2 + 6 * 4:
            return []
        texts, at = [], 2
        for _ in range(6):
            raw, at = _wide_string(data, at)
            texts.append(header_footer_text(raw or ""))
    except (IndexError, struct.error):
        return []
    return [text for text in texts if text] if at == size else []


def _read(archive: zipfile.ZipFile, name: str) -> bytes:
    with archive.open(name) as part:
        return part.read(_MAX_PART)


def _formats(archive: zipfile.ZipFile) -> list[str]:
    """The number format of each cell style (``xl/styles.bin``'s cell XFs, by index)."""
    if "xl/styles.bin" not in archive.namelist():
        return []
    # imported here: openpyxl's import is 0.14 s of every process's start, and few crawls meet an XLSB file
    from openpyxl.styles.numbers import BUILTIN_FORMATS

    codes, styles, in_cell_xfs = dict(BUILTIN_FORMATS), [], False
    for kind, data in records(_read(archive, "xl/styles.bin")):
        try:
            if kind == _FORMAT:
                codes[struct.unpack_from("<H", data, 0)[0]] = _wide_string(data, 2)[0] or ""
            elif kind in (_BEGIN_CELL_XFS, _END_CELL_XFS):
                in_cell_xfs = kind == _BEGIN_CELL_XFS
            elif kind == _XF and in_cell_xfs:
                styles.append(struct.unpack_from("<H", data, 2)[0])
        except struct.error:
            continue
    return [codes.get(number, "General") for number in styles]


def _sheet_parts(archive: zipfile.ZipFile) -> dict[str, str]:
    """Each sheet's name and its part, from ``xl/workbook.bin``'s sheet records and the workbook's relationships
    (Excel 2007 beta 2 wrote 4 bytes more before the relationship's id, which is why calamine cannot open it)."""
    try:
        relationships = ElementTree.fromstring(archive.read("xl/_rels/workbook.bin.rels"))
        targets = {r.get("Id"): posixpath.normpath(posixpath.join("xl", r.get("Target", "")))
                   for r in relationships.iter(_RELATIONSHIP)}
        workbook = _read(archive, "xl/workbook.bin")
    except (KeyError, ElementTree.ParseError, ValueError):
        return {}
    parts = {}
    for kind, data in records(workbook):
        for at in (8, 12) if kind == _SHEET else ():
            try:
                relationship, at = _wide_string(data, at)
                if relationship in targets:
                    parts[_wide_string(data, at)[0] or ""] = targets[relationship]
                    break
            except struct.error:
                continue
    return parts


def number_formats(archive: zipfile.ZipFile) -> dict[str, dict[tuple[int, int], str]]:
    """Each sheet's number cells with a format other than General: (row, column) -> the format's code.
    A sheet's records are walked up to ``_MAX_RECORDS``: cells past it show calamine's value as it is."""
    formats = _formats(archive)
    if not any(code != "General" for code in formats):
        return {}
    found = {}
    for name, part in _sheet_parts(archive).items():
        if part not in archive.namelist():
            continue
        cells, row = {}, 0
        for kind, data in records(_read(archive, part)):
            if len(data) < 8:
                continue
            if kind == _ROW:
                row = struct.unpack_from("<I", data, 0)[0]
            elif kind in _NUMBER_CELLS:
                column, style = struct.unpack_from("<II", data, 0)
                code = formats[style & 0xFFFFFF] if (style & 0xFFFFFF) < len(formats) else "General"
                if code != "General":
                    cells[row, column] = code
        found[name] = cells
    return found


def _shared_strings(archive: zipfile.ZipFile) -> list[str]:
    """The workbook's shared strings (each a RichStr: a byte of flags, then its XLWideString), in order."""
    if "xl/sharedStrings.bin" not in archive.namelist():
        return []
    strings = []
    for kind, data in records(_read(archive, "xl/sharedStrings.bin")):
        if kind == _SHARED_STRING:
            try:
                strings.append(" ".join((_wide_string(data, 1)[0] or "").split()))
            except struct.error:
                strings.append("")
    return strings


def _rk(value: int) -> float:
    """An RkNumber: a 30-bit integer or the high 30 bits of a double, divided by 100 when its first bit says."""
    number = float(value >> 2 if value & 2 else struct.unpack("<d", struct.pack("<Q", (value & ~3) << 32))[0])
    return number / 100 if value & 1 else number


def cell_lines(archive: zipfile.ZipFile) -> tuple[list[str], list[str]]:
    """(lines, sheet names) of a workbook calamine cannot open: each sheet's name, then its rows of strings and
    numbers (without their formats), read from the cell records."""
    strings, lines, names = _shared_strings(archive), [], []
    for name, part in _sheet_parts(archive).items():
        if part not in archive.namelist():
            continue
        names.append(name)
        lines.append(name)
        row: list[str] = []
        for kind, data in records(_read(archive, part)):
            try:
                if kind == _ROW and row:
                    lines.append(" ".join(row))
                    row = []
                elif kind == _SHARED_CELL:
                    index = struct.unpack_from("<I", data, 8)[0]
                    row.append(strings[index] if index < len(strings) else "")
                elif kind in _STRING_CELLS:
                    row.append(" ".join((_wide_string(data, 8)[0] or "").split()))
                elif kind in _NUMBER_CELLS:
                    value = _rk(struct.unpack_from("<I", data, 8)[0]) if kind == _RK_CELL else struct.unpack_from("<d", data, 8)[0]
                    row.append(str(int(value)) if value.is_integer() else repr(value))
            except struct.error:
                continue
        if row:
            lines.append(" ".join(row))
    if not names:  # no sheet found: the strings are the text
        lines = strings
    return [line for line in (" ".join(line.split()) for line in lines) if line], names
