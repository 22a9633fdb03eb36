"""RTF by striprtf. RTF is 7-bit text whose other characters are \\'xx escapes in the document's ANSI
code page (\\ansicpgN, cp1252 when absent) or \\uN escapes; the bytes are read as that code page (Latin-1
when it cannot decode them) and stripped to text, headers, footers and comments included. The title is the one in {\\info{\\title ...}}.
Embedded OLE objects (``\\objdata``: a workbook, a file inserted whole) are prepared by their own type and
inlined (``ole_objects``, ``embedded``), and so are pictures drawn as metafiles (``\\emfblip``, ``\\wmetafile``:
a linked object's first page, a file's icon and name: ``metafile``); pictures' descriptions (their
alternative text, or the path they were inserted from) are text too."""

from __future__ import annotations

import codecs
import io
import itertools
import re

from beamtrawl.transforms.preparators import embedded, ole_objects
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from striprtf.striprtf import rtf_to_text

MIME_TYPES = ("text/rtf", "application/rtf")
REVISION = 4  # part of the preparation fingerprint (base.py): 1 inlines embedded OLE objects, reads headers and footers;
# 2 reads comments (annotations) and their authors; 3 metafile pictures and pictures' descriptions; 4 a comment a
# word apart from the text after it

_CODEPAGE = re.compile(rb"\\ansicpg(\d+)")
# striprtf drops headers and footers as destinations; a letterhead is text people search for. So are comments
# (annotations) and their authors' names and initials, which Tika writes where the comment is anchored.
_HEADER_FOOTER = re.compile(r"{\\(?:header|footer)[lrf]?(?![a-z])|{\\\*\\(?:annotation|atnauthor|atnid)(?![a-z])")
#: possessive: a control word is read one way only (three ways made 84 unclosed bytes take 6 s, ×5 per word)
_DESCRIPTION = re.compile(r"{\\sp\s*{\\sn\s*wzDescription\s*}\s*{\\sv\s?((?:[^{}\\]++|\\[a-z]++-?\d*+\s?|\\[^a-z])*+)}")
_PICTURE = re.compile(rb"{\\pict(?![a-z])")
# A picture group's tokens: \binN and its bytes, a control word, a control symbol, a brace, hex digits, other text.
_PICTURE_TOKEN = re.compile(rb"\\bin(\d{1,10}) ?|\\([a-zA-Z]+)-?\d* ?|\\.|([{}])|([0-9a-fA-F\s]+)|[^\\{}]+", re.DOTALL)
_METAFILE_WORDS = {b"emfblip": "emf", b"wmetafile": "wmf"}
_TITLE = re.compile(r"{\\title\s?((?:[^{}\\]++|\\[a-z]++-?\d*+\s?|\\[^a-z])*+)}", re.IGNORECASE)


_BRACES = re.compile(r"\\[\\{}]|[{}]")  # groups' braces, and the escaped braces and backslashes that are text


def _as_groups(source: str) -> str:
    """The destinations as plain groups; a comment's parts a word apart from what they follow and what follows
    them ("This is a comment" anchored before "fragilistic" was read "commentfragilistic"). One pass over the
    braces finds where each comment ends: a comment in a comment, or after one left unclosed, is a group too (its
    text was lost when the first comment's group was copied as it stood), and an escaped brace opens none (``\\{``
    before ``\\*\\annotation`` took the rest of the document for a comment and lost the comments in it)."""
    opening = {match.start(): match for match in _HEADER_FOOTER.finditer(source)}
    if not opening:
        return source
    out, last, depth, comments = [], 0, 0, []  # comments: the depth each open comment's group began at
    for brace in _BRACES.finditer(source):
        if brace.group() == "{":
            if (match := opening.get(brace.start())) is not None:
                comment = not match.group().startswith(("{\\h", "{\\f"))
                out += [source[last:brace.start()], "{ " if comment else "{"]
                last = match.end()
                if comment:
                    comments.append(depth)
            depth += 1
        elif brace.group() == "}":
            depth -= 1
            if comments and comments[-1] == depth:
                comments.pop()
                out += [source[last:brace.end()], " "]
                last = brace.end()
    return "".join([*out, source[last:]])


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
        content = rtf_to_text(_as_groups(source), encoding=encoding, errors="replace")
        match = _TITLE.search(source)
        title = rtf_to_text("{\\rtf1 " + match.group(1) + "}", encoding=encoding, errors="replace") if match else ""
        descriptions = [rtf_to_text("{\\rtf1 " + m.group(1) + "}", encoding=encoding, errors="replace")
                        for m in _DESCRIPTION.finditer(source)]
    except (ValueError, IndexError, LookupError, RecursionError) as err:
        raise PreparationError(f"not readable as RTF: {type(err).__name__}: {err}"[:200]) from None
    content = "\n".join(s for s in (content.strip(), *(" ".join(d.split()) for d in descriptions)) if s)
    prepared = Prepared(title=" ".join(title.split()), content=content)
    return embedded.inline(prepared, itertools.chain(ole_objects.rtf_parts(data), _metafiles(data)), url)


def _metafiles(data: bytes):
    """(name, opener) of the pictures drawn as metafiles, ``picture N.emf`` or ``.wmf``; a ``{\\pict`` inside
    another is part of it (each byte is scanned once)."""
    end = 0
    for index, match in enumerate(_PICTURE.finditer(data), start=1):
        if match.start() < end:
            continue
        kind, body, end = _picture(data, match.end())
        if kind:
            yield f"picture {index}.{kind}", (lambda b=body: io.BytesIO(b))


def _picture(data: bytes, at: int) -> tuple[str, bytes, int]:
    """(the metafile kind or "", its bytes, where the group ends) of the ``{\\pict`` group from ``at``;
    nested groups (``\\picprop``, ``\\blipuid``) are skipped, hex digits and ``\\binN`` bytes read."""
    depth, kind, out, digits = 1, "", bytearray(), bytearray()
    while depth and at < len(data):
        token = _PICTURE_TOKEN.match(data, at)
        if token is None:  # a backslash ends the file
            break
        at = token.end()
        binary, word, brace, hexes = token.groups()
        if brace:
            depth += 1 if brace == b"{" else -1
        elif binary:
            if depth == 1:
                out += _unhex(digits) + data[at:at + int(binary)]
                digits.clear()
            at += int(binary)
        elif word and depth == 1:
            kind = _METAFILE_WORDS.get(word, kind)
        elif hexes and depth == 1:
            digits += b"".join(hexes.split())
    return (kind, bytes(out + _unhex(digits)), at) if kind else ("", b"", at)


def _unhex(digits: bytearray) -> bytes:
    return bytes.fromhex(digits[:len(digits) & ~1].decode())
