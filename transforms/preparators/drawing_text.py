"""The text of an Office Open XML package's drawing parts that the documents' libraries do not read: charts
(their titles, series names, categories and cached values), SmartArt diagrams' data and a spreadsheet's
drawings (text boxes and shapes), as Tika writes them after the document's own text. Slides' shapes and Word's
text boxes are read with their documents already and are not matched here.

Parts are parsed by defusedxml and read within ``_MAX_PART`` bytes each.
"""

from __future__ import annotations

import re
import zipfile

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError, fromstring

_PARTS = re.compile(r"^(?:word|ppt|xl)/(?:charts/chart|diagrams/data|drawings/drawing)\d+\.xml$")
_DRAWING = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_CHART = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_TEXT_TAGS = (f"{_DRAWING}t", f"{_CHART}v")
_MAX_PART = 32 * 1024 * 1024


def _order(name: str) -> tuple[str, int]:
    stem = name.rsplit(".", 1)[0]
    digits = re.search(r"\d+$", stem)
    return stem[: digits.start()] if digits else stem, int(digits.group()) if digits else 0


def part_text(xml: bytes) -> str:
    """A drawing part's text runs and chart values, one line per paragraph or series, tab-separated values."""
    root = fromstring(xml, forbid_dtd=True)
    lines: list[str] = []
    for block in root.iter():
        if block.tag in (f"{_DRAWING}p", f"{_CHART}ser", f"{_CHART}title"):
            texts = [e.text for e in block.iter() if e.tag in _TEXT_TAGS and e.text and e.text.strip()]
            line = ("" if block.tag == f"{_DRAWING}p" else "\t").join(texts).strip()  # runs keep their spaces
            if line:
                lines.append(line)
    return "\n".join(dict.fromkeys(lines))  # a chart title's paragraph is met as a title and as a paragraph


def drawing_texts(archive: zipfile.ZipFile) -> list[str]:
    """The text of each chart, diagram and spreadsheet drawing part, in part order; unreadable parts give none."""
    out = []
    for info in sorted((i for i in archive.infolist() if _PARTS.match(i.filename)), key=lambda i: _order(i.filename)):
        if info.file_size > _MAX_PART:
            continue
        try:
            text = part_text(archive.read(info))
        except (ParseError, DefusedXmlException, ValueError, OSError, zipfile.BadZipFile):
            continue
        if text:
            out.append(text)
    return out
