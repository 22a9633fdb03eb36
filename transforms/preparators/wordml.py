"""Word 2003 XML documents (``<w:wordDocument>``, saved by Word 2003 and later as "Word 2003 XML Document";
Tika's application/vnd.ms-wordml): each paragraph a line, its runs joined as Word shows them (Word splits a
word into runs where its formatting or revision changes: ``j`` ``um`` ``ped``, which the XML reader's line per
text chunk indexed as three words); text outside paragraphs (the document's properties) a line per chunk, as
the XML reader reads it. Deleted text (``w:delText``) and field codes (``w:instrText``) are not what the
document shows and are left out, as the DOCX reader leaves them out, and so is a field's base64 data
(``w:fldData``).

The base64 of ``w:binData`` (the document's pictures, drawn objects' previews as compressed metafiles,
``.emz``, and ``oledata.mso``: its OLE objects) is not indexed as words: each part is prepared by its own type
and inlined (``embedded``). ``oledata.mso`` is a compound file whose streams each hold one object as a 4-byte
size and a zlib stream of the object's own compound file (an embedded Word file, a package, a PDF).
"""

from __future__ import annotations

import base64
import binascii
import io
import struct

import olefile
from beamtrawl.transforms.preparators import compressed, embedded, xml
from beamtrawl.transforms.preparators.base import Prepared

REVISION = 2  # part of the preparation fingerprint (base.py): 2 joins a paragraph's runs, reads oledata.mso's objects
MIME_TYPES = ("application/vnd.ms-wordml",)
_WORD = "http://schemas.microsoft.com/office/word/2003/wordml"
_OLE_DATA = "oledata.mso"
_PARAGRAPH, _BIN_DATA = f"{{{_WORD}}}p", f"{{{_WORD}}}binData"
_NOT_SHOWN = {f"{{{_WORD}}}delText", f"{{{_WORD}}}instrText", f"{{{_WORD}}}fldData", _BIN_DATA}
_SPACES = {f"{{{_WORD}}}tab": " ", f"{{{_WORD}}}br": "\n", f"{{{_WORD}}}cr": "\n"}


def wordml_type(head: bytes, root: str) -> str | None:
    """The type of an XML file whose root element is Word 2003's ``wordDocument``."""
    if root.rsplit(":", 1)[-1] == "wordDocument" and _WORD.encode() in head:
        return MIME_TYPES[0]
    return None


def _lines(root) -> list[str]:
    """A line for each paragraph (a text box's paragraphs after the one holding it) and for each text chunk
    outside paragraphs, in document order; walked with a stack, so nesting depth costs no recursion."""
    out: list = []
    stack: list = [(root, None)]
    while stack:
        node, outer = stack.pop()
        if isinstance(node, str):  # a tail outside paragraphs, queued after its element's children
            out.append(node)
            continue
        if node.tag in _NOT_SHOWN:
            continue
        paragraph = outer
        if node.tag == _PARAGRAPH:
            paragraph = []
            out.append(paragraph)
        elif paragraph is not None:
            paragraph.append(_SPACES.get(node.tag, node.text or ""))
        elif node.text:
            out.append(node.text)
        if outer is None and node.tail:
            stack.append((node.tail, None))
        stack.extend((child, paragraph) for child in reversed(node))
    lines = []
    for item in out:
        for line in ("".join(item) if isinstance(item, list) else item).splitlines():
            if line.split():
                lines.append(" ".join(line.split()))
    return lines


def _ole_objects(data: bytes):
    """(name, opener) of each object in ``oledata.mso``: the stream's zlib data after its 4-byte size."""
    try:
        storage = olefile.OleFileIO(data)
        streams = [(name, storage.openstream(name).read()) for name in storage.listdir()]
    except (OSError, ValueError, struct.error):
        return
    for name, body in streams:
        yield f"{_OLE_DATA}/{'/'.join(name)}", (lambda b=body: compressed.ZLIB.reader(io.BytesIO(b[4:])))


def prepare_wordml(data: bytes, url: str, mimetype: str, params: dict):
    root = xml.parse(data)
    parts = []
    for element in root.iter(_BIN_DATA):
        name = element.get(f"{{{_WORD}}}name", "").removeprefix("wordml://")
        try:
            body = base64.b64decode("".join(element.itertext()))
        except (binascii.Error, ValueError):
            continue
        if name == _OLE_DATA:
            parts.extend(_ole_objects(body))
        else:
            parts.append((name, lambda b=body: io.BytesIO(b)))
    return embedded.inline(Prepared(title=xml.title_of(root), content="\n".join(_lines(root))), parts, url)
