"""MIME type of a document's bytes, by python-magic (libmagic), refined where magic is vague.

libmagic recognises OOXML, ODF, EPUB and JAR only when the archive's members come in the usual order,
and says just "Composite Document File" for many legacy Office files. For ZIP and OLE2 containers the
members themselves decide (``[Content_Types].xml`` and the main part, the ``mimetype`` member,
``META-INF/MANIFEST.MF``; the WordDocument, Workbook or PowerPoint Document stream), whatever the
file's name says.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import magic
import olefile

from transforms.urls import extension

SNIFF_BYTES = 64 * 1024
# libmagic calls small or fragmentary HTML, and mail without the usual first headers, text/plain; the
# extension settles it.
_TEXT_BY_EXTENSION = {"html": "text/html", "htm": "text/html", "xhtml": "application/xhtml+xml",
                      "eml": "message/rfc822"}
_ZIP_MAGIC, _OLE_MAGIC = b"PK\x03\x04", olefile.MAGIC
_OOXML = (
    ("word/document.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    ("xl/workbook.xml", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    ("ppt/presentation.xml", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
)
_OLE = (("WordDocument", "application/msword"), ("Workbook", "application/vnd.ms-excel"),
        ("Book", "application/vnd.ms-excel"), ("PowerPoint Document", "application/vnd.ms-powerpoint"))


def zip_container_type(data: bytes) -> str | None:
    """The type a ZIP's members declare (OOXML, ODF, EPUB, JAR), "application/zip" for any other ZIP,
    None when the bytes are not a complete ZIP (e.g. only the first bytes of an oversize file)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            if "[Content_Types].xml" in names:
                for part, mimetype in _OOXML:
                    if part in names:
                        return mimetype
            if "mimetype" in names:
                declared = archive.open("mimetype").read(200).decode("ascii", "replace").strip()
                if declared.startswith(("application/vnd.oasis.opendocument.", "application/epub+zip")):
                    return declared
            if "META-INF/MANIFEST.MF" in names:
                return "application/java-archive"
            return "application/zip"
    except (zipfile.BadZipFile, zlib.error, OSError, ValueError, EOFError, NotImplementedError, RuntimeError):
        return None


def ole_container_type(data: bytes) -> str | None:
    try:
        with olefile.OleFileIO(data) as ole:
            return next((mimetype for stream, mimetype in _OLE if ole.exists(stream)), None)
    except (OSError, ValueError, struct.error, IndexError):
        return None


class MimeSniffer:
    """Holds a libmagic handle, which cannot be pickled: create one per worker (``DoFn.setup``)."""

    def __init__(self):
        self._magic = magic.Magic(mime=True)

    def __call__(self, data: bytes, url: str) -> str:
        if not data:
            return "application/x-empty"
        detected = self._magic.from_buffer(data[:SNIFF_BYTES])
        if data.startswith(_ZIP_MAGIC):
            return zip_container_type(data) or detected
        if data.startswith(_OLE_MAGIC):
            return ole_container_type(data) or detected
        if detected in ("text/plain", "text/xml"):
            return _TEXT_BY_EXTENSION.get(extension(url), detected)
        return detected
