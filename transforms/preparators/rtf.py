"""RTF by striprtf. RTF is 7-bit text whose other characters are \\'xx escapes in the document's ANSI
code page (\\ansicpgN, cp1252 when absent) or \\uN escapes; the bytes are read as that code page (Latin-1
when it cannot decode them) and stripped to text, headers, footers and comments included. The title is the one in {\\info{\\title ...}}.
Embedded OLE objects (``\\objdata``: a workbook, a file inserted whole) are prepared by their own type and
inlined (``ole_objects``, ``embedded``)."""

from __future__ import annotations

import codecs
import re

from beamtrawl.transforms.preparators import embedded, ole_objects
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from striprtf.striprtf import rtf_to_text

MIME_TYPES = ("text/rtf", "application/rtf")
REVISION = 2  # part of the preparation fingerprint (base.py): 1 inlines embedded OLE objects, reads headers and footers;
# 2 reads comments (annotations) and their authors

_CODEPAGE = re.compile(rb"\\ansicpg(\d+)")
# striprtf drops headers and footers as destinations; a letterhead is text people search for. So are comments
# (annotations) and their authors' names and initials, which Tika writes where the comment is anchored.
_HEADER_FOOTER = re.compile(r"{\\(?:header|footer)[lrf]?(?![a-z])|{\\\*\\(?:annotation|atnauthor|atnid)(?![a-z])")
#: possessive: a control word is read one way only (three ways made 84 unclosed bytes take 6 s, ×5 per word)
_TITLE = re.compile(r"{\\title\s?((?:[^{}\\]++|\\[a-z]++-?\d*+\s?|\\[^a-z])*+)}", re.IGNORECASE)


def _as_group(match: re.Match) -> str:
    """The destination as a plain group; a comment's parts a word apart from what they follow."""
    return "{" if match.group().startswith("{\\h") or match.group().startswith("{\\f") else "{ "


def _encoding(data: bytes) -> str:
    match = _CODEPAGE.search(data[:4096])
    if match:
        try:
            return codecs.lookup(f"cp{int(match.group(1))}").name
        except LookupError:
            pass
    return "cp1252"


def prepare_rtf(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    if not data.lstrip()[:5].startswith(b"{\\rtf"):
        raise PreparationError("not an RTF document: no {\\rtf header")
    encoding = _encoding(data)
    try:
        source = data.decode(encoding)
    except UnicodeDecodeError:
        source = data.decode("latin-1")
    try:
        content = rtf_to_text(_HEADER_FOOTER.sub(_as_group, source), encoding=encoding, errors="replace")
        match = _TITLE.search(source)
        title = rtf_to_text("{\\rtf1 " + match.group(1) + "}", encoding=encoding, errors="replace") if match else ""
    except (ValueError, IndexError, LookupError, RecursionError) as err:
        raise PreparationError(f"not readable as RTF: {type(err).__name__}: {err}"[:200]) from None
    prepared = Prepared(title=" ".join(title.split()), content=content.strip())
    return embedded.inline(prepared, ole_objects.rtf_parts(data), url)
