"""Quattro Pro notebooks (``.qpw``, Quattro Pro 9 and later: an OLE2 compound file with a
``NativeContent_MAIN`` stream): the text a reader of the notebook sees, as Tika's QPWTextExtractor reads it —
the string table (every label typed into a cell), sheet names, page headers and footers, external links,
labels and formulas' text values, and cell comments. Numbers are not read (nor does Tika read them). Title and
properties come from SummaryInformation, as for the other legacy Office files.

The stream is a sequence of records (a 16-bit type, a 16-bit length, then the data); each string is a QSTR:
a 16-bit count, a type byte, then count + 1 single-byte characters (Windows-1252). A record that lies about
its length ends the reading where it stops making sense; what was read before stays. A string with no letter
or digit is left out (an unnamed sheet's name is one stray byte).
"""

from __future__ import annotations

import struct

from beamtrawl.transforms.preparators.base import Prepared
from beamtrawl.transforms.preparators.legacy import ole_stream
from beamtrawl.transforms.preparators.xls_drawing import records

MIME_TYPES = ("application/x-quattro-pro",)
STREAM = "NativeContent_MAIN"
_USER, _EXTERNAL_LINK, _STRING_TABLE, _SHEET = 0x0005, 0x0403, 0x0407, 0x0601
_HEADER, _FOOTER, _FORMULA_STRING, _LABEL, _COMMENT = 0x0605, 0x0606, 0x0C02, 0x0C72, 0x0C80
# where each record's strings begin: after index and first and last page; sheet number, columns, rows, format
# and flags; a flag; column and row; column, row and format; column, row and flag (then author and comment)
_STRINGS_AT = {_EXTERNAL_LINK: 6, _SHEET: 18, _HEADER: 2, _FOOTER: 2, _FORMULA_STRING: 6, _LABEL: 8, _COMMENT: 10}


def _qstr(data: bytes, at: int) -> tuple[str, int]:
    """The QSTR at ``at`` and where the next one begins."""
    (count,) = struct.unpack_from("<H", data, at)
    end = at + 3 + count + 1
    if end > len(data):
        raise struct.error("a string past its record")
    return data[at + 3:end].decode("cp1252", "replace").replace("\0", " ").strip(), end


def _strings(kind: int, data: bytes) -> list[str]:
    """The strings a record holds: all of a string table's, the author and comment of a comment, one else."""
    if kind == _STRING_TABLE:
        (count,) = struct.unpack_from("<I", data, 0)
        out, at = [], 12
        for _ in range(min(count, len(data))):
            try:
                text, at = _qstr(data, at)
            except struct.error:  # a count that overstates the table: the strings there are
                break
            out.append(text)
        return out
    text, at = _qstr(data, _STRINGS_AT[kind])
    return [text, _qstr(data, at)[0]] if kind == _COMMENT else [text]


def notebook_text(stream: bytes) -> tuple[list[str], list[str]]:
    """(the notebook's lines, its authors: the User record's creator and last modifier)."""
    lines, authors = [], []
    for kind, data in records(stream):
        try:
            if kind == _USER:
                first, at = _qstr(data, 0)
                authors.extend((first, _qstr(data, at)[0]))
            elif kind in _STRINGS_AT or kind == _STRING_TABLE:
                lines.extend(_strings(kind, data))
        except struct.error:
            continue
    words = (" ".join(line.split()) for line in lines if any(char.isalnum() for char in line))
    return list(words), [author for author in dict.fromkeys(authors) if author]


def prepare_quattro(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    stream, title, metadata = ole_stream(data, STREAM, "Quattro Pro notebook")
    lines, authors = notebook_text(stream)
    metadata = " ".join(dict.fromkeys(filter(None, (metadata, *authors))))
    return Prepared(title=title, content="\n".join(lines), metadata=metadata)
