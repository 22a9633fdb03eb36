"""The OLE objects embedded in legacy Office files and in RTF: where each format keeps them, as the
``(name, opener)`` parts :func:`embedded.inline` prepares by their own type.

- Word 97+ keeps each object in a storage under ``ObjectPool/`` (``ObjectPool/_1345470949``), Excel 97+ in a
  top-level ``MBD…`` storage ([MS-DOC] 2.2.4, [MS-XLS] 2.1.7.16). A storage holding a wrapped file
  (``\\x01Ole10Native``, ``Package``, Acrobat's ``CONTENTS``) yields that file's bytes; one that is an Office
  document of its own (a WordDocument, Workbook or PowerPoint Document stream) yields the container's bytes
  with the root entry's child pointer set to the storage's (:func:`_storage_as_file`): a compound file
  whose root *is* the storage, its streams left where they are. Costlier in bytes (the whole container,
  counted against ``max_bytes``) than writing a new compound file, but it cannot get one wrong. Word also
  keeps each object's picture, as the reader sees it, in a ``\x03EPRINT`` stream (an EMF): a linked file's
  first page or an inserted file's icon and name, which is all a document holds of a link (``metafile``).
- PowerPoint 97+ keeps them in ExOleObjStg records of its ``PowerPoint Document`` stream ([MS-PPT] 2.10.34),
  each a compound file, zlib-compressed after its 4-byte size when the record's instance is 1.
- RTF keeps them hex-encoded in ``{\\*\\objdata …}`` groups, Access in OLE Object columns after a header of its
  own (``access``): both as an OLE 1 object ([MS-OLEDS] 2.2.4 ObjectHeader, then the native data: a compound
  file, or a Package's Ole10Native layout without its size).
"""

from __future__ import annotations

import io
import re
import struct
import zlib

import olefile
from beamtrawl.transforms.preparators import embedded

_OFFICE_STREAMS = ("WordDocument", "Workbook", "Book", "PowerPoint Document")
_PAYLOADS = ("\x01Ole10Native", "package", "CONTENTS")
_PICTURE = "\x03EPRINT"
_DIRECTORY_START, _SECTOR_SHIFT, _ROOT_CHILD = 0x30, 0x1E, 0x4C
_PPT_OLE_STORAGE, _PPT_MAIN_MASTER = 0x1011, 0x03F8
_OBJDATA = re.compile(rb"{\\\*\\objdata\b")
_HEX = re.compile(rb"[0-9a-fA-F]")
_RTF_BINARY = re.compile(rb"\\bin(\d+) ?")
_MAX_PPT_OBJECT = 256 * 1024**2  # an ExOleObjStg that claims more decompressed bytes is not believed


def _storage_as_file(data: bytes, ole: olefile.OleFileIO, path: list[str]) -> bytes:
    """The container's bytes with its root entry pointing at the storage ``path``'s children."""
    sector = 1 << struct.unpack_from("<H", data, _SECTOR_SHIFT)[0]
    first = struct.unpack_from("<I", data, _DIRECTORY_START)[0]
    child = ole.direntries[ole._find(path)].sid_child
    root = (first + 1) * sector  # the first directory entry is the root's; sector 0 follows the header
    copy = bytearray(data)
    struct.pack_into("<I", copy, root + _ROOT_CHILD, child)
    return bytes(copy)


def _object_storages(ole: olefile.OleFileIO) -> list[list[str]]:
    """Word's ``ObjectPool/*`` and Excel's ``MBD*`` storages, in directory order."""
    found = []
    for entry in ole.listdir(streams=False, storages=True):
        if (len(entry) == 2 and entry[0] == "ObjectPool") or (len(entry) == 1 and entry[0].startswith("MBD")):
            found.append(entry)
    return found


def _storage_part(data: bytes, ole: olefile.OleFileIO, path: list[str]) -> bytes | None:
    """What an object storage holds: its wrapped file's stream (``embedded.unwrap`` reads it as such),
    else itself as a compound file when it is an Office document (an MS Graph chart too: its Workbook stream holds
    the datasheet), else None (an equation: nothing a preparator reads)."""
    names = {entry[-1].lower(): entry for entry in ole.listdir() if entry[:-1] == path}
    if any(name.lower() in names for name in _PAYLOADS) or any(s.lower() in names for s in _OFFICE_STREAMS):
        return _storage_as_file(data, ole, path)
    return None


