"""What an Excel 97–2003 workbook draws over its cells: text boxes (a TXO record and the CONTINUE records
after it, [MS-XLS] 2.4.329), charts' titles and series names (SERIESTEXT, 2.4.252), and the pictures of its
drawing layer (the BLIP store of MSODRAWINGGROUP, [MS-ODRAW] 2.2.20) drawn as metafiles: an MS Graph
chart's or an OLE object's preview, which holds the chart's labels and axes, or the PDF a Mac user pasted
(``metafile``). xlrd reads cells only; these records are read here in one walk of the Workbook stream, as
Tika's (POI's) ExcelExtractor does.

Bounds: one pass over the stream; a picture is decompressed to at most its declared size and
``_MAX_PICTURE``; a record that runs past the stream ends the walk.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Callable
from typing import NamedTuple

_TXO, _CONTINUE, _SERIESTEXT, _DRAWING_GROUP = 0x01B6, 0x003C, 0x100D, 0x00EB
_GRAPH_NUMBER, _GRAPH_LABEL = 0x0003, 0x0004
_OBJ, _FT_CMO, _OT_NOTE = 0x005D, 0x15, 0x19  # an OBJ record's first subrecord (ftCmo) says what it is; 0x19: a comment
_CONTAINER = 0xF
_FBSE, _BLIP_EMF, _BLIP_WMF = 0xF007, 0xF01A, 0xF01B
_ONE_UID = {_BLIP_EMF: 0x3D4, _BLIP_WMF: 0x216}  # the instance with one UID; the next has two
_METAFILE_HEADER, _DEFLATE = 34, 0x00
_MAX_PICTURE = 16 * 1024**2


class Drawing(NamedTuple):
    texts: list[str]  # text boxes' and charts' text, in stream order
    pictures: list[tuple[str, Callable[[], io.BytesIO]]]  # (name, opener): inflated when read, within the bounds


def records(stream: bytes):
    """(type, data) of each record laid out as BIFF's (a 16-bit type, a 16-bit length, the data), in order, until
    the stream's end or the first record that overruns it (Quattro Pro's notebooks are laid out so too)."""
    pos = 0
    while pos + 4 <= len(stream):
        kind, length = struct.unpack_from("<HH", stream, pos)
        if pos + 4 + length > len(stream):
            return
        yield kind, stream[pos + 4:pos + 4 + length]
        pos += 4 + length


def _characters(data: bytes, count: int) -> str:
    """``count`` characters of an XLUnicodeString's body: a flag byte, then 8-bit or UTF-16 characters."""
    if not data:
        return ""
    wide = data[0] & 1
    raw = data[1:1 + count * (2 if wide else 1)]
    return raw.decode("utf-16-le", "replace") if wide else raw.decode("latin-1")


def read_drawing(stream: bytes) -> Drawing:
    """The text boxes, chart texts and metafile pictures of a Workbook stream."""
    texts: list[list[str]] = []  # each text's pieces, joined once (+= copied a 64K-character box per piece)
    group = bytearray()
    pending = 0  # characters of a text box still to come in CONTINUE records
    previous = None  # the record the CONTINUE records that follow belong to
    note = False  # whether the last OBJ was a cell's comment, whose TXO xlrd reads already (cell_note_map)
    for kind, data in records(stream):
        if kind == _CONTINUE:
            if previous == _DRAWING_GROUP:
                group += data
            elif pending:
                part = _characters(data, pending)
                texts[-1].append(part)
                pending -= len(part) or pending  # an empty part ends the text
            continue
        previous, pending = kind, 0
        if kind == _OBJ:
            note = len(data) >= 6 and struct.unpack_from("<HHH", data)[::2] == (_FT_CMO, _OT_NOTE)
        elif kind == _TXO and note:
            previous = None  # its text and CONTINUE records are the comment's: read once, by xlrd
        elif kind == _TXO and len(data) >= 12:
            pending = struct.unpack_from("<H", data, 10)[0]
            texts.append([])
        elif kind == _SERIESTEXT and len(data) >= 4:
            texts.append([_characters(data[3:], data[2])])
        elif kind == _DRAWING_GROUP:
            group += data
    lines = (" ".join("".join(text).split()) for text in texts)
    return Drawing([line for line in lines if line], _metafile_blips(bytes(group)))


def graph_datasheet(stream: bytes) -> list[str]:
    """The datasheet of an MS Graph chart's Workbook stream (the chart Word and PowerPoint embed: no worksheet xlrd
    reads), a line per row: its NUMBER (0x0003) and LABEL (0x0004) records, laid out as BIFF2's but with a 16-bit
    length, each a row, a column, 3 bytes of attributes, then the value: its categories, series names and values."""
    rows: dict[int, dict[int, str]] = {}
    for kind, data in records(stream):
        if kind == _GRAPH_NUMBER and len(data) >= 15:
            row, column = struct.unpack_from("<HH", data)
            value = struct.unpack_from("<d", data, 7)[0]
            rows.setdefault(row, {})[column] = format(value, ".15g")
        elif kind == _GRAPH_LABEL and len(data) >= 9:
            row, column, length = *struct.unpack_from("<HH", data), struct.unpack_from("<H", data, 7)[0]
            rows.setdefault(row, {})[column] = " ".join(data[9:9 + length].decode("latin-1").split())
    return [line for row in sorted(rows) if (line := " ".join(v for _, v in sorted(rows[row].items()) if v))]


def _metafile_blips(group: bytes) -> list[tuple[str, Callable[[], io.BytesIO]]]:
    """The EMF and WMF pictures of an OfficeArt record list: containers are entered, a BLIP store entry
    (FBSE) is entered past its fixed part and name, other atoms stepped over."""
    found = []
    pos = 0
    while pos + 8 <= len(group):
        version_instance, kind, length = struct.unpack_from("<HHI", group, pos)
        body = pos + 8
        if (version_instance & 0xF) == _CONTAINER:
            pos = body
            continue
        if kind == _FBSE and length >= 36 and body + 36 <= len(group):
            pos = body + 36 + group[body + 33]
            continue
        if kind in _ONE_UID:
            name = f"picture {len(found) + 1}.{'emf' if kind == _BLIP_EMF else 'wmf'}"
            blip, instance = group[body:body + length], version_instance >> 4
            found.append((name, lambda b=blip, k=kind, i=instance: io.BytesIO(_metafile(b, k, i))))
        pos = body + length
    return found


def _metafile(blip: bytes, kind: int, instance: int) -> bytes:
    """A metafile BLIP's picture: after its UIDs, a header (the uncompressed size, …, the compression),
    then the bytes, usually deflated."""
    start = 16 if instance == _ONE_UID[kind] else 32
    if len(blip) < start + _METAFILE_HEADER:
        return b""
    size = struct.unpack_from("<I", blip, start)[0]
    compression = blip[start + 32]
    data = blip[start + _METAFILE_HEADER:]
    if compression != _DEFLATE:
        return data
    try:
        return zlib.decompressobj().decompress(data, min(size, _MAX_PICTURE))
    except zlib.error:
        return b""
