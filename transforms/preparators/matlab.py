"""MATLAB 5 to 7 data files (``.mat``, "MATLAB 5.0 MAT-file"): what they hold, as Tika lists it — each
variable's name, size and class (``a1: [1x1 struct array]``), and a struct's fields or a cell's members
under it, one level of nesting per tab; the header text (platform, date) as metadata. Numbers are not
text worth searching; names are what a user remembers. v7.3 files are HDF5 and not read here.

The format ([MATLAB MAT-File Format], The MathWorks) is a 128-byte header, then data elements: a tag (type
and length, or a "small" element packed into 8 bytes) and its bytes padded to 8. A variable is a miMATRIX
element — array flags (the class), dimensions, name, then the data; a struct's data is its field names
and a miMATRIX per field and element, a cell's a miMATRIX per element. MATLAB 7 compresses each variable
(miCOMPRESSED: a zlib stream holding the miMATRIX). scipy's ``whosmat`` lists only the top level and
would be a 40 MB dependency for a few dozen lines; the elements are read here from a stream that
inflates as it goes and discards the numbers it skips.

Bounds: ``_MAX_INFLATED`` bytes inflated in all, ``_MAX_DEPTH`` levels of nesting, ``_MAX_LINES`` lines,
``_MAX_DIMENSIONS`` dimensions;
reaching one ends the listing with a report line.
"""

from __future__ import annotations

import math
import struct
import zlib

from beamtrawl.transforms.preparators.base import PreparationError, Prepared

MIME_TYPES = ("application/x-matlab-data",)
_HEADER = b"MATLAB 5.0 MAT-file"
_MI_INT8, _MI_INT32, _MI_UINT32, _MI_MATRIX, _MI_COMPRESSED = 1, 5, 6, 14, 15
_CELL, _STRUCT, _OBJECT = 1, 2, 3
_CLASSES = {1: "cell", 2: "struct", 3: "object", 4: "char", 5: "sparse", 6: "double", 7: "single", 8: "int8",
            9: "uint8", 10: "int16", 11: "uint16", 12: "int32", 13: "uint32", 14: "int64", 15: "uint64",
            16: "function", 17: "opaque"}
_MAX_INFLATED, _MAX_DEPTH, _MAX_LINES, _MAX_DIMENSIONS = 256 * 1024**2, 8, 100_000, 32
_CHUNK = 1024**2


class _Bound(Exception):
    """A bound was reached: the listing so far is kept."""


class _Elements:
    """A stream of bytes, plain or zlib-inflated as it is read; skipped bytes are inflated and dropped."""

    def __init__(self, data: memoryview, inflate: bool, budget: list[int]):
        self._data, self._at = data, 0
        self._inflater = zlib.decompressobj() if inflate else None
        self._buffer = bytearray()
        self.offset = 0  # bytes read so far
        self._budget = budget  # shared by every stream of the file: bytes it may still inflate

    def _fill(self, wanted: int) -> None:
        while len(self._buffer) < wanted:
            if self._inflater is None:
                taken = self._data[self._at:self._at + wanted - len(self._buffer)]
                self._at += len(taken)
                self._buffer += taken
                return
            source = self._inflater.unconsumed_tail or self._data[self._at:self._at + _CHUNK]
            if not source or self._inflater.eof:
                return
            if not self._inflater.unconsumed_tail:
                self._at += len(source)
            try:
                out = self._inflater.decompress(source, _CHUNK)
            except zlib.error:
                raise _Bound("a compressed variable is damaged") from None
            self._budget[0] -= len(out)
            if self._budget[0] < 0:
                raise _Bound(f"more than {_MAX_INFLATED} bytes inflated")
            self._buffer += out

    def read(self, size: int) -> bytes:
        self._fill(size)
        taken = bytes(self._buffer[:size])
        del self._buffer[:size]
        self.offset += len(taken)
        return taken

    def skip(self, size: int) -> None:
        while size > 0:
            step = min(size, _CHUNK)
            if len(self.read(step)) < step:
                return
            size -= step

    def element(self) -> tuple[int, int, bytes | None]:
        """(type, length, data for a small element or None); type 0 at the end."""
        tag = self.read(8)
        if len(tag) < 8:
            return 0, 0, None
        kind, length = struct.unpack("<II", tag)
        if kind >> 16:  # small element: length and type in the first word, the data in the second
            return kind & 0xFFFF, kind >> 16, tag[4:4 + (kind >> 16)]
        return kind, length, None

    def value(self) -> tuple[int, bytes]:
        """The next element's type and data (padded to 8 bytes, the padding dropped)."""
        kind, length, small = self.element()
        if small is not None:
            return kind, small
        data = self.read(length)
        self.skip(-length % 8)
        return kind, data


