"""MIME type of a document's bytes, by python-magic (libmagic), refined where magic is vague or wrong.
:class:`MimeSniffer` is the one place that decides a document's type; the rules, in order:

libmagic recognises OOXML, ODF, EPUB and JAR only when the archive's members come in the usual order,
and says just "Composite Document File" for many legacy Office files. For ZIP and OLE2 containers the
members themselves decide (``[Content_Types].xml`` and the main part, Visio's too, an XPS package's
relationships, the ``mimetype`` member, ``META-INF/MANIFEST.MF``; the WordDocument, Workbook, PowerPoint Document, VisioDocument or Publisher's
Quill stream), whatever the file's name says. An EMF (libmagic: octet-stream) is known by its header record.

Compressed bytes (gzip, bzip2, xz, zstd) are a compressed TAR when the name says so (``.tar.gz``,
``.tgz``, ``.tar.xz``, …), else a single compressed file, whose inner file is typed later by these same
rules (``compressed``). When the name says a text type and the bytes read as text, the document is
text, whatever magic finds at some offset (libmagic calls a wiki page with "SEGA PICO" at byte 256 a
ROM), or a vaguer or wrong text type (a ``.md`` changelog opening with ``<table>`` is not HTML, a
``.py`` is not Ruby); only mail keeps magic's word — so such text is typed without libmagic unless it
begins as magic's mail rules look (a header and its colon, "Forward to", …): magic reads a ``.txt`` for about
a millisecond, more than the rest of its preparation. Text named like a manual page (``pthreads.7``,
``Carp.3pm``) that begins like roff is a manual page. Text that magic calls plain or HTML but that
begins with a mail's header block is a mail (message/rfc822), or an mbox when an mbox separator line comes
first (:func:`mail_type`); an OLE2 file with Outlook's property stream is a .msg, a file beginning ``!BDN``
an Outlook .pst/.ost; one beginning ``bplist00`` a binary property list, or a Safari webarchive when it holds a
main resource; gzip bytes named ``.warc.gz``/``.arc.gz`` a web archive. Text whose first element is an XML root element
(after any declaration, comments or DOCTYPE) is XML even without ``<?xml``: ``html`` makes it HTML, a flat OPC
``package`` that Word or PowerPoint wrote a document (``flat_opc``), Word 2003's ``wordDocument`` one (``wordml``).
"""

from __future__ import annotations

import io
import mimetypes
import re
import struct
import zipfile
import zlib

import magic
import olefile
from beamtrawl.transforms.preparators import (
    flat_opc,
    hwp,
    iwork,
    metafile,
    office,
    publisher,
    quattro,
    visio,
    vsdx,
    wordml,
    xps,
)
from beamtrawl.transforms.preparators.compressed import compressed_type
from beamtrawl.transforms.preparators.dbf import memo_type
from beamtrawl.transforms.preparators.info import info_type
from beamtrawl.transforms.preparators.onenote import SECTION_MAGIC as _ONENOTE_MAGIC
from beamtrawl.transforms.preparators.plist import plist_type
from beamtrawl.transforms.preparators.statistics import data_file_type
from beamtrawl.transforms.urls import extension, file_name

SNIFF_BYTES = 64 * 1024
# libmagic calls small or fragmentary HTML, and mail without the usual first headers, text/plain; the
# extension settles it.
_TEXT_BY_EXTENSION = {"html": "text/html", "htm": "text/html", "xhtml": "application/xhtml+xml",
                      "eml": "message/rfc822"}
# Text types named by application/…: the name claims text with these as with text/*.
_TEXT_APPLICATION = {"application/xml", "application/json", "application/javascript", "application/x-sh",
                     "application/xhtml+xml", "application/x-tex", "application/x-latex", "application/rtf"}
