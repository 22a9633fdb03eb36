"""Word 2003 XML documents (``<w:wordDocument>``, saved by Word 2003 and later as "Word 2003 XML Document";
Tika's application/vnd.ms-wordml): the text as the XML reader reads it, without the base64 of ``w:binData``
(the document's pictures, drawn objects' previews as compressed metafiles, ``.emz``, and ``oledata.mso``: its
OLE objects). Read as plain XML, that base64 was indexed as words; here each part is prepared by its own type
and inlined (``embedded``): a preview names an inserted file or shows a chart's labels. Not read: the objects
in ``oledata.mso``, whose storages olefile lists without their streams.
"""

from __future__ import annotations

import base64
import binascii
import io

from beamtrawl.transforms.preparators import embedded, xml

REVISION = 1  # part of the preparation fingerprint (base.py)
MIME_TYPES = ("application/vnd.ms-wordml",)
_WORD = "http://schemas.microsoft.com/office/word/2003/wordml"
_OLE_DATA = "oledata.mso"


def wordml_type(head: bytes, root: str) -> str | None:
    """The type of an XML file whose root element is Word 2003's ``wordDocument``."""
    if root.rsplit(":", 1)[-1] == "wordDocument" and _WORD.encode() in head:
        return MIME_TYPES[0]
    return None


def prepare_wordml(data: bytes, url: str, mimetype: str, params: dict):
    root = xml.parse(data)
    parts = []
    for element in root.iter(f"{{{_WORD}}}binData"):
        name = element.get(f"{{{_WORD}}}name", "").removeprefix("wordml://")
        if name != _OLE_DATA:
            try:
                body = base64.b64decode("".join(element.itertext()))
                parts.append((name, lambda b=body: io.BytesIO(b)))
            except (binascii.Error, ValueError):
                pass
        element.text = None
    return embedded.inline(xml.text_of(root), parts, url)