def storage_parts(data: bytes):
    """(name, opener) of the objects of a Word or Excel file (a compound file), as :mod:`embedded` walks
    them; nothing when it is not readable as one."""
    try:
        ole = olefile.OleFileIO(data)
    except (OSError, ValueError, struct.error, IndexError):
        return
    try:
        bodies = []
        for path in _object_storages(ole):
            bodies.append(("/".join(path), _storage_part(data, ole, path)))
            if ole.exists("/".join((*path, _PICTURE))):
                bodies.append(("/".join(path) + "/picture.emf", ole.openstream([*path, _PICTURE]).read()))
    except (OSError, ValueError, struct.error, IndexError, KeyError):
        return
    finally:
        ole.close()
    for name, body in bodies:
        yield name, (None if body is None else (lambda b=body: io.BytesIO(b)))


def _ppt_object(stream: bytes, body: int, length: int, instance: int) -> bytes | None:
    record = stream[body:body + length]
    if instance != 1:
        return record
    size = struct.unpack_from("<I", record, 0)[0] if len(record) >= 4 else 0
    if size > _MAX_PPT_OBJECT:
        return None
    try:
        return zlib.decompressobj().decompress(record[4:], size)
    except zlib.error:
        return None


def ppt_parts(stream: bytes):
    """(name, opener) of the ExOleObjStg records of a ``PowerPoint Document`` stream, in stream order."""
    stack, index = [(0, len(stream))], 0
    found = []
    while stack:
        pos, end = stack.pop()
        while pos + 8 <= end:
            ver_instance, kind, length = struct.unpack_from("<HHI", stream, pos)
            body = pos + 8
            if (ver_instance & 0xF) == 0xF and kind != _PPT_MAIN_MASTER:
                stack.append((body + length, end))
                end, pos = min(body + length, end), body
                continue
            if kind == _PPT_OLE_STORAGE:
                index += 1
                found.append((f"object {index}", _ppt_object(stream, body, length, ver_instance >> 4)))
            pos = body + length
    for name, body in found:
        yield name, (None if body is None else (lambda b=body: io.BytesIO(b)))


def _objdata_hex(data: bytes, start: int) -> bytes:
    """The bytes of the ``\\objdata`` group starting at ``start``: its hex digits (and ``\\binN`` runs)
    up to the brace that closes it."""
    out, digits, depth, at = bytearray(), bytearray(), 1, start
    while at < len(data) and depth:
        char = data[at]
        if char == 0x7B:  # {
            depth += 1
        elif char == 0x7D:  # }
            depth -= 1
        elif char == 0x5C:  # \
            binary = _RTF_BINARY.match(data, at)
            if binary:
                size = int(binary.group(1))
                out += bytes.fromhex(digits.decode()) + data[binary.end():binary.end() + size]
                digits.clear()
                at = binary.end() + size
                continue
        elif _HEX.fullmatch(bytes((char,))):
            digits.append(char)
        at += 1
    return bytes(out + bytes.fromhex(digits[:len(digits) & ~1].decode()))


def _ole1_native(blob: bytes) -> tuple[str, bytes] | None:
    """(class name, native data) of an OLE 1 ObjectHeader ([MS-OLEDS] 2.2.4) and what follows it."""
    try:
        at = 8  # OLEVersion, FormatID
        strings = []
        for _ in range(3):  # ClassName, TopicName, ItemName: each a length and its bytes
            length = struct.unpack_from("<I", blob, at)[0]
            strings.append(blob[at + 4:at + 4 + length].rstrip(b"\0").decode("latin-1"))
            at += 4 + length
        size = struct.unpack_from("<I", blob, at)[0]
    except struct.error:
        return None
    native = blob[at + 4:at + 4 + size]
    return (strings[0], native) if len(native) == size else None


def ole1_part(name: str, blob: bytes):
    """(name, opener) of an OLE 1 object (an ObjectHeader and its native data): ``name (class)``, or for a
    Package (a file inserted whole) that file, named after it; the opener is None when it is not one."""
    found = _ole1_native(blob)
    if found is None:
        return name, None
    kind, native = found
    name = f"{name} ({kind})"
    if kind.lower() == "package":
        wrapped = embedded.ole10_native(struct.pack("<I", len(native)) + native)
        if wrapped is not None:
            name, native = (f"{name}!/{wrapped[0]}" if wrapped[0] else name), wrapped[1]
    return name, (lambda b=native: io.BytesIO(b))


def rtf_parts(data: bytes):
    """(name, opener) of the objects of an RTF document, ``object N (class)`` (:func:`ole1_part`)."""
    for index, match in enumerate(_OBJDATA.finditer(data), start=1):
        try:
            blob = _objdata_hex(data, match.end())
        except ValueError:
            blob = b""
        yield ole1_part(f"object {index}", blob)
