"""ZIP/JAR and TAR archives (plain or compressed): entry names, and the text of plain-text entries.

Nothing is ever written to disk: entries are read into memory through ``ZipFile.open`` and
``TarFile.extractfile``, so a name such as ``../../evil.txt`` or ``/etc/passwd`` is only text to index
and zip slip is impossible by construction. Bombs are bounded: at most ``max_entries`` entries, at
most ``max_bytes`` of uncompressed entry data read in total (reads are size-limited; declared sizes
are not trusted), and for a compressed TAR, which must be decompressed to be walked, at most
``max_scan_bytes`` of stream.
"""

from __future__ import annotations

import io
import re
import tarfile
import zipfile
import zlib

import magic

from transforms.preparators.base import PreparationError, Prepared
from transforms.preparators.text import decode_text

MIME_TYPES = ("application/zip", "application/java-archive", "application/x-tar", "application/gzip")
MiB = 1024 * 1024
_SNIFF = 8192
_SEPARATORS = re.compile(r"[/._-]")
_READ_ERRORS = (OSError, EOFError, RuntimeError, NotImplementedError, ValueError, zlib.error,
                zipfile.BadZipFile, tarfile.TarError)


def _entries(data: bytes, max_scan: int):
    """(name, open-function or None for non-files) for each entry, in archive order."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        pass
    else:
        for info in archive.infolist():
            yield info.filename, None if info.is_dir() else (lambda info=info: archive.open(info))
        return
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")  # noqa: SIM115 - closed below
    except tarfile.TarError as err:
        raise PreparationError(f"not a ZIP or TAR archive: {err}") from None
    compressed = not isinstance(archive.fileobj, io.BytesIO)
    with archive:
        while True:
            try:
                member = archive.next()
            except tarfile.TarError:
                return  # a damaged tail: keep what was listed
            if member is None:
                return
            if compressed and member.offset_data + member.size > max_scan:
                raise _ScanLimit
            yield member.name, (lambda m=member: archive.extractfile(m)) if member.isfile() else None


class _ScanLimit(Exception):
    pass


def prepare_archive(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    max_entries = params.get("max_entries", 1000)
    budget = params.get("max_bytes", 10 * MiB)
    max_scan = params.get("max_scan_bytes", 1024 * MiB)
    names: list[str] = []
    texts: list[str] = []
    truncated = False
    entries = _entries(data, max_scan)
    try:
        for name, opener in entries:
            if len(names) >= max_entries:
                truncated = True
                break
            names.append(name)
            if opener is None or budget <= 0:
                truncated |= opener is not None
                continue
            try:
                with opener() as stream:
                    head = stream.read(min(_SNIFF, budget))
                    budget -= len(head)
                    if not head or not magic.from_buffer(head, mime=True).startswith("text/"):
                        continue
                    rest = stream.read(budget)
                    budget -= len(rest)
                    truncated |= budget <= 0 and bool(stream.read(1))
            except _READ_ERRORS:  # encrypted, unsupported method, corrupt entry: the name is still known
                continue
            texts.append(f"{name}:\n{decode_text(head + rest).strip()}")
    except _ScanLimit:
        truncated = True
    listing = "\n".join(f"{n}\n{' '.join(_SEPARATORS.sub(' ', n).split())}" for n in names)
    fields = {"entries": str(len(names)), "truncated": "true" if truncated else "false"}
    return Prepared(content="\n\n".join(s for s in (listing, *texts) if s), fields=fields)
