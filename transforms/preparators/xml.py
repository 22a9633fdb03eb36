"""XML: the text content of the document, parsed without entities or external references.

defusedxml (on the standard library's expat) refuses any entity declaration and any external
reference, so an XXE file cannot read local files or URLs and a billion-laughs bomb is refused at its
first declaration instead of being expanded. A bare DOCTYPE (no entities) is allowed: expat never
fetches the external DTD it names.
"""

from __future__ import annotations

from xml.etree.ElementTree import ParseError

import defusedxml.ElementTree
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from defusedxml import DefusedXmlException

MIME_TYPES = ("text/xml", "application/xml", "image/svg+xml")  # SVG's text is its <text> and <title>


def _local(tag) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def prepare_xml(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    try:
        root = defusedxml.ElementTree.fromstring(
            data, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as err:
        raise PreparationError(f"XML refused (entities or external references): {err}") from None
    except ParseError as err:
        raise PreparationError(f"not well-formed XML: {err}") from None
    title = next((" ".join("".join(e.itertext()).split()) for e in root.iter() if _local(e.tag) == "title"), "")
    lines = (" ".join(chunk.split()) for chunk in root.itertext())
    return Prepared(title=title, content="\n".join(line for line in lines if line))
