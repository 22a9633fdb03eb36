"""Hangul Word Processor 5 documents (``.hwp``, Hancom's open specification "HWP 5.0 revision 1.3"): an OLE2
file whose ``BodyText/Section<N>`` streams (raw deflate when the ``FileHeader`` says so) are records of a
32-bit header (tag, level, size). The text is each paragraph's ``HWPTAG_PARA_TEXT`` record, UTF-16LE, with
its control characters taken out as Tika's HwpTextExtractorV5 does: a character control (line break,
paragraph end, hyphen, spaces) is one code unit, an inline or extended control (tab, fields, tables,
pictures, footnotes' anchors) eight. The title, subject, authors, keywords and comments are those of its own
summary stream, ``HwpSummaryInformation``.

A "distribution" document (read-only, as Hancom's viewer shows it) keeps its sections under ``ViewText``,
each AES-128 (ECB) encrypted with a key hidden in the stream's first record (``HWPTAG_DISTRIBUTE_DOC_DATA``:
256 bytes scrambled with the C library's ``rand()`` seeded by its first four): they are decrypted as Tika
does and read as the others. A password-protected document is refused with that reason; HWP 3 files (not
OLE2) are not claimed.
"""

from __future__ import annotations

import re
import struct
import zlib

import olefile
from beamtrawl.transforms.preparators.base import PreparationError, Prepared

MIME_TYPES = ("application/x-hwp", "application/x-hwp-v5", "application/vnd.hancom.hwp")
SIGNATURE = b"HWP Document File"
_PARA_TEXT = 0x43  # HWPTAG_BEGIN (0x10) + 51
_DISTRIBUTE_DOC_DATA = 0x1C  # HWPTAG_BEGIN + 12
_COMPRESSED, _PASSWORD, _DISTRIBUTION = 0x1, 0x2, 0x4
_ONE_UNIT = {0, 10, 13, *range(24, 32)}  # character controls; every other code below 32 spans 8 units
_AS_TEXT = {9: "\t", 10: "\n", 13: "\n", 24: "-", 30: "-", 31: " "}
_MAX_SECTION = 256 * 1024 * 1024
_SUMMARY = "\x05HwpSummaryInformation"
_TITLE, _METADATA = 2, (3, 4, 5, 6)  # title; subject, author, keywords, comments
_CONTROL = re.compile("[\x00-\x1f]")


def _records(stream: bytes):
    """(tag, body) of each record."""
    at = 0
    while at + 4 <= len(stream):
        header = struct.unpack_from("<I", stream, at)[0]
        tag, size, at = header & 0x3FF, header >> 20, at + 4
        if size == 0xFFF:
            if at + 4 > len(stream):
                return
            size, at = struct.unpack_from("<I", stream, at)[0], at + 4
        yield tag, stream[at:at + size]
        at += size


def paragraph_text(body: bytes) -> str:
    """The characters of one PARA_TEXT record, its controls replaced by their whitespace or dropped. Decoded
    at once, then cut at its controls only: a tuple of every code unit made a 64 MB record take 4.4 GB."""
    text = body[: len(body) // 2 * 2].decode("utf-16-le", "surrogatepass")
    out, at = [], 0
    for control in _CONTROL.finditer(text):
        start = control.start()
        if start < at:  # inside an extended control's eight units
            continue
        unit = ord(text[start])
        out += (text[at:start], _AS_TEXT.get(unit, ""))
        at = start + (1 if unit in _ONE_UNIT else 8)
    out.append(text[at:])
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _rand(seed: int):
    """Microsoft's C library ``rand()`` after ``srand(seed)``: the numbers the distribution key is scrambled with."""
    while True:
        seed = (seed * 214013 + 2531011) & 0xFFFFFFFF
        yield (seed >> 16) & 0x7FFF


def _distribution_key(record: bytes) -> bytes:
    """The AES key of a distribution document's section, from its DISTRIBUTE_DOC_DATA record (256 bytes)."""
    data, seed = bytearray(record[:256]), struct.unpack_from("<I", record, 0)[0]
    numbers, left, mask = _rand(seed), 0, 0
    for at in range(256):
        if left == 0:
            mask, left = next(numbers) & 0xFF, (next(numbers) & 0xF) + 1
        if at >= 4:
            data[at] ^= mask
        left -= 1
    start = 4 + (seed & 0xF)
    return bytes(data[start:start + 16])


def _decrypted(raw: bytes, name: str) -> bytes:
    """A ViewText section without its encryption."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    tag, record = next(_records(raw), (None, b""))
    if tag != _DISTRIBUTE_DOC_DATA or len(record) < 256:
        raise PreparationError(f"{name} has no distribution key record")
    body = raw[4 + len(record):]
    decryptor = Cipher(algorithms.AES(_distribution_key(record)), modes.ECB()).decryptor()
    return decryptor.update(body[: len(body) // 16 * 16])


def _section(ole: olefile.OleFileIO, name: str, compressed: bool) -> bytes:
    raw = ole.openstream(name).read()
    if name.startswith("ViewText/"):
        raw = _decrypted(raw, name)
    if not compressed:
        return raw
    inflater = zlib.decompressobj(-15)
    data = inflater.decompress(raw, _MAX_SECTION)
    if inflater.unconsumed_tail:
        raise PreparationError(f"{name} is larger than {_MAX_SECTION} bytes once decompressed")
    return data


def _sections(ole: olefile.OleFileIO, distributed: bool) -> list[str]:
    """The section streams in their order (Section0, Section1, … Section10): BodyText's, or a distribution
    document's ViewText."""
    storage = "ViewText" if distributed else "BodyText"
    numbers = {int(entry[1][7:]): "/".join(entry) for entry in ole.listdir()
               if len(entry) == 2 and entry[0] == storage and re.fullmatch(r"Section[0-9]+", entry[1], re.ASCII)}
    return [numbers[n] for n in sorted(numbers)]  # another stream there ("Section²", "Notes1") is no section


def prepare_hwp(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    try:
        with olefile.OleFileIO(data) as ole:
            header = ole.openstream("FileHeader").read() if ole.exists("FileHeader") else b""
            if not header.startswith(SIGNATURE):
                raise PreparationError("not an HWP 5 document: no FileHeader signature")
            flags = struct.unpack_from("<I", header, 36)[0] if len(header) >= 40 else 0
            if flags & _PASSWORD:
                raise PreparationError("a password-protected HWP document: its text is not read")
            texts = [paragraph_text(body) for name in _sections(ole, bool(flags & _DISTRIBUTION))
                     for tag, body in _records(_section(ole, name, bool(flags & _COMPRESSED))) if tag == _PARA_TEXT]
            summary = _summary(ole)
    except (OSError, ValueError, struct.error, zlib.error, IndexError, RecursionError) as err:
        raise PreparationError(f"not a readable HWP document: {type(err).__name__}: {err}") from None
    content = "\n".join(line.strip() for text in texts for line in text.splitlines() if line.strip())
    return Prepared(title=summary.get(_TITLE, ""), content=content,
                    metadata=" ".join(summary[key] for key in _METADATA if summary.get(key)))


def _summary(ole: olefile.OleFileIO) -> dict[int, str]:
    """The strings of ``HwpSummaryInformation`` (a property set like SummaryInformation, which olefile's
    ``get_metadata`` does not read) by property id. olefile reads each wide string on to the stream's end:
    a value ends at its first NUL."""
    if not ole.exists(_SUMMARY):
        return {}
    found = ole.getproperties(_SUMMARY)
    return {key: value.split("\x00", 1)[0].strip() for key, value in found.items() if isinstance(value, str)}