_XML_NAMES = {"application/xml", "text/xml", "application/xhtml+xml", "image/svg+xml"}
# Before the root element: a BOM, whitespace, the declaration or other processing instructions, comments, a DOCTYPE.
_XML_PROLOG = re.compile(rb"(?:\xef\xbb\xbf)?(?:\s+|<\?.*?\?>|<!--.*?-->|<!DOCTYPE(?:[^\[>]|\[.*?\])*>)*", re.DOTALL)
_XML_ROOT = re.compile(rb"<([A-Za-z_][\w.:-]*)[\s/>]")
# A manual page's name ends in its section (``ls.1``, ``Carp.3pm``, ``siginfo_t.3type``); roff begins with a
# comment, a header or a ``.so`` redirect.
_MAN_NAME = re.compile(r"\.[1-9][a-z]*$")
_ROFF_START = re.compile(rb"\s*(?:\.\\\"|'\\\"|\.(?:TH|Dd|Dt|so|ig|de)\s)")
# libmagic's rules for mail and news (Magdir/mail.news: message/rfc822, message/news) all test the first bytes
# for a header name and its colon ("From:", "Received:", "return-path:", …) or one of these phrases; text
# beginning otherwise cannot be mail to magic.
# libmagic reads past a UTF-8 byte order mark (Notepad's), so a mail saved as UTF-8 .txt is mail to it.
_MAIL_START = re.compile(rb"(?:\xef\xbb\xbf)?(?:[A-Za-z][\w-]*:|From |Forward to|Pipe to|N?#! rnews|Article|BABYL)",
                         re.IGNORECASE)
