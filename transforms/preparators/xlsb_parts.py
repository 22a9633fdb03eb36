"""What python-calamine does not read of an XLSB workbook: its cells' comments (``xl/comments*.bin``) and its
sheets' page headers and footers (``xl/worksheets/sheet*.bin``), from their BIFF12 records ([MS-XLSB] 2.1.4:
a record's type and size as 7-bit varints, then its data). The text is written as for XLSX: each comment a
line, after the sheets; each header and footer without Excel's codes (cell_format.header_footer_text).
A part cut short or holding nonsense ends its records where it stops making sense; it never fails the file."""

from __future__ import annotations

import re
import struct
import zipfile
from collections.abc import Iterator

from beamtrawl.transforms.preparators.cell_format import header_footer_text

_COMMENT_AUTHOR, _BEGIN_COMMENT, _COMMENT_TEXT = 632, 635, 637  # BrtCommentAuthor, BrtBeginComment, BrtCommentText
_HEADER_FOOTER = 479  # BrtBeginHeaderFooter: 2 bytes of flags, then six XLNullableWideStrings
_COMMENTS = re.compile(r"xl/comments\d*\.bin")
_SHEETS = re.compile(r"xl/worksheets/sheet\d*\.bin")
_MAX_PART = 64 * 2**20  # a comments or sheet part read whole at most this long (the archive's bounds came first)


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
    """(type, data) of each record of a BIFF12 part, until its end or the first record that overruns it."""
    at = 0
    try:
        while at < len(data):
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
    """Each sheet's page headers and footers (odd, even, first page), one line each, without Excel's codes."""
    lines = []
    for name in sorted(n for n in archive.namelist() if _SHEETS.fullmatch(n)):
        for kind, data in records(_read(archive, name)):
            if kind != _HEADER_FOOTER:
                continue
            at = 2
            try:
                for _ in range(6):
                    raw, at = _wide_string(data, at)
                    text = header_footer_text(raw or "")
                    if text:
                        lines.append(text)
            except struct.error:
                pass
    return list(dict.fromkeys(lines))


def _read(archive: zipfile.ZipFile, name: str) -> bytes:
    with archive.open(name) as part:
        return part.read(_MAX_PART)
