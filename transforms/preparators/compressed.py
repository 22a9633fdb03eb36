"""Single compressed files (gzip, bzip2, xz, zstd, lz4 frames, zlib streams): a changelog.Debian.gz, a man page ls.1.gz, a
NEWS.bz2. The file inside is decompressed in memory and prepared by its own type, as if it lay beside
its outer file under its name without the suffix; the document keeps the outer URL and says the inner
type in its ``inner_mimetype`` field.

The archive preparator's bounds hold here too (this module runs as part of that preparator, with its
parameters): at most ``max_bytes`` are decompressed, and at most ``max_ratio`` times the compressed size
once past ``RATIO_FREE`` bytes (a bomb stops early). What a bound cuts is kept and reported; a cut file
of a text type is still prepared, one of another format (a cut PDF) only named. A stream cut short or
damaged keeps what was decompressed before the damage, and says so.

The gzip header's stored file name is ignored: it is not the file's name, and may be anything.
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
    # a zlib stream has no magic of its own: a first byte 0x78 (deflate, 32 KiB window), checked by _zlib_start
    Codec("zlib", b"\x78", "application/zlib", "application/zlib", (".zlib", ".z"), (), _ZlibReader),
)
GZIP, BZIP2, XZ, ZSTD, LZ4, ZLIB = CODECS
STREAMED = (ZSTD, LZ4, ZLIB)  # tarfile does not know them: a TAR inside is walked as a stream
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
    return Prepared(title=prepared.title, content=prepared.content, summary=prepared.summary,
                    headlines=prepared.headlines, metadata=prepared.metadata,
                    fields={"inner_mimetype": mimetype, "compression": codec.name, **prepared.fields},  # innermost
                    partial="; ".join(partial))
