"""Microsoft Publisher 98–2016 (``.pub``): the text of its stories, as Tika (POI's HPBF) reads it. A
publication is an OLE2 compound file whose ``Quill/QuillSub/CONTENTS`` stream is Quill's chunk file: a
``CHNKINK`` header, then 24-byte entries naming each chunk (``TEXT``, ``STSH``, ``FONT``…) with its offset
and length; the TEXT chunks hold every story's characters in UTF-16, paragraphs ended by CR. Fonts, styles
and layout are not needed for search. Title and properties come from SummaryInformation, as for the other
legacy Office files. No library on PyPI reads Publisher files; libmspub's ``pub2xhtml`` would need a
helper program for what is a dozen lines here.

Bounds: entries are read within the header's first sector (at most ``_MAX_ENTRIES``), each chunk within
the stream, and the chunks' text is at most the stream's size.
"""

from __future__ import annotations

import re
import struct

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.legacy import ole_stream

MIME_TYPES = ("application/x-mspublisher", "application/vnd.ms-publisher")
STREAM = "Quill/QuillSub/CONTENTS"
_HEADER, _ENTRIES, _ENTRY, _MARKER = b"CHNKINK ", 0x20, 24, 0x18
_MAX_ENTRIES = (0x200 - _ENTRIES) // _ENTRY  # the entries fill the stream's first 512 bytes at most
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffc]")  # what a story holds besides text (objects' marks)


def _chunks(contents: bytes):
    """(name, bytes) of each chunk the header lists."""
    for index in range(_MAX_ENTRIES):
        at = _ENTRIES + index * _ENTRY
        if at + _ENTRY > len(contents) or struct.unpack_from("<H", contents, at)[0] != _MARKER:
            return
        name = contents[at + 2:at + 6]
        offset, length = struct.unpack_from("<II", contents, at + 16)
        yield name, contents[offset:offset + length]


def story_text(contents: bytes) -> str:
    """The TEXT chunks' characters, at most as many bytes as the stream holds: 20 entries naming the whole
    stream (lengths that lie, chunks that overlap) made 20 copies of it, 2 GB of text from a 100 MB file."""
    pieces, left = [], len(contents)
    for name, chunk in _chunks(contents):
        if name == b"TEXT" and left > 0:
            pieces.append(chunk[:left].decode("utf-16-le", "replace"))
            left -= len(chunk)
    return "".join(pieces)


def prepare_publisher(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    contents, title, metadata = ole_stream(data, STREAM, "Publisher file")
    if not contents.startswith(_HEADER):
        raise PreparationError("not a Publisher file: its CONTENTS stream has no CHNKINK header")
    text = story_text(contents)
    lines = (" ".join(_CONTROL.sub(" ", line).split()) for line in text.replace("\r", "\n").split("\n"))
    return Prepared(title=title, content="\n".join(line for line in lines if line), metadata=metadata)
