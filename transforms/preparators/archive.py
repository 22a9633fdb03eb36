"""ZIP/JAR, TAR (plain or compressed with gzip, bzip2, xz or zstd), 7z, RAR (``rar``), cpio and ar archives: entry names (with their parts split into words, as
regain indexed them), then the text of each entry: plain text decoded here, any other format prepared
with the same configured preparators as a document (a PDF in a ZIP by the PDF preparator).

Nothing is ever written to disk: entries are read into memory through ``ZipFile.open`` and
``TarFile.extractfile``, so a name such as ``../../evil.txt`` or ``/etc/passwd`` is only text to index
and zip slip is impossible by construction. Bombs are bounded: at most ``max_entries`` entries, at
most ``max_bytes`` of uncompressed entry data read in total (reads are size-limited; declared sizes
are not trusted), and for a compressed TAR, which must be decompressed to be walked, at most
``max_scan_bytes`` of stream. A single compressed file (``.gz``, ``.bz2``, ``.xz``, ``.zst`` that is no
TAR) is read by ``compressed`` under the same bounds, ``max_bytes`` and ``max_ratio``: one configuration
bounds everything decompressed. ZIP entries in methods zipfile does not know (implode) are read by 7-Zip
(``zip_methods``), a helper program; without it they are listed by name and the report says why.
"""

from __future__ import annotations

import io
import re
import struct
import tarfile
import zipfile
from collections.abc import Callable
from typing import NamedTuple

import magic
from beamtrawl.transforms.preparators import compressed, members, metafile, rar, zip_methods
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.chain import prepare_part
from beamtrawl.transforms.preparators.text import decode_text

MIME_TYPES = ("application/zip", "application/java-archive", "application/x-rar", "application/vnd.rar",
              "application/x-rar-compressed", "application/x-tar", "application/x-gtar",
              *members.MIME_TYPES,
              "application/vnd.ms-excel.sheet.binary.macroenabled.12",  # an XLSB calamine cannot read: its parts
              *compressed.TAR_MIME_TYPES, *compressed.MIME_TYPES)
