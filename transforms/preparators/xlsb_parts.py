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
_COMMENTS = re.compile(r"xl/comments\d*\.bin")
_SHEETS = re.compile(r"xl/worksheets/sheet\d*\.bin")
_MAX_PART = 64 * 2**20  # a comments or sheet part read whole at most this long (the archive's bounds came first)
_MAX_RECORDS = 500_000  # a comments part walked this far at most: 64 MiB of zeros are 32 million empty records
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
