"""Word and PowerPoint documents saved as one XML file ("Word XML Document", ``<pkg:package>``: flat OPC,
[MS-OFFMACRO2] 2.2.1): every part of the ZIP package the document stands for, the XML ones inline
(``pkg:xmlData``) and the binary ones as base64 (``pkg:binaryData``: pictures, embedded workbooks, OLE
objects). Read as XML, only the body's text was found, not its embedded documents, charts or comments: the
parts are put back into the package (:func:`package`) and the office preparator reads that, as Tika does.
"""

from __future__ import annotations

import base64
import binascii
import io
import zipfile
from xml.etree.ElementTree import ParseError, tostring
from xml.sax.saxutils import quoteattr

import defusedxml.ElementTree
from beamtrawl.transforms.preparators.base import PreparationError
from defusedxml import DefusedXmlException

NAMESPACE = b"http://schemas.microsoft.com/office/2006/xmlPackage"
#: By the ``<?mso-application progid=…?>`` Office writes first (Tika's names for them).
TYPES = {b"Word.Document": "application/vnd.ms-word2006ml", b"PowerPoint.Show": "application/vnd.ms-powerpoint2006ml"}
_PKG = "{" + NAMESPACE.decode() + "}"


def flat_type(head: bytes, root: str) -> str | None:
    """The type of an XML file whose root element is a flat OPC ``package``, from its program id."""
    if root.rsplit(":", 1)[-1] != "package" or NAMESPACE not in head:
        return None
    return next((kind for progid, kind in TYPES.items() if b'progid="' + progid + b'"' in head), None)


def _body(part) -> bytes | None:
    xml_data, binary = part.find(f"{_PKG}xmlData"), part.find(f"{_PKG}binaryData")
    if xml_data is not None and len(xml_data):
        return tostring(xml_data[0])
    if binary is not None:
        try:
            return base64.b64decode("".join(binary.itertext()))
        except (binascii.Error, ValueError):
            return None
    return None


def package(data: bytes) -> bytes:
    """The ZIP package of a flat OPC file, with a [Content_Types].xml naming each part's type."""
    try:
        root = defusedxml.ElementTree.fromstring(data, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except (DefusedXmlException, ParseError) as err:
        raise PreparationError(f"not readable as a flat OPC package: {err}"[:200]) from None
    out, overrides = io.BytesIO(), []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zipped:
        for part in root.iter(f"{_PKG}part"):
            name, body = part.get(f"{_PKG}name", "").lstrip("/"), _body(part)
            if not name or body is None or name == "[Content_Types].xml" or name in zipped.NameToInfo:
                continue
            zipped.writestr(name, body)
            overrides.append(f"<Override PartName={quoteattr('/' + name)} "
                             f"ContentType={quoteattr(part.get(f'{_PKG}contentType', ''))}/>")
        zipped.writestr("[Content_Types].xml", '<?xml version="1.0" encoding="UTF-8"?><Types xmlns='
                        '"http://schemas.openxmlformats.org/package/2006/content-types">' + "".join(overrides) + "</Types>")
    return out.getvalue()