MiB = compressed.MiB
HELPERS = (*zip_methods.HELPERS, *rar.HELPERS)
REVISION = 3  # part of the preparation fingerprint (base.py): 1 keeps a gzip header's stored name as metadata, 2
# a compressed TAR's inner name, 3 names the members no preparator could read in the report line
# max_entries: a source tarball holds thousands of files (bash-completion 2.5: 1,959, 1.5 MB; at 1,000 a third of
# its words were missed); 10,000 tiny entries cost about 4 CPU-s, and max_bytes bounds what they hold together
DEFAULTS = (("max_entries", 10_000), ("max_bytes", 10 * MiB), ("max_scan_bytes", 1024 * MiB), ("max_ratio", 100))
_SNIFF = 8192
_OPAQUE = ("application/octet-stream", "application/x-empty")
_CONTAINERS = (b"PK\x03\x04", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")  # ZIP, OLE2: libmagic may not name them
_SEPARATORS = re.compile(r"[/._-]")
_READ_ERRORS = (*compressed.ERRORS, RuntimeError, NotImplementedError, zipfile.BadZipFile, tarfile.TarError)


def _entries(data: bytes, max_scan: int, max_bytes: int):
    """(name, open-function or None for non-files) for each entry, in archive order."""
    if data.startswith(rar.MAGIC):
        yield from rar.rar_entries(data, max_bytes)
        return
    kind = members.kind_of(data)
    if kind is not None:
        try:
            if kind == "7z":
                yield from members.seven_zip_entries(data, max_bytes, max_scan)
            else:
                yield from (members.cpio_entries if kind == "cpio" else members.ar_entries)(data)
        except members.ScanLimit:
            raise _ScanLimit from None
        except (PreparationError, ValueError, struct.error) as err:
            raise _Damaged(str(err)) from None
        return
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        pass
    else:
        legacy = zip_methods.Extractor(data, max_bytes)
        try:
            for info in archive.infolist():
                if zip_methods.needs_seven_zip(info):
                    yield info.filename, (lambda name=info.filename: legacy.open(name))
                else:
                    yield info.filename, None if info.is_dir() else (lambda info=info: archive.open(info))
        finally:
            legacy.close()
        return
    try:
        archive = _open_tar(data)
    except _READ_ERRORS as err:
        raise PreparationError(f"not a ZIP or TAR archive: {' '.join(str(err).split())}") from None
    packed = not isinstance(archive.fileobj, io.BytesIO)
    with archive:
        while True:
            try:
                member = archive.next()
            except _READ_ERRORS as err:  # a damaged tail: keep what was listed, and say so
                raise _Damaged(f"{type(err).__name__}: {err}") from None
            if member is None:
                return
            if packed and member.offset_data + member.size > max_scan:
                raise _ScanLimit
            yield member.name, (lambda m=member: archive.extractfile(m)) if member.isfile() else None


def _open_tar(data: bytes) -> tarfile.TarFile:
    """tarfile reads gzip, bzip2 and xz itself; zstd (not before Python 3.14), lz4 and zlib are read as a stream, which
    suits the walk: each entry is read when it is reached."""
    codec = compressed.codec_of(data)
    if codec in compressed.STREAMED:
        return tarfile.open(fileobj=codec.reader(io.BytesIO(data)), mode="r|")
    return tarfile.open(fileobj=io.BytesIO(data), mode="r:*")


def _is_tar(data: bytes) -> bool:
    """Whether the (compressed) bytes begin with a TAR header: a .tar.gz may be misnamed, a .gz may be a TAR."""
    codec = compressed.codec_of(data)
    try:
        head = compressed.decompress(data, codec, tarfile.BLOCKSIZE, 1)[0] if codec else data
        tarfile.TarInfo.frombuf(head[:tarfile.BLOCKSIZE], "utf-8", "surrogateescape")
    except (tarfile.HeaderError, PreparationError):  # zeros too (an empty TAR holds nothing to walk)
        return False
    return True


class _ScanLimit(Exception):
    pass


class _Damaged(Exception):
    """The archive's stream breaks off: the entries before the damage are kept."""


class Members(NamedTuple):
    """What a walk of a container's members found: every name, the text of each member read, the bounds
    reached and why the walk broke off ("" if it did not)."""

    names: list[str]
    texts: list[tuple[str, str]]  # (name, text)
    limits: list[str]
    damaged: str

    def partial(self, what: str = "archive") -> str:
        reached = f"{what} read partially: reached {', '.join(self.limits)}" if self.limits else ""
        return "; ".join(filter(None, (reached, self.damaged)))


def _identity(name: str, data: bytes) -> tuple[str, bytes]:
    return name, data


def read_members(entries, url: str, params: dict,
                 unwrap: Callable[[str, bytes], tuple[str, bytes]] = _identity) -> Members:
    """Walk ``entries`` ((name, open-function or None), as :func:`_entries` yields them) under the bounds
    ``params`` holds (``max_entries``, ``max_bytes``): each member's bytes are prepared by their own type as
    the part ``<url>!/<name>``. The one walk every container uses: archives here, and the documents embedded
    in Office files and PDFs (``embedded``), whose ``unwrap`` takes a payload out of its OLE wrapper first."""
    max_entries, budget = params["max_entries"], params["max_bytes"]
    names: list[str] = []
    texts: list[tuple[str, str]] = []
    limits: list[str] = []  # the bounds reached
    damaged = unread = ""
    failed: list[str] = []  # members a preparator failed on: "name: why"
    try:
        for name, opener in entries:
            if len(names) >= max_entries:
                limits.append(f"max_entries ({max_entries})")
                break
            names.append(name)
            if opener is None or budget <= 0:
                if opener is not None:
                    limits.append(f"max_bytes ({params['max_bytes']})")
                continue
            try:
                with opener() as stream:
                    head = stream.read(min(_SNIFF, budget))
                    budget -= len(head)
                    if not head:
                        continue
                    kind = magic.from_buffer(head, mime=True)
                    # keep the budget for readable ones (libmagic calls ZIP, OLE2 and EMF bytes octet-stream)
                    if kind in _OPAQUE and not head.startswith(_CONTAINERS) and not metafile.is_emf(head):
                        continue
                    rest = stream.read(budget)
                    budget -= len(rest)
                    cut = budget <= 0 and bool(stream.read(1))
                    if cut:
                        limits.append(f"max_bytes ({params['max_bytes']})")
            except zip_methods.Missing as err:  # the name is known; the report says which program reads it
                unread = str(err)
                continue
            except _READ_ERRORS:  # encrypted, unsupported method, corrupt entry: the name is still known
                continue
            whole = head + rest
            part_name, body = unwrap(name, whole)
            if body is not whole:
                kind = magic.from_buffer(body[:_SNIFF], mime=True)
            text, error = _member_text(body, kind, cut, f"{url}!/{part_name}")
            failed += [f"{part_name}: {error}"] if error else []
            if text:
                texts.append((part_name, text))
    except _ScanLimit:
        limits.append(f"max_scan_bytes ({params['max_scan_bytes']})")
    except _Damaged as err:
        damaged = f"archive damaged after {len(names)} entries ({err})"
    unread = f"entries in a legacy ZIP method not read: {unread}" if unread else ""
    failed_line = f"{len(failed)} of {len(names)} entries not readable ({failed[0]})"[:200] if failed else ""
    return Members(names, texts, list(dict.fromkeys(limits)), "; ".join(filter(None, (damaged, unread, failed_line))))


def _member_text(body: bytes, kind: str, cut: bool, part_url: str) -> tuple[str, str]:
    """(a member's text, why no preparator could read it or ""): plain text decoded here (a cut-off file of another
    format would only fail to prepare), any other type prepared by its own as the part ``part_url``. The reason goes
    to the container's report line: a member's text was lost without a word."""
    prepared, errors = (None, []) if kind == "text/plain" or cut else prepare_part(body, part_url)[:2]
    if prepared is not None:
        return prepared.content.strip(), ""
    return (decode_text(body).strip() if kind.startswith("text/") else ""), (errors[-1] if errors else "")


def prepare_archive(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    params = {**dict(DEFAULTS), **params}
    codec = compressed.codec_of(data)
    if codec is not None and not _is_tar(data):  # what the name says decides nothing here
        return compressed.prepare_compressed(data, url, params)
    found = read_members(_entries(data, params["max_scan_bytes"], params["max_bytes"]), url, params)
    listing = "\n".join(f"{n}\n{' '.join(_SEPARATORS.sub(' ', n).split())}" for n in found.names)
    fields = {"entries": str(len(found.names)), "truncated": "true" if found.limits or found.damaged else "false"}
    texts = [f"{name}:\n{text}" for name, text in found.texts]
    # a compressed TAR names the TAR inside, as Tika does: by its gzip header, else as gunzip would
    stream = "" if codec is None else (codec is compressed.GZIP and compressed.gzip_stored_name(data)
                                       or compressed.tar_name(url, codec))
    return Prepared(content="\n\n".join(s for s in (listing, *texts) if s), metadata=stream, fields=fields,
                    partial=found.partial())
