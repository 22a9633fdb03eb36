"""Windows metafiles (EMF, ``.emf``; WMF, ``.wmf``): the text they draw, as Tika's EMF and WMF parsers read
it. A metafile is a list of drawing records; text is drawn by EMR_EXTTEXTOUTW/A (EMF, [MS-EMF] 2.3.5.8) and
META_TEXTOUT/META_EXTTEXTOUT (WMF, [MS-WMF] 2.3.3.5), each at a reference point: a new baseline starts a new
line. Office stores many pictures so — an OLE object's or a chart's preview, a document's thumbnail, an
icon labelled with a linked file's name — and Mac Office keeps the PDF a picture was pasted from inside its
EMF (an EMR_COMMENT_MULTIFORMATS comment, [MS-EMF] 2.3.3.4.3): that PDF is prepared by its own type and
inlined (``embedded``), as Tika does. No library on PyPI reads metafiles' text on Linux (Pillow only
identifies them); the records are a flat list, a few lines of ``struct`` each.

Bounds: records are walked once, each within the file (a size that runs past the end or below the header
ends the walk with a report line), and the text is at most the file's size.
"""

from __future__ import annotations

import io
import re
import struct

from beamtrawl.transforms.preparators.base import PreparationError, Prepared

MIME_TYPES = ("image/emf", "image/x-emf", "image/wmf", "image/x-wmf", "application/x-msmetafile")
_EMR_HEADER, _EMR_EOF, _EMR_COMMENT, _EMR_EXTTEXTOUTA, _EMR_EXTTEXTOUTW = 1, 14, 70, 83, 84
_EMF_SIGNATURE = b" EMF"  # at byte 40 of the EMR_HEADER record
_GDIC, _MULTIFORMATS, _PDF_SIGNATURE = b"GDIC", 0x40000004, 0x50444620  # "PDF " as a little-endian integer
_WMF_PLACEABLE = b"\xd7\xcd\xc6\x9a"
_META_EOF, _META_TEXTOUT, _META_EXTTEXTOUT, _META_CREATEFONTINDIRECT = 0x0000, 0x0521, 0x0A32, 0x02FB
# A WMF font's CharSet ([MS-WMF] 2.1.1.5) names the code page of the strings drawn with it.
_CHARSETS = {128: "cp932", 129: "cp949", 130: "johab", 134: "gbk", 136: "cp950", 161: "cp1253", 162: "cp1254",
             163: "cp1258", 177: "cp1255", 178: "cp1256", 186: "cp1257", 204: "cp1251", 222: "cp874", 238: "cp1250",
             77: "mac_roman"}
_ETO_OPAQUE_OR_CLIPPED = 0x0006  # these options put a rectangle before the string
# NULs, and the private-use characters symbol fonts draw bullets and arrows with (U+F0A7 in Wingdings)
_PRIVATE_USE = re.compile("[\0\ue000-\uf8ff]")


def is_emf(data: bytes) -> bool:
    """An EMF begins with its header record (type 1) holding the signature " EMF"."""
    return data[:4] == b"\x01\0\0\0" and data[40:44] == _EMF_SIGNATURE


def is_wmf(data: bytes) -> bool:
    """A WMF begins with the placeable header's key, or with a memory/disk metafile header of 9 words."""
    return data.startswith(_WMF_PLACEABLE) or data[:6] in (b"\x01\x00\x09\x00\x00\x03", b"\x02\x00\x09\x00\x00\x03")


class _Lines:
    """Text pieces joined as drawn: one line per baseline. Mac Office and PDF printers draw one character
    at a time, spaces included: such characters are glued into words until a space is drawn; longer
    pieces (runs of text) are words apart."""

    def __init__(self):
        self.lines: list[list[list[str]]] = []  # a line's pieces, each its characters or runs (joined once: a
        self._baseline: int | None = None       # word glued by += would copy itself per character drawn)
        self._glue = False  # whether the next single character continues the last piece

    def add(self, text: str, baseline: int) -> None:
        text = " ".join(_PRIVATE_USE.sub(" ", text).split())
        if baseline != self._baseline or not self.lines:
            self.lines.append([])
            self._baseline, self._glue = baseline, False
        if not text:
            self._glue = False
        elif self._glue and len(text) == 1:
            self.lines[-1][-1].append(text)
        else:
            self.lines[-1].append([text])
            self._glue = len(text) == 1

    def text(self) -> str:
        return "\n".join(" ".join("".join(piece) for piece in line) for line in self.lines if line)