def _variable(elements: _Elements, name: str | None, depth: int, lines: list[str]) -> None:
    """List the miMATRIX whose tag was just read (its body follows), under ``name`` if a field names it."""
    if depth > _MAX_DEPTH:
        raise _Bound(f"more than {_MAX_DEPTH} levels of nested structs and cells")
    if len(lines) >= _MAX_LINES:
        raise _Bound(f"more than {_MAX_LINES} variables and fields")
    _, flags = elements.value()
    _, dims_data = elements.value()
    _, name_data = elements.value()
    if len(flags) < 8 or len(dims_data) < 8:
        raise _Bound("a variable's header is damaged")
    kind = flags[0]
    if len(dims_data) > 4 * _MAX_DIMENSIONS:
        raise _Bound(f"a variable of more than {_MAX_DIMENSIONS} dimensions")
    dims = struct.unpack(f"<{len(dims_data) // 4}i", dims_data[:len(dims_data) // 4 * 4])
    label = name if name is not None else name_data.decode("latin-1")
    shape = "x".join(str(d) for d in dims)
    lines.append("\t" * depth + f"{label}: [{shape} {_CLASSES.get(kind, 'unknown')} array]".lstrip(": "))
    count = math.prod(max(d, 0) for d in dims)
    if kind in (_STRUCT, _OBJECT):
        if kind == _OBJECT:
            elements.value()  # the class name
        _, width = elements.value()
        _, names = elements.value()
        size = struct.unpack("<i", width[:4])[0] if len(width) >= 4 else 0
        fields = [names[i:i + size].split(b"\0", 1)[0].decode("latin-1")
                  for i in range(0, min(len(names), size * _MAX_LINES), size)] if size > 0 else []
        for _ in range(min(count, _MAX_LINES)):
            for field in fields:
                _member(elements, field, depth + 1, lines)
    elif kind == _CELL:
        for _ in range(min(count, _MAX_LINES)):
            _member(elements, "", depth + 1, lines)


def _member(elements: _Elements, name: str, depth: int, lines: list[str]) -> None:
    """List a struct's field or a cell's member, then skip what is left of it (its numbers)."""
    kind, length, _ = elements.element()
    if kind != _MI_MATRIX:
        raise _Bound("a struct's or cell's member is not a matrix")
    start = elements.offset
    if length:
        _variable(elements, name, depth, lines)
    elif len(lines) < _MAX_LINES:  # an empty member (counted, so a hostile count of them is bounded too)
        lines.append("\t" * depth + f"{name}: []".lstrip(": "))
    else:
        raise _Bound(f"more than {_MAX_LINES} variables and fields")
    elements.skip(length + (-length % 8) - (elements.offset - start))


def _listing(data: bytes) -> tuple[list[str], str]:
    """(lines, why the listing stopped early or "")."""
    lines: list[str] = []
    budget = [_MAX_INFLATED]
    top = _Elements(memoryview(data)[128:], False, budget)
    try:
        while True:
            kind, length, small = top.element()
            if kind == 0:
                return lines, ""
            if kind == _MI_COMPRESSED:
                inner = _Elements(memoryview(top.read(length)), True, budget)
                inner_kind, inner_length, _ = inner.element()
                if inner_kind == _MI_MATRIX and inner_length:
                    _variable(inner, None, 0, lines)
            elif kind == _MI_MATRIX and small is None and length:
                _variable(_Elements(memoryview(top.read(length)), False, budget), None, 0, lines)
            elif small is None:
                top.skip(length + (-length % 8))
    except _Bound as err:
        return lines, f"MATLAB file listed partially: {err}"
    except struct.error:
        return lines, "MATLAB file listed partially: a variable is damaged"


def prepare_matlab(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    if data.startswith(b"MATLAB 7.3 MAT-file") or data[124:126] == b"\x00\x02":
        raise PreparationError("a MATLAB 7.3 file (HDF5): not read")
    if not data.startswith(_HEADER) or len(data) < 128:
        raise PreparationError("not a MATLAB 5 to 7 MAT-file: no 128-byte 'MATLAB 5.0 MAT-file' header")
    if data[126:128] != b"IM":
        raise PreparationError("a big-endian MAT-file: not read")
    header = " ".join(data[:116].decode("latin-1").replace("\0", " ").split())
    lines, partial = _listing(data)
    return Prepared(content="\n".join(lines), metadata=header, partial=partial)
