"""XML: the text content of the document, parsed without entities or external references.

defusedxml (on the standard library's expat) refuses any entity declaration and any external
reference, so an XXE file cannot read local files or URLs and a billion-laughs bomb is refused at its
first declaration instead of being expanded. A bare DOCTYPE (no entities) is allowed: expat never
fetches the external DTD it names.
"""

from __future__ import annotations

from xml.etree.ElementTree import ParseError

import defusedxml.ElementTree
from beamtrawl.transforms.preparators import flat_opc
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from defusedxml import DefusedXmlException

# SVG's text is its <text> and <title>; a flat OPC or Word 2003 XML document its own reader cannot read is XML
MIME_TYPES = ("text/xml", "application/xml", "image/svg+xml", *flat_opc.TYPES.values(), "application/vnd.ms-wordml")


def local_name(tag) -> str:
    """An element's tag without its namespace (a comment's or a processing instruction's: "")."""
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def parse(data: bytes):
    """The root element, parsed without entities or external references (see above)."""
    try:
        return defusedxml.ElementTree.fromstring(data, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as err:
        raise PreparationError(f"XML refused (entities or external references): {err}") from None
    except ParseError as err:
        raise PreparationError(f"not well-formed XML: {err}") from None


def title_of(root) -> str:
    """The text of the first ``title`` element, whatever its namespace."""
    return next((" ".join("".join(e.itertext()).split()) for e in root.iter() if local_name(e.tag) == "title"), "")


def text_of(root) -> Prepared:
    """The first ``title`` element as the title, every text chunk a line."""
    title = title_of(root)
    lines = (" ".join(chunk.split()) for chunk in root.itertext())
    return Prepared(title=title, content="\n".join(line for line in lines if line))


def prepare_xml(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    return text_of(parse(data))
