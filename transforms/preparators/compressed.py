"""Single compressed files (gzip, bzip2, xz, zstd, lz4 frames, zlib streams, framed Snappy, Unix compress's ``.Z``): a changelog.Debian.gz, a man page ls.1.gz, a
NEWS.bz2. The file inside is decompressed in memory and prepared by its own type, as if it lay beside
its outer file under its name without the suffix; the document keeps the outer URL and says the inner
type in its ``inner_mimetype`` field.

The archive preparator's bounds hold here too (this module runs as part of that preparator, with its
parameters): at most ``max_bytes`` are decompressed, and at most ``max_ratio`` times the compressed size
once past ``RATIO_FREE`` bytes (a bomb stops early). What a bound cuts is kept and reported; a cut file
of a text type is still prepared, one of another format (a cut PDF) only named. A stream cut short or
damaged keeps what was decompressed before the damage, and says so.

The gzip header's stored file name (the name the file had when compressed, which ``gzip -N`` restores) is
metadata, not the inner file's name: it may be anything, so the inner file is still named after the outer.

Framed Snappy and ``.Z`` are decoded here, not by a library, because none found pulls output in bounded pieces:
cramjam's ``snappy.Decompressor`` collects all the input and decompresses it at ``flush()``, with no bound on
the output, and a cut stream gives nothing at all ("failed to fill whole buffer"), so a bomb would be held
whole and a damaged file would lose what precedes the damage; cramjam decodes each raw block here instead,
at most 64 KiB each. unlzw3 returns the whole output of a ``.Z`` file at once. ncompress (C, about 35 times
faster than the LZW decoder below) pushes its output into a writer, which can stop it at a bound, but the
walk through a ``.tar.Z`` (``archive``) pulls from a stream, which it cannot give without a thread; the
decoder below yields one table entry at a time.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from collections.abc import Callable
from typing import NamedTuple

import zstandard
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.chain import prepare_part
from beamtrawl.transforms.preparators.text import decode_text

MiB = 1024 * 1024
RATIO_FREE = MiB  # output below this is not held to max_ratio: small files of repeated lines compress far better
_CHUNK = 64 * 1024
ERRORS = (OSError, EOFError, ValueError, RuntimeError, zlib.error, lzma.LZMAError, zstandard.ZstdError)  # what damaged streams raise


def _zstd_reader(raw: io.BytesIO):
    return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)


def _lz4_reader(raw: io.BytesIO):
    import lz4.frame

    return lz4.frame.LZ4FrameFile(raw)


class _ZlibReader(io.RawIOBase):
    """A zlib stream (RFC 1950, as Java's DeflaterOutputStream and PDF/PNG internals write it), read in chunks."""

    def __init__(self, raw: io.BytesIO):
        self.raw, self.inflater = raw, zlib.decompressobj()

    def read1(self, size: int = -1) -> bytes:
        out = b""
        while not out and not self.inflater.eof:
            chunk = self.inflater.unconsumed_tail or self.raw.read(_CHUNK)
            if not chunk:
                raise EOFError("the zlib stream ends early")
            out = self.inflater.decompress(chunk, max(size, 0))
        return out

    def read(self, size: int = -1) -> bytes:
        out = bytearray()
        while (size < 0 or len(out) < size) and not (self.inflater.eof and not self.inflater.unconsumed_tail):
            out += self.read1(_CHUNK if size < 0 else size - len(out))
        return bytes(out)

    def readable(self) -> bool:
        return True


class _ChunkReader(io.RawIOBase):
    """A stream over a generator of decompressed chunks; ``read1(n)`` returns at most ``n`` bytes."""

    def __init__(self, chunks):
        self.chunks, self.pending = chunks, b""

    def read1(self, size: int = -1) -> bytes:
        while not self.pending:
            self.pending = next(self.chunks, None)
            if self.pending is None:
                self.pending = b""
                return b""
        size = len(self.pending) if size < 0 else size
        out, self.pending = self.pending[:size], self.pending[size:]
        return out

    def read(self, size: int = -1) -> bytes:
        out = bytearray()
        while size < 0 or len(out) < size:
            chunk = self.read1(_CHUNK if size < 0 else size - len(out))
            if not chunk:
                break
            out += chunk
        return bytes(out)

    def readable(self) -> bool:
        return True


_SNAPPY_CHUNK = 65536  # the framing format's bound on a chunk's decompressed size


def _snappy_length(block: bytes) -> int:
    """The decompressed length a raw Snappy block declares (its leading varint)."""
    length, shift = 0, 0
    for byte in block[:5]:
        length |= (byte & 0x7F) << shift
        if byte < 0x80:
            return length
        shift += 7
    raise ValueError("a Snappy block without its length")


def _snappy_chunks(raw: io.BytesIO):
    """The framing format's chunks (google/snappy framing_format.txt): stream identifier, compressed or
    uncompressed data after a 4-byte checksum, skippable chunks; each at most 64 KiB once decompressed."""
    import cramjam

    while header := raw.read(4):
        if len(header) < 4:
            raise EOFError("the Snappy stream ends early")
        kind, size = header[0], int.from_bytes(header[1:], "little")
        body = raw.read(size)
        if len(body) < size:
            raise EOFError("the Snappy stream ends early")
        if kind == 0x00:
            if _snappy_length(body[4:]) > _SNAPPY_CHUNK:
                raise ValueError("a Snappy chunk larger than the format allows")
            yield bytes(cramjam.snappy.decompress_raw(body[4:]))
        elif kind == 0x01:
            yield body[4:]
        elif kind == 0xFF:
            if body != b"sNaPpY":
                raise ValueError("not a Snappy stream identifier")
        elif kind < 0x80:
            raise ValueError(f"an unskippable Snappy chunk of type {kind:#x}")


def _snappy_reader(raw: io.BytesIO):
    return _ChunkReader(_snappy_chunks(raw))


class _Lzw:
    """Unix compress's LZW codes: ``bits`` wide (9 up to the header's maximum), read in groups of eight,
    a group left unfinished when the width changes or the table is cleared (compress skips its rest)."""

    def __init__(self, data: bytes):
        self.data, self.base, self.count, self.bits = data, 3, 0, 9

    def next_code(self) -> int | None:
        offset = self.base * 8 + self.count * self.bits
        if offset + self.bits > len(self.data) * 8:
            return None
        self.count += 1
        window = int.from_bytes(self.data[offset >> 3:(offset >> 3) + 3], "little")
        return (window >> (offset & 7)) & ((1 << self.bits) - 1)

    def regroup(self, bits: int) -> None:
        self.base += -(-self.count // 8) * self.bits
        self.count, self.bits = 0, bits


def _lzw_chunks(raw: io.BytesIO):
    """The decompressed pieces of a ``.Z`` file, one table entry at a time (at most 64 KiB each)."""
    data = raw.read()
    flags = data[2] if len(data) > 2 else 0
    top, block = flags & 0x1F, bool(flags & 0x80)
    if not 9 <= top <= 16:
        raise ValueError(f"a .Z file of {top}-bit codes")
    first = 257 if block else 256
    table, previous, codes = [bytes((i,)) for i in range(256)] + [b""] * block, None, _Lzw(data)
    while (code := codes.next_code()) is not None:
        if block and code == 256:  # clear: the table starts again, after the rest of this group
            del table[first:]
            previous = None
            codes.regroup(9)
            continue
        if code < len(table):
            entry = table[code]
        elif code == len(table) and previous is not None:
            entry = previous + previous[:1]
        else:
            raise ValueError(f"an invalid code {code} in the .Z stream")
        if previous is not None and len(table) < 1 << top:
            table.append(previous + entry[:1])
        previous = entry
        yield entry
        if len(table) >= 1 << codes.bits and codes.bits < top:
            codes.regroup(codes.bits + 1)


def _lzw_reader(raw: io.BytesIO):
    return _ChunkReader(_lzw_chunks(raw))


class Codec(NamedTuple):
    """A compression format: how its files begin, their types and suffixes alone and around a TAR."""

    name: str
    magic: bytes
    mimetype: str  # a single compressed file
    tar_mimetype: str  # a compressed TAR (freedesktop.org shared-mime-info names)
    suffixes: tuple[str, ...]
    tar_suffixes: tuple[str, ...]
    reader: Callable[[io.BytesIO], io.BufferedIOBase]  # a stream whose read1(n) returns at most n bytes


CODECS = (
    Codec("gzip", b"\x1f\x8b", "application/gzip", "application/x-compressed-tar", (".gz",),
          (".tar.gz", ".tgz", ".taz"), lambda raw: gzip.GzipFile(fileobj=raw)),
    Codec("bzip2", b"BZh", "application/x-bzip2", "application/x-bzip-compressed-tar", (".bz2",),
          (".tar.bz2", ".tbz2", ".tbz", ".tb2"), bz2.BZ2File),
    Codec("xz", b"\xfd7zXZ\x00", "application/x-xz", "application/x-xz-compressed-tar", (".xz",),
          (".tar.xz", ".txz"), lzma.LZMAFile),
    Codec("zstd", b"\x28\xb5\x2f\xfd", "application/zstd", "application/x-zstd-compressed-tar", (".zst",),
          (".tar.zst", ".tzst"), _zstd_reader),
    Codec("lz4", b"\x04\x22\x4d\x18", "application/x-lz4", "application/x-lz4-compressed-tar", (".lz4",),
          (".tar.lz4",), _lz4_reader),
    Codec("snappy", b"\xff\x06\x00\x00sNaPpY", "application/x-snappy-framed", "application/x-snappy-framed",
          (".sz",), (), _snappy_reader),
    Codec("compress", b"\x1f\x9d", "application/x-compress", "application/x-tarz", (".z",), (".tar.z",),
          _lzw_reader),
    # a zlib stream has no magic of its own: a first byte 0x78 (deflate, 32 KiB window), checked by _zlib_start
    Codec("zlib", b"\x78", "application/zlib", "application/zlib", (".zlib", ".z"), (), _ZlibReader),
)
GZIP, BZIP2, XZ, ZSTD, LZ4, SNAPPY, COMPRESS, ZLIB = CODECS
STREAMED = (ZSTD, LZ4, SNAPPY, COMPRESS, ZLIB)  # tarfile does not know them: a TAR inside is walked as a stream
# older names servers still send as Content-Type (a web page's type is not sniffed)
_ALIASES = ("application/x-gzip", "application/x-bzip", "application/x-zstd", "application/x-compressed")
MIME_TYPES = (*(c.mimetype for c in CODECS), *_ALIASES)
TAR_MIME_TYPES = tuple(c.tar_mimetype for c in CODECS)


def _zlib_start(data: bytes) -> bool:
    """Whether bytes begin as a zlib stream: its header's check bits hold, and the first bytes inflate
    (text beginning ``x^`` has a valid header by chance, but does not inflate)."""
    if len(data) < 8 or (data[0] * 256 + data[1]) % 31 or data[1] & 0x20:  # no preset dictionary
        return False
    try:
        inflater = zlib.decompressobj()
        inflater.decompress(data[:512], 64)
    except zlib.error:
        return False
    return True


def codec_of(data: bytes) -> Codec | None:
    """The compression format the bytes begin with, if any."""
    codec = next((c for c in CODECS if data.startswith(c.magic)), None)
    return None if codec is ZLIB and not _zlib_start(data) else codec


def compressed_type(data: bytes, name: str) -> str | None:
    """The MIME type of compressed bytes: a compressed TAR when the name says so, else a single compressed
    file; None for bytes no codec starts."""
    codec = codec_of(data)
    if codec is None:
        return None
    return codec.tar_mimetype if name.lower().endswith(codec.tar_suffixes) else codec.mimetype


def _complete_zstd(data: bytes) -> bool:
    """Whether a zstd stream read to its end was whole: the stream reader ends a cut frame silently.
    Called only when all of it was decompressed within the bounds, so this second pass is bounded too."""
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    try:
        decompressor.decompress(data)
    except zstandard.ZstdError:
        return False
    return decompressor.eof


def decompress(data: bytes, codec: Codec, max_bytes: int, max_ratio: int) -> tuple[bytes, str]:
    """(the decompressed bytes, within the bounds; why reading stopped before the end, or "")."""
    limit = min(max_bytes, max(RATIO_FREE, max_ratio * len(data)))
    out = bytearray()
    with codec.reader(io.BytesIO(data)) as stream:
        try:
            while len(out) <= limit:
                chunk = stream.read1(min(_CHUNK, limit + 1 - len(out)))  # read() would drop a chunk cut short
                if not chunk:
                    if codec is ZSTD and not _complete_zstd(data):
                        if not out:
                            raise PreparationError(f"not a readable {codec.name} file: the stream ends early")
                        return bytes(out), f"the {codec.name} stream ends early, after {len(out)} bytes"
                    return bytes(out), ""
                out += chunk
        except ERRORS as err:
            if not out:
                raise PreparationError(f"not a readable {codec.name} file: {err}") from None
            return bytes(out), f"the {codec.name} stream is damaged after {len(out)} bytes: {err}"
    bound = f"max_bytes ({max_bytes})" if limit == max_bytes else f"max_ratio ({max_ratio}:1)"
    return bytes(out[:limit]), f"decompressed only {limit} bytes: reached {bound}"


def inner_name(url: str, codec: Codec) -> str:
    """The last segment of ``url`` (as written in the URL) without the codec's suffix."""
    segment = url.rstrip("/").rsplit("/", 1)[-1]
    suffix = next((s for s in codec.suffixes if segment.lower().endswith(s)), "")
    return segment[: len(segment) - len(suffix)] if len(segment) > len(suffix) else segment


def tar_name(url: str, codec: Codec) -> str:
    """The name of the TAR inside a compressed TAR as gunzip restores it (``x.tgz`` and ``x.tar.gz``: ``x.tar``),
    or "" when the URL's last segment has no such suffix."""
    segment = url.rstrip("/").rsplit("/", 1)[-1]
    suffix = next((s for s in codec.tar_suffixes if segment.lower().endswith(s)), "")
    return f"{segment[: len(segment) - len(suffix)]}.tar" if suffix and len(segment) > len(suffix) else ""


_FEXTRA, _FNAME = 4, 8  # gzip header flags (RFC 1952)
_MAX_NAME = 1024


def gzip_stored_name(data: bytes) -> str:
    """The file name a gzip header stores (ISO 8859-1, ended by a zero byte), or ""."""
    if not data.startswith(GZIP.magic) or len(data) < 10 or not data[3] & _FNAME:
        return ""
    at = 10
    if data[3] & _FEXTRA:
        at += 2 + int.from_bytes(data[10:12], "little")
    end = data.find(b"\0", at, at + _MAX_NAME)
    return "" if end < 0 else " ".join(data[at:end].decode("latin-1").split())


def prepare_compressed(data: bytes, url: str, params: dict) -> Prepared:
    """``params``: the archive preparator's (``max_bytes``, ``max_ratio``)."""
    codec = codec_of(data)
    if codec is None:
        raise PreparationError("not a gzip, bzip2, xz, zstd, lz4 or zlib file")
    inner, stopped = decompress(data, codec, params["max_bytes"], params["max_ratio"])
    part_url = f"{url}!/{inner_name(url, codec)}"
    prepared, errors, mimetype = prepare_part(inner, part_url, text_only=bool(stopped))
    if prepared is None and errors and not stopped:  # a reader for its type could not read it: the file failed
        raise PreparationError(f"the {codec.name}-compressed {mimetype} inside: {'; '.join(errors)}")
    if prepared is None:
        text = decode_text(inner) if mimetype.startswith("text/") else ""
        prepared = Prepared(content=text.strip())
    partial = [p for p in (stopped, prepared.partial) if p]
    if errors:  # a reader for its type failed and another read it (mandoc missing: the text preparator)
        partial.append(f"the {mimetype} inside: {'; '.join(errors)}; a lower-priority preparator read it")
    if stopped and not mimetype.startswith("text/"):
        partial.append(f"the {mimetype} inside was not prepared")
    metadata = "\n".join(filter(None, [prepared.metadata, gzip_stored_name(data) if codec is GZIP else ""]))
    return Prepared(title=prepared.title, content=prepared.content, summary=prepared.summary,
                    headlines=prepared.headlines, metadata=metadata, furniture=prepared.furniture,
                    fields={"inner_mimetype": mimetype, "compression": codec.name, **prepared.fields},  # innermost
                    partial="; ".join(partial))
