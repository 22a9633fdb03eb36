"""dBASE tables (``.dbf``: dBASE III/IV, FoxPro, Clipper; shapefiles' attribute tables): the field names as
a header line, then one line per record, its values separated by tabs, as Tika's DBF reader writes them.

Read here from the file's header, field descriptors and fixed-width records (a few dozen lines of the
format): dbfread, the library for it, opens a file by name and looks for a memo file beside it, and a
preparator reads bytes in memory. Character fields are decoded by the code page the header's language
driver byte names, else by what charset-normalizer finds in all of them together (Tika's test tables
leave that byte 0 and hold UTF-8 or GB18030). Memo fields (pointers into a ``.dbt``/``.fpt`` file that
is not at hand) and binary fields are left out. Deleted records are left out. At most ``max_records``.
"""

from __future__ import annotations

import struct

from beamtrawl.transforms.preparators.base import PreparationError, Prepared

MIME_TYPES = ("application/x-dbf", "application/dbf", "application/dbase", "application/x-dbase")
DEFAULTS = (("max_records", 100000),)
_VERSIONS = {0x02, 0x03, 0x04, 0x05, 0x30, 0x31, 0x32, 0x43, 0x63, 0x83, 0x8B, 0x8E, 0xCB, 0xF5, 0xFB}
# language driver ids (dBASE/FoxPro) → Python codecs; the common ones
_CODE_PAGES = {0x01: "cp437", 0x02: "cp850", 0x03: "cp1252", 0x04: "mac_roman", 0x57: "cp1252", 0x58: "cp1252",
               0x59: "cp1252", 0x64: "cp852", 0x65: "cp866", 0x66: "cp865", 0x67: "cp861", 0x6A: "cp737",
               0x6B: "cp857", 0x4D: "gb18030", 0x4E: "cp949", 0x4F: "cp950", 0x7A: "gb18030", 0x7B: "cp932",
               0x7C: "cp874", 0x7D: "cp1255", 0x7E: "cp1256", 0xC8: "cp1250", 0xC9: "cp1251", 0xCA: "cp1254",
               0xCB: "cp1253", 0xCC: "cp1257", 0x13: "cp932"}


def _fields(data: bytes, header_length: int) -> list[tuple[str, str, int]]:
    """(name, type letter, width) of each field, from the descriptors after the 32-byte header."""
    fields, at = [], 32
    while at + 32 <= header_length and data[at] != 0x0D:
        name = data[at:at + 11].split(b"\0", 1)[0].decode("latin-1").strip()
        fields.append((name, chr(data[at + 11]), data[at + 16]))
        at += 32
    return fields


def _value(kind: str, raw: bytes, codec: str) -> str:
    if kind == "C":
        return raw.decode(codec, "replace").rstrip("\0 ").strip()
    if kind == "D" and raw.strip(b" 0\0"):
        text = raw.decode("ascii", "replace")
        return f"{text[:4]}-{text[4:6]}-{text[6:8]}" if text.isdigit() else text.strip()
    if kind == "L":
        return {b"T": "true", b"Y": "true", b"F": "false", b"N": "false"}.get(raw.upper().strip(), "")
    if kind == "I" and len(raw) == 4:
        return str(struct.unpack("<i", raw)[0])
    if kind in "NF":
        return raw.decode("ascii", "replace").strip(" \0")
    return ""


def prepare_dbf(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    params = {**dict(DEFAULTS), **params}
    if len(data) < 33 or data[0] not in _VERSIONS:
        raise PreparationError("not a dBASE table")
    count, header_length, record_length = struct.unpack("<IHH", data[4:12])
    fields = [f for f in _fields(data, header_length) if f[1] in "CNFDLI"]
    if not fields or record_length < 1:
        raise PreparationError("not a dBASE table: no fields")
    offsets, at = {}, 1
    for name, kind, width in _fields(data, header_length):
        offsets[name] = (at, width)
        at += width
    records = []
    for number in range(min(count, params["max_records"])):
        start = header_length + number * record_length
        record = data[start:start + record_length]
        if len(record) < record_length:
            break
        if record[:1] != b"*":
            records.append(record)
    text_bytes = b" ".join(r[offsets[n][0]:offsets[n][0] + w] for r in records for n, k, w in fields if k == "C")
    codec = _CODE_PAGES.get(data[29]) or _guess(text_bytes)
    lines = ["\t".join(name for name, _, _ in fields)]
    for record in records:
        lines.append("\t".join(_value(k, record[offsets[n][0]:offsets[n][0] + w], codec) for n, k, w in fields))
    partial = f"read only the first {params['max_records']} records: reached max_records" \
        if count > params["max_records"] else ""
    return Prepared(content="\n".join(lines), fields={"records": str(len(records)), "charset": codec},
                    partial=partial)


def _guess(sample: bytes) -> str:
    """The codec the character fields read in: UTF-8 if they are, else charset-normalizer's best guess."""
    try:
        sample.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        pass
    import charset_normalizer

    best = charset_normalizer.from_bytes(sample).best()
    return best.encoding if best is not None else "latin-1"