_TEXT_CONTROLS = bytes(set(range(32)) - set(b"\t\n\r\f\b\x1b"))
_ZIP_MAGIC, _OLE_MAGIC = b"PK\x03\x04", olefile.MAGIC
_OOXML = (
    ("word/document.xml", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    ("xl/workbook.xml", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    ("ppt/presentation.xml", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
    ("xl/workbook.bin", office.XLSB),
)
_OLE = (("WordDocument", "application/msword"), ("Workbook", "application/vnd.ms-excel"),
        ("Book", "application/vnd.ms-excel"), ("PowerPoint Document", "application/vnd.ms-powerpoint"),
        ("__properties_version1.0", "application/vnd.ms-outlook"),  # an Outlook .msg (libmagic: often OLE storage)
        (visio.STREAM, "application/vnd.visio"), (publisher.STREAM, "application/x-mspublisher"),  # libmagic: vnd.ms-office
        (quattro.STREAM, quattro.MIME_TYPES[0]))  # libmagic: vnd.ms-office
_PST_MAGIC = b"!BDN"  # Outlook's personal folders (.pst, .ost): libmagic names them as it names a .msg
# An RFC 822 header: a name of printable ASCII without colon or space, a colon; or a folded continuation.
_HEADER_LINE = re.compile(rb"[!-9;-~]+:|[ \t]")
# Names only mail carries (not HTTP, Debian control files or RFC-style text): two of them, in a header block
# that runs from the first line to a blank line, make text a mail (Tika's rule is like it).
_MAIL_HEADERS = {b"from", b"to", b"cc", b"subject", b"date", b"message-id", b"received", b"return-path",
                 b"delivered-to", b"reply-to", b"in-reply-to", b"references", b"mime-version", b"x-mailer",
                 b"sender", b"list-id", b"x-original-to", b"thread-topic", b"newsgroups", b"path", b"x-uidl"}


def zip_container_type(data: bytes) -> str | None:
    """The type a ZIP's members declare (OOXML, ODF, EPUB, JAR), "application/zip" for any other ZIP,
    None when the bytes are not a complete ZIP (e.g. only the first bytes of an oversize file)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            if "[Content_Types].xml" in names:
                for part, mimetype in _OOXML:
                    if part in names:
                        return office.variant_of(archive.read("[Content_Types].xml")) or mimetype
                if vsdx.MAIN_PART in names and (visio := vsdx.visio_type(archive.read("[Content_Types].xml"))):
                    return visio
            if "mimetype" in names:
                declared = archive.open("mimetype").read(200).decode("ascii", "replace").strip()
                if declared.startswith(("application/vnd.oasis.opendocument.", "application/epub+zip")):
                    return declared
            if "META-INF/MANIFEST.MF" in names:
                return "application/java-archive"
            return iwork.iwork_type(archive) or xps.xps_type(archive) or "application/zip"
    except (zipfile.BadZipFile, zlib.error, OSError, ValueError, EOFError, NotImplementedError, RuntimeError):
        return None


def ole_container_type(data: bytes) -> str | None:
    try:
        with olefile.OleFileIO(data) as ole:
            if ole.exists("FileHeader") and ole.openstream("FileHeader").read(17) == hwp.SIGNATURE:
                return "application/x-hwp"  # libmagic: application/x-hwp or, for some, x-ole-storage
            return next((mimetype for stream, mimetype in _OLE if ole.exists(stream)), None)
    except (OSError, ValueError, struct.error, IndexError, RecursionError):  # olefile walks sibling chains recursively
        return None


def _mail_headers(head: bytes) -> bool:
    """Whether ``head`` begins with a mail's header block: header lines only, up to a blank line, at least
    two of them names only mail uses."""
    known: set[bytes] = set()
    for line in head.split(b"\n")[:200]:
        line = line.rstrip(b"\r")
        if not line:
            return len(known) >= 2
        if _HEADER_LINE.match(line) is None:
            return False
        if not line[:1].isspace():
            name = line.split(b":", 1)[0].lower()
            if name in _MAIL_HEADERS:
                known.add(name)
    return False


def mail_type(data: bytes) -> str | None:
    """message/rfc822 for text that begins with a mail's header block, application/mbox for one whose
    first line is an mbox separator ("From sender date") with such a block after it; else None. libmagic
    calls many such files text/plain or text/html (HyperKitty's, CPython's test mails)."""
    head = data[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf")
    if head.startswith(b"From "):
        rest = head.split(b"\n", 1)[1] if b"\n" in head else b""
        return "application/mbox" if _mail_headers(rest) else None
    return "message/rfc822" if _mail_headers(head) else None


def claimed_type(url: str) -> str | None:
    """The type the file's name says (by its extension); None for a name that says nothing or says
    "compressed" (``notes.txt.gz`` is not text)."""
    claimed, encoding = mimetypes.guess_type(file_name(url), strict=False)
    return None if encoding else claimed


def reads_as_text(sample: bytes) -> bool:
    """Whether bytes are text: no NUL, and UTF-8 (a character cut at the end of the sample is fine) or an
    8-bit charset with hardly any control characters."""
    if not sample or b"\0" in sample:
        return False
    try:
        sample.decode("utf-8")
        return True
    except UnicodeDecodeError as err:
        if err.reason == "unexpected end of data" and err.start >= len(sample) - 3:
            return True
    return len(sample) - len(sample.translate(None, _TEXT_CONTROLS)) <= len(sample) // 100


def xml_root(data: bytes) -> str | None:
    """The name of the first element, when the bytes begin like XML (a prolog, then an element)."""
    head = data[:SNIFF_BYTES]
    root = _XML_ROOT.match(head, _XML_PROLOG.match(head).end())
    return root.group(1).decode("ascii") if root else None


def man_page(data: bytes, url: str) -> bool:
    """Whether text is a manual page: named by its section, beginning like roff (libmagic calls many
    pages C, JavaScript or HTML, and ``mimetypes`` knows no ``.7``)."""
    return bool(_MAN_NAME.search(file_name(url))) and bool(_ROFF_START.match(data))


def _textual(mimetype: str) -> bool:
    return (mimetype.startswith(("text/", "message/")) or mimetype in _TEXT_APPLICATION or mimetype in _XML_NAMES
            or mimetype.endswith(("+xml", "+json")))


def _named_text(mimetype: str) -> bool:
    """Whether a name's type is text some preparator reads as such (not ``application/rss+xml``)."""
    return mimetype.startswith("text/") or mimetype in _TEXT_APPLICATION or mimetype in _XML_NAMES


def _text_type(data: bytes, detected: str, claimed: str | None) -> str:
    """The type of bytes that read as text: ``claimed`` by a name that says text, whatever magic found (a
    binary format at some offset; HTML, C, Ruby or JavaScript in a ``.md``, ``.txt`` or ``.py``; HTML in a
    ``.json``), except that a mail named ``.txt`` stays a mail; else ``detected`` by magic. A root element
    makes XML of a file named as XML, or of an unnamed one that closes it (``changelog`` holding
    ``<a>…</a>``); a ``.txt`` or ``.html`` holding tags stays what its name says."""
    if claimed in _XML_NAMES or (claimed is None and detected == "text/plain"):
        root = xml_root(data)
        if root is not None and root.lower() == "html" and claimed is None:
            return "text/html"
        if root is not None and (claimed is not None or data.rstrip().endswith(f"</{root}>".encode())):
            word = flat_opc.flat_type(data[:SNIFF_BYTES], root) or wordml.wordml_type(data[:SNIFF_BYTES], root)
            if word is not None:
                return word
            return claimed if claimed in ("image/svg+xml", "application/xhtml+xml") else "text/xml"
    if detected.startswith("message/") or not (claimed is not None and _named_text(claimed)):
        return detected
    return claimed


class MimeSniffer:
    """Holds a libmagic handle, which cannot be pickled: create one per worker (``DoFn.setup``)."""

    def __init__(self):
        self._magic = magic.Magic(mime=True)

    def __call__(self, data: bytes, url: str) -> str:
        if not data:
            return "application/x-empty"
        sample = data[:SNIFF_BYTES]
        if data.startswith(_ZIP_MAGIC):
            return zip_container_type(data) or self._magic.from_buffer(sample)
        if data.startswith(_OLE_MAGIC):
            return ole_container_type(data) or self._magic.from_buffer(sample)
        if data.startswith(_PST_MAGIC):
            return "application/vnd.ms-outlook-pst"
        if data.startswith(_ONENOTE_MAGIC):  # libmagic: application/octet-stream
            return "application/onenote"
        if metafile.is_emf(data):  # libmagic: application/octet-stream
            return "image/emf"
        statistical = data_file_type(data, file_name(url)) or memo_type(data, file_name(url))  # libmagic: data
        if statistical is not None:
            return statistical
        listed = plist_type(data, file_name(url))  # libmagic: application/octet-stream
        if listed is not None:
            return listed
        manual = info_type(data)  # libmagic: application/octet-stream (the node separator is a control character)
        if manual is not None:
            return manual
        archived = _web_archive_type(data, file_name(url))
        if archived is not None:
            return archived
        packed = compressed_type(data, file_name(url))
        if packed is not None:
            return packed
        if man_page(data, url) and reads_as_text(sample):
            return "text/troff"
        claimed = claimed_type(url)
        if claimed is not None and _named_text(claimed) and not _MAIL_START.match(data) and reads_as_text(sample):
            return _by_extension(_text_type(data, claimed, claimed), url)  # magic could only have said mail
        detected = self._magic.from_buffer(sample)
        if (detected.startswith("text/") or (claimed is not None and _textual(claimed))) and reads_as_text(sample):
            detected = _text_type(data, detected, claimed)
            if detected in ("text/plain", "text/html", "application/mbox") and _MAIL_START.match(data):
                detected = mail_type(data) or detected
        return _by_extension(detected, url)


def _web_archive_type(data: bytes, name: str) -> str | None:
    """A gzip-compressed WARC or ARC (``.warc.gz``, ``.arc.gz``: each record a gzip member) is a web archive,
    read record by record by warcio, not a single compressed file cut at the archive preparator's bounds."""
    if not data.startswith(b"\x1f\x8b"):
        return None
    lowered = name.lower()
    return "application/warc" if lowered.endswith(".warc.gz") else \
        "application/x-ia-arc" if lowered.endswith(".arc.gz") else None


def _by_extension(mimetype: str, url: str) -> str:
    """libmagic's word for HTML fragments and some mail is text/plain (or text/xml): the extension settles it."""
    if mimetype in ("text/plain", "text/xml"):
        return _TEXT_BY_EXTENSION.get(extension(url), mimetype)
    return mimetype