def _emf(data: bytes) -> tuple[str, list[bytes], str]:
    """(text, embedded PDFs, why the walk stopped early or "")."""
    lines, pdfs = _Lines(), []
    pos = 0
    while pos + 8 <= len(data):
        kind, size = struct.unpack_from("<II", data, pos)
        if size < 8 or size % 4 or pos + size > len(data):
            return lines.text(), pdfs, f"EMF damaged: a record of {size} bytes at byte {pos}"
        record = data[pos:pos + size]
        if kind in (_EMR_EXTTEXTOUTA, _EMR_EXTTEXTOUTW) and size >= 52:
            baseline, count, offset = struct.unpack_from("<iII", record, 40)
            wide = kind == _EMR_EXTTEXTOUTW
            raw = record[offset:offset + count * (2 if wide else 1)]
            lines.add(raw.decode("utf-16-le", "replace") if wide else raw.decode("cp1252", "replace"), baseline)
        elif kind == _EMR_COMMENT:
            pdfs.extend(_comment_pdfs(record))
        elif kind == _EMR_EOF:
            break
        pos += size
    return lines.text(), pdfs, ""


def _comment_pdfs(record: bytes) -> list[bytes]:
    """The PDFs of an EMR_COMMENT_MULTIFORMATS comment: formats, each a signature and its data's place."""
    if len(record) < 40 or record[12:16] != _GDIC or struct.unpack_from("<I", record, 16)[0] != _MULTIFORMATS:
        return []
    count = struct.unpack_from("<I", record, 36)[0]
    found = []
    for at in range(40, min(40 + 16 * count, len(record) - 15), 16):
        signature, _, size, offset = struct.unpack_from("<IIII", record, at)
        start = 12 + offset  # from the comment's identifier
        if signature == _PDF_SIGNATURE and start + size <= len(record):
            found.append(record[start:start + size])
    return found


def _wmf(data: bytes) -> tuple[str, str]:
    """(text, why the walk stopped early or ""): META_TEXTOUT and META_EXTTEXTOUT strings, in the code page
    of the font created last (cp1252 before one; fonts are rarely created long before they are used)."""
    pos = 22 if data.startswith(_WMF_PLACEABLE) else 0
    if pos + 18 > len(data):
        return "", "WMF damaged: no header"
    pos += 2 * struct.unpack_from("<H", data, pos + 2)[0]  # the header's size in 16-bit words
    lines, codec = _Lines(), "cp1252"
    while pos + 6 <= len(data):
        words, function = struct.unpack_from("<IH", data, pos)
        size = 2 * words
        if size < 6 or pos + size > len(data):
            return lines.text(), f"WMF damaged: a record of {size} bytes at byte {pos}"
        params = data[pos + 6:pos + size]
        if function == _META_TEXTOUT and len(params) >= 2:
            length = struct.unpack_from("<H", params)[0]
            padded = length + (length & 1)
            baseline = struct.unpack_from("<h", params, 2 + padded)[0] if len(params) >= 4 + padded else 0
            lines.add(params[2:2 + length].decode(codec, "replace"), baseline)
        elif function == _META_EXTTEXTOUT and len(params) >= 8:
            baseline, _, length, options = struct.unpack_from("<hhHH", params)
            start = 8 + (8 if options & _ETO_OPAQUE_OR_CLIPPED else 0)
            lines.add(params[start:start + length].decode(codec, "replace"), baseline)
        elif function == _META_CREATEFONTINDIRECT and len(params) >= 14:
            codec = _CHARSETS.get(params[13], "cp1252")
        elif function == _META_EOF:
            break
        pos += size
    return lines.text(), ""


def metafile_text(data: bytes) -> str:
    """The text a metafile draws ("" for bytes that are neither EMF nor WMF): for pictures in containers."""
    if is_emf(data):
        return _emf(data)[0]
    return _wmf(data)[0] if is_wmf(data) else ""


def prepare_metafile(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    if is_emf(data):
        text, pdfs, damaged = _emf(data)
    elif is_wmf(data):
        (text, damaged), pdfs = _wmf(data), []
    else:
        raise PreparationError("not a Windows metafile: no EMF or WMF header")
    prepared = Prepared(content=text, partial=damaged)
    from beamtrawl.transforms.preparators import (
        embedded,  # here: embedded reads parts through archive, which types by is_emf
    )
    parts = [(f"embedded{i + 1}.pdf", lambda pdf=pdf: io.BytesIO(pdf)) for i, pdf in enumerate(pdfs)]
    return embedded.inline(prepared, parts, url) if parts else prepared
