"""OneNote sections (``.one``, OneNote 2007 to Microsoft 365: the MS-ONESTORE revision store), read by
onenote-converter (a Rust parser with Python bindings, a wheel: no helper program). Each page is rendered
to Markdown by the library and that to text by the Markdown preparator, so a page's title is a heading:
the first page's title is the document's title, every page title a headline. Pictures' alternative text
(OneNote keeps the text it recognised in them there) stays; the pictures themselves are not read.

Files inserted into a page (a Word document, a PDF) are prepared by their own type and inlined (``embedded``),
as an Office document's are: onenote-converter names them but does not give their bytes, so they are taken
from the section's file data store objects ([MS-ONESTORE] 2.6.13: a header GUID, the length, 12 reserved
bytes, then the file), which hold the pictures too (left out, as above).

The date and time OneNote writes under each page's title ("Wednesday, December 11, 2019", "5:37 PM", in the
author's local time) are text of the page that onenote-converter does not return, and its page times cannot
rebuild them (they are UTC, and ten years early: the file's Time32 read as Unix time). They are taken from
the section's stored strings (``TextExtendedAscii``: a 4-byte length, then the characters) that have exactly
that shape (12- or 24-hour times), and kept once each in the document's metadata with the pages' authors, so
a search for the page's day or its author finds it.

The parser is native code: a panic in it on a damaged file is this document's failure, as any other
preparator's exception is, and the isolated preparing process bounds its time and memory.
"""

from __future__ import annotations

import io
import re
import struct

import magic
from beamtrawl.transforms.preparators import embedded
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.markdown import prepare_markdown

MIME_TYPES = ("application/onenote", "application/msonenote")
# The revision store's file-type GUID {7B5C52E4-D88C-4DA7-AEB1-5378D02996D3}, little-endian, opens a section.
SECTION_MAGIC = bytes.fromhex("e4525c7b8cd8a74daeb15378d02996d3")
REVISION = 2  # part of the preparation fingerprint (base.py): 1 reads the files inserted into pages, 2 the date
# and time under each page's title, and the pages' authors
# FileDataStoreObject's header GUID {BDE316E7-2665-4511-A4C4-8D4D0B7A9EAC}, little-endian
_FILE_DATA = bytes.fromhex("e716e3bd65261145a4c48d4d0b7a9eac")
_FILE_DATA_AT = 16 + 8 + 4 + 8  # the GUID, the length, then 12 bytes unused or reserved


_MAX_DATES = 10_000
_DAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
# the lines under a page's title, in OneNote's English format, as stored: an ASCII string after its length
_DATE_LINE = re.compile(rf"(?:{_DAYS}), (?:{_MONTHS}) [0-9]{{1,2}}, [0-9]{{4}}|[0-9]{{1,2}}:[0-5][0-9](?: [AP]M)?".encode())


def page_dates(data: bytes) -> list[str]:
    """The date and time lines under the pages' titles, each once, in the order stored."""
    found: dict[str, None] = {}
    for match in _DATE_LINE.finditer(data):
        start, text = match.start(), match.group()
        if start >= 4 and int.from_bytes(data[start - 4:start], "little") == len(text):
            found.setdefault(text.decode("ascii"))
            if len(found) == _MAX_DATES:  # a section has a date and a time a page; a made-up one may have millions
                break
    return list(found)


def inserted_files(data: bytes):
    """(name, opener) of each file stored in the section that is not a picture, in the order stored."""
    at, number = data.find(_FILE_DATA), 0
    while at >= 0 and at + _FILE_DATA_AT <= len(data):
        (length,) = struct.unpack_from("<Q", data, at + 16)
        body = data[at + _FILE_DATA_AT:at + _FILE_DATA_AT + length]
        if body and not magic.from_buffer(body[:8192], mime=True).startswith("image/"):
            number += 1
            yield f"file{number}", (lambda b=body: io.BytesIO(b))
        at = data.find(_FILE_DATA, at + _FILE_DATA_AT + len(body))


def prepare_onenote(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    import onenote  # onenote-converter, loaded on the first section

    if not data.startswith(SECTION_MAGIC):
        raise PreparationError("not a OneNote section: no revision store header")
    try:
        section = onenote.read_section(data)
        markdown = section.markdown()
        pages = section.page_count
        authors = [author for page in section.pages for author in page.authors or ()]
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as err:  # noqa: BLE001 - the parser's panics are BaseExceptions (pyo3)
        raise PreparationError(f"not readable as a OneNote section: {type(err).__name__}: {err}"[:200]) from None
    prepared = prepare_markdown(markdown.encode("utf-8"), url, "text/markdown", {})
    prepared.fields = {**prepared.fields, "pages": str(pages)}
    prepared.metadata = "\n".join(dict.fromkeys(filter(None, [prepared.metadata, *authors, *page_dates(data)])))
    return embedded.inline(prepared, inserted_files(data), url)
