"""The entries of the archive formats the standard library does not walk: 7z (py7zr), cpio (binary, odc and
newc headers, as GNU cpio and rpm write them) and ar (Unix archives: static libraries, .deb's outer
layer, with GNU and BSD long names). Each reader yields what :mod:`archive` walks for ZIP and TAR:
``(name, open-function or None for a non-file)``, so the archive preparator's bounds hold for these too.

cpio and ar are read in place from the bytes (an entry is a slice). A 7z is mostly one solid stream, which
must be decompressed in order to reach any entry: it is decompressed once into memory, keeping at most
``max_bytes`` in total (the rest is dropped as it comes) and stopping at ``max_scan_bytes``.
"""

from __future__ import annotations

import io
import struct

from beamtrawl.transforms.preparators.base import PreparationError

MIME_TYPES = ("application/x-7z-compressed", "application/x-cpio", "application/x-archive",
              "application/vnd.debian.binary-package")
SEVEN_ZIP_MAGIC = b"7z\xbc\xaf\x27\x1c"
AR_MAGIC = b"!<arch>\n"
_CPIO_ASCII = (b"070701", b"070702", b"070707")
_CPIO_TRAILER = "TRAILER!!!"
_S_IFMT, _S_IFREG = 0o170000, 0o100000


class ScanLimit(Exception):
    """More than ``max_scan_bytes`` would have to be decompressed to walk on."""


def kind_of(data: bytes) -> str | None:
    """"7z", "cpio" or "ar" for bytes that begin as one, else None."""
    if data.startswith(SEVEN_ZIP_MAGIC):
        return "7z"
    if data.startswith(AR_MAGIC):
        return "ar"
    if data[:6] in _CPIO_ASCII or data[:2] in (b"\xc7\x71", b"\x71\xc7"):
        return "cpio"
    return None


def _slice(data: bytes, start: int, size: int):
    return lambda: io.BytesIO(data[start:start + size])


def cpio_entries(data: bytes):
    """The entries of a cpio archive up to its trailer (or the end of the bytes)."""
    offset = 0
    while offset < len(data):
        head = data[offset:offset + 6]
        if head in (b"070701", b"070702"):  # newc: 13 eight-digit hex fields, padding to 4
            fields = [int(data[offset + 6 + 8 * i:offset + 14 + 8 * i], 16) for i in range(13)]
            mode, size, name_size, header = fields[1], fields[6], fields[11], 110
            align = 4
        elif head == b"070707":  # odc: octal fields, no padding
            mode, name_size = int(data[offset + 18:offset + 24], 8), int(data[offset + 59:offset + 65], 8)
            size, header, align = int(data[offset + 65:offset + 76], 8), 76, 1
        elif head[:2] in (b"\xc7\x71", b"\x71\xc7"):  # old binary, either byte order; padding to 2
            order = "<" if head[:2] == b"\xc7\x71" else ">"
            words = struct.unpack(order + "13H", data[offset:offset + 26])
            mode, name_size, size, header, align = words[3], words[10], (words[11] << 16) | words[12], 26, 2
        else:
            raise PreparationError(f"not a cpio entry at byte {offset}")
        name_end = offset + header + name_size
        name = data[offset + header:name_end - 1].decode("utf-8", "surrogateescape")
        start = -(-name_end // align) * align if align > 1 else name_end
        if name == _CPIO_TRAILER:
            return
        if start + size > len(data):
            raise PreparationError(f"the cpio entry {name!r} runs past the end")
        yield name, _slice(data, start, size) if mode & _S_IFMT == _S_IFREG else None
        offset = -(-(start + size) // align) * align if align > 1 else start + size


def ar_entries(data: bytes):
    """The members of an ar archive; GNU's symbol and long-name tables are not members."""
    offset, long_names = len(AR_MAGIC), b""
    while offset + 60 <= len(data):
        header = data[offset:offset + 60]
        if header[58:60] != b"`\n":
            raise PreparationError(f"not an ar member header at byte {offset}")
        raw, size = header[:16].rstrip(b" "), int(header[48:58])
        start = offset + 60
        offset = start + size + (size & 1)
        if raw in (b"/", b"/SYM64/"):
            continue
        if raw == b"//":
            long_names = data[start:start + size]
            continue
        if raw.startswith(b"#1/"):  # BSD: the name leads the data
            length = int(raw[3:])
            raw, start, size = data[start:start + length].rstrip(b"\0"), start + length, size - length
        elif raw.startswith(b"/") and raw[1:].isdigit():  # GNU: an offset into the long-name table
            raw = long_names[int(raw[1:]):].split(b"\n", 1)[0]
        yield raw.rstrip(b"/").decode("utf-8", "surrogateescape"), _slice(data, start, size)


class _Budget:
    """What the 7z entries' writers share: ``keep`` bytes are kept, ``scan`` may be written in all."""

    def __init__(self, keep: int, scan: int):
        self.keep, self.scan = keep, scan


class _Kept:
    def __init__(self, budget: _Budget):
        self.budget, self.buffer = budget, io.BytesIO()

    def write(self, chunk) -> int:
        self.budget.scan -= len(chunk)
        if self.budget.scan < 0:
            raise ScanLimit
        kept = bytes(chunk[:max(0, self.budget.keep)])
        self.budget.keep -= len(kept)
        self.buffer.write(kept)
        return len(chunk)

    def read(self, size=None) -> bytes:
        return self.buffer.read(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.buffer.seek(offset, whence)

    def flush(self) -> None:
        pass

    def close(self) -> None:  # py7zr's hook at the end of each entry; the bytes stay for the walk
        pass

    def size(self) -> int:
        return self.buffer.getbuffer().nbytes


class _Factory:
    def __init__(self, budget: _Budget):
        self.budget, self.products = budget, {}

    def create(self, filename: str) -> _Kept:
        self.products[filename] = product = _Kept(self.budget)
        return product


def seven_zip_entries(data: bytes, max_bytes: int, max_scan: int):
    """The entries of a 7z archive, decompressed once within the bounds. An encrypted one (or one py7zr
    cannot decompress) lists its names, and its entries open to nothing."""
    import py7zr

    try:
        archive = py7zr.SevenZipFile(io.BytesIO(data))
    except (py7zr.exceptions.ArchiveError, py7zr.exceptions.PasswordRequired, EOFError, OSError,
            ValueError, KeyError, IndexError, TypeError) as err:  # what a damaged or encrypted header raises
        raise PreparationError(f"not a readable 7z archive: {type(err).__name__}: {err}"[:200]) from None
    with archive:
        infos = archive.list()
        factory = _Factory(_Budget(max_bytes, max_scan))
        stopped = False
        try:
            archive.extract(factory=factory)
        except ScanLimit:
            stopped = True
        except Exception:  # noqa: BLE001, S110 - encrypted, an unsupported filter, damage: the names stay known
            pass
    for info in infos:
        product = factory.products.get(info.filename)
        if info.is_directory or product is None:
            yield info.filename, None
            continue
        yield info.filename, (lambda p=product: io.BytesIO(p.buffer.getvalue()))
    if stopped:
        raise ScanLimit
