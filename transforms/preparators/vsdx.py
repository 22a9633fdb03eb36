"""Visio 2013 and later drawings, templates and stencils (``.vsdx``, ``.vsdm``, ``.vstx``, ``.vstm``, ``.vssx``,
``.vssm``): an Open Packaging ZIP like DOCX, whose pages (``visio/pages/page*.xml``) hold shapes with their text
(``Text``, its formatting marks ``cp``/``pp``/``tp`` empty elements among the characters). Each page's name is a
headline and its shapes' text a line each, pages in the drawing's order; a stencil, which has masters instead of
pages, gives its masters' names and text. Title from the core properties. Read as a ZIP before, the index held the
package's part names only. Parts are read as ``xps.read_part`` reads them (bounded, no entities), each once and
pages as XPS pages are, at most ``xps.MAX_PAGES`` within ``xps.MAX_PAGES_BYTES`` (a 44 KB drawing listing its one
page 2,000 times took 3 s, and had no bound).
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.xml import local_name
from beamtrawl.transforms.preparators.xps import (
    MAX_PAGES,
    MAX_PAGES_BYTES,
    PART_ERRORS,
    core_title,
    read_pages,
    read_part,
)

#: The main part's content type in [Content_Types].xml -> the MIME type (Tika's names).
_TYPES = {f"application/vnd.ms-visio.{kind}{macros}.main+xml": f"application/vnd.ms-visio.{kind}{suffix}"
          for kind in ("drawing", "template", "stencil")
          for macros, suffix in (("", ""), (".macroEnabled", ".macroenabled.12"))}
MIME_TYPES = tuple(_TYPES.values())
MAIN_PART = "visio/document.xml"
# An Override element's attributes: [^<>] stops each try at the next tag (``[^>]*PartName=`` tried again from every
# "<Override" of a part without ">", 40,000 of them in 1 KB zipped took 44 s to type, quadratically).
_OVERRIDE = re.compile(rb"<Override\b([^<>]*)>", re.IGNORECASE)
_MAIN_PART_NAME = re.compile(rb'PartName="/visio/document\.xml"', re.IGNORECASE)
_CONTENT_TYPE = re.compile(rb'ContentType="([^"]+)"')
_RELATIONSHIP = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


def visio_type(content_types: bytes) -> str | None:
    """The MIME type of a package with a Visio main part, from the content type [Content_Types].xml gives it; None
    when it gives none of Visio's (a ZIP holding a ``visio/document.xml`` is not a drawing: read as one, its
    members' text was lost without a word)."""
    override = next((o.group(1) for o in _OVERRIDE.finditer(content_types) if _MAIN_PART_NAME.search(o.group(1))), None)
    declared = _CONTENT_TYPE.search(override) if override else None
    return _TYPES.get(declared.group(1).decode("ascii", "replace")) if declared else None


def _listed(archive: zipfile.ZipFile, folder: str, index: str, item: str) -> list[tuple[str, str]]:
    """(name, part) of each page (or master) in the order ``visio/<folder>/<index>`` lists them, by its relationships
    (a target relative to the folder or absolute), each part once and at most ``MAX_PAGES`` + 1 of them."""
    listing = read_part(archive, f"visio/{folder}/{index}")
    targets = {r.get("Id"): posixpath.normpath(target[1:] if (target := r.get("Target", "")).startswith("/")
                                               else f"visio/{folder}/{target}")
               for r in read_part(archive, f"visio/{folder}/_rels/{index}.rels")}
    found: dict[str, str] = {}
    for element in (e for e in listing.iter() if local_name(e.tag) == item):
        relationship = next((r.get(_RELATIONSHIP) for r in element if local_name(r.tag) == "Rel"), None)
        if relationship in targets:
            found.setdefault(targets[relationship], " ".join((element.get("Name") or element.get("NameU") or "").split()))
            if len(found) > MAX_PAGES:
                break
    return [(name, part) for part, name in found.items()]


def _shape_texts(part) -> list[str]:
    return [text for element in part.iter() if local_name(element.tag) == "Text"
            if (text := " ".join("".join(element.itertext()).split()))]


def prepare_vsdx(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        if MAIN_PART not in archive.namelist():
            raise PreparationError(f"not a Visio drawing: no {MAIN_PART}")
        names = set(archive.namelist())
        kind, index, item = ("pages", "pages.xml", "Page") if "visio/pages/pages.xml" in names else (
            "masters", "masters.xml", "Master")
        if f"visio/{kind}/{index}" not in names:
            raise PreparationError("not a Visio drawing: no pages or masters")
        listed = _listed(archive, kind, index, item)
    except PART_ERRORS as err:
        raise PreparationError(f"not readable as a Visio drawing: {type(err).__name__}: {err}"[:200]) from None
    lines, headlines, partial, named = [], [], [], {part: name for name, part in listed}
    for part, root in read_pages(archive, list(named), kind, MAX_PAGES_BYTES, partial):
        name, texts = named[part], _shape_texts(root)
        if name:
            headlines.append(name)
        lines.extend([name, *texts] if kind == "masters" or len(listed) > 1 else texts)
    return Prepared(title=core_title(archive), content="\n".join(line for line in lines if line),
                    headlines=headlines, partial="; ".join(partial)[:300])
