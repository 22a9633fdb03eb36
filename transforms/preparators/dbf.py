"""dBASE tables (``.dbf``: dBASE III/IV, FoxPro, Clipper; shapefiles' attribute tables): the field names as
a header line, then one line per record, its values separated by tabs, as Tika's DBF reader writes them.

Read here from the file's header, field descriptors and fixed-width records (a few dozen lines of the
format): dbfread, the library for it, opens a file by name and looks for a memo file beside it, and a
preparator reads bytes in memory. Character fields are decoded by the code page the header's language
driver byte names, else by what charset-normalizer finds in all of them together (Tika's test tables
leave that byte 0 and hold UTF-8 or GB18030). Every field is named in the header line; memo and binary
fields' cells are left empty: a memo cell is a block number in the ``.dbt``/``.fpt`` file beside the table (which
Tika writes), not at hand here. That memo file is a document of its own (``application/x-dbase-memo``, typed by
its name): each memo's text a line (LibreOffice's ``biblio.dbt`` holds the bibliography's authors and titles,
which ``biblio.dbf`` only points to). Deleted records are left out. At most ``max_records`` records, or memos.
"""

from __future__ import annotations

import struct

from beamtrawl.transforms.preparators.base import PreparationError, Prepared

MEMO = "application/x-dbase-memo"  # beamtrawl's name: libmagic calls a .dbt or .fpt data
MIME_TYPES = ("application/x-dbf", "application/dbf", "application/dbase", "application/x-dbase", MEMO)
REVISION = 1  # part of the preparation fingerprint (base.py): 1 names memo and binary fields in the header line, and
# reads memo files
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
    if mimetype == MEMO:
        return _prepare_memos(data, url, params["max_records"])
    if len(data) < 33 or data[0] not in _VERSIONS:
        raise PreparationError("not a dBASE table")
    count, header_length, record_length = struct.unpack("<IHH", data[4:12])
    fields = _fields(data, header_length)
    if not any(kind in "CNFDLI" for _, kind, _ in fields) or record_length < 1:
        raise PreparationError("not a dBASE table: no fields")
    offsets, at = {}, 1
    for name, kind, width in fields:
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


def memo_type(data: bytes, name: str) -> str | None:
    """:data:`MEMO` for a ``.dbt`` or ``.fpt`` file of at least its 512-byte header block, which holds binary numbers
    (a text file so named is text), else None."""
    return MEMO if name.lower().endswith((".dbt", ".fpt")) and len(data) >= 512 and b"\0" in data[:512] else None


def _memos(data: bytes, fox: bool, limit: int) -> list[bytes]:
    """Each memo's bytes in block order. FoxPro's ``.fpt``: the block size in the header, each memo a type and a
    length (big-endian) before its bytes. dBASE IV's ``.dbt``: 512-byte blocks, a memo ``FF FF 08 00`` and its
    length (little-endian, with those 8 bytes); dBASE III's: the text up to its 0x1A end mark."""
    from beamtrawl.transforms.preparators.mime import reads_as_text  # mime imports this module

    size = (int.from_bytes(data[6:8], "big") or 512) if fox else 512
    found, at = [], size if not fox else max(size, 512)
    while at + 8 <= len(data) and len(found) < limit:
        if fox:
            kind, length = int.from_bytes(data[at:at + 4], "big"), int.from_bytes(data[at + 4:at + 8], "big")
            body, end = (data[at + 8:at + 8 + length] if kind == 1 else b""), at + 8 + length
        elif data[at:at + 4] == b"\xff\xff\x08\x00":
            length = int.from_bytes(data[at + 4:at + 8], "little")
            body, end = data[at + 8:at + max(length, 8)], at + max(length, 8)
        else:
            stop = data.find(b"\x1a", at)
            stop = len(data) if stop < 0 else stop
            body, end = data[at:stop], stop + 1
        body = body.rstrip(b"\0")
        if body.strip() and reads_as_text(body):  # a picture or OLE memo, or bytes that are no memo, are not kept
            found.append(body)
        at += max(size, -(-(end - at) // size) * size)  # the next block after this memo
    return found


def _prepare_memos(data: bytes, url: str, limit: int) -> Prepared:
    memos = _memos(data, url.lower().endswith(".fpt"), limit)
    codec = _guess(b" ".join(memos))
    lines = [" ".join(memo.decode(codec, "replace").split()) for memo in memos]
    partial = f"read only the first {limit} memos: reached max_records" if len(memos) >= limit else ""
    return Prepared(content="\n".join(lines), fields={"memos": str(len(memos)), "charset": codec}, partial=partial)
