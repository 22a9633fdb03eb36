"""The text of an Office Open XML package's drawing parts that the documents' libraries do not read: charts
(their titles, series names, categories and cached values), SmartArt diagrams' data and a spreadsheet's
drawings (text boxes and shapes), as Tika writes them after the document's own text. Slides' shapes and Word's
text boxes are read with their documents already and are not matched here.

Parts are parsed by defusedxml and read within ``_MAX_PART`` bytes each, ``_MAX_PARTS`` in all (``bounded_parts``,
which a workbook's comments and furniture are read by too).
"""

from __future__ import annotations

import re
import zipfile
import zlib

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError, fromstring

_PARTS = re.compile(r"(?:word|ppt|xl)/(?:charts/chart|diagrams/data|drawings/drawing)\d+\.xml")
_DRAWING = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_CHART = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
_TEXT_TAGS = (f"{_DRAWING}t", f"{_CHART}v")
_BLOCKS = (f"{_DRAWING}p", f"{_CHART}ser", f"{_CHART}title")
_MAX_PART = 4 * 1024 * 1024  # a chart is kilobytes; 30 MB of chart XML took 17 s
_MAX_PARTS = 16 * 1024 * 1024  # all parts together: forty parts of 30 MB took over ten minutes


def _order(name: str) -> tuple[str, int]:
    stem = name.rsplit(".", 1)[0]
    digits = re.search(r"\d+$", stem)
    return stem[: digits.start()] if digits else stem, int(digits.group()) if digits else 0


def part_text(xml: bytes) -> str:
    """A drawing part's text runs and chart values, one line per paragraph or series, tab-separated values.
    A run belongs to its innermost paragraph, series or title only: nested paragraphs, each given the text of
    all below it, made a 37 KB chart 12 MB of text."""
    blocks: list[tuple[str, list[str]]] = []
    stack = [(fromstring(xml, forbid_dtd=True), None)]
    while stack:
        element, owner = stack.pop()
        if element.tag in _BLOCKS:
            owner = (element.tag, [])
            blocks.append(owner)
        elif element.tag in _TEXT_TAGS and owner is not None and element.text and element.text.strip():
            owner[1].append(element.text)
        stack.extend((child, owner) for child in reversed(element))
    lines = [("" if tag == f"{_DRAWING}p" else "\t").join(texts).strip() for tag, texts in blocks]  # runs keep spaces
    return "\n".join(dict.fromkeys(line for line in lines if line))


def bounded_parts(archive: zipfile.ZipFile, pattern: re.Pattern, skipped: list[str] | None = None):
    """(name, bytes) of each part whose whole name ``pattern`` matches, in part order, within ``_MAX_PART`` bytes
    each and ``_MAX_PARTS`` in all; a larger or unreadable part (damaged, encrypted, an unknown method) is skipped,
    and named in ``skipped`` with why."""
    budget, skipped = _MAX_PARTS, [] if skipped is None else skipped
    for info in sorted((i for i in archive.infolist() if pattern.fullmatch(i.filename)), key=lambda i: _order(i.filename)):
        if info.file_size > min(_MAX_PART, budget):
            why = f"over {_MAX_PART // 1024**2} MiB" if info.file_size > _MAX_PART else \
                f"past {_MAX_PARTS // 1024**2} MiB of such parts"
            skipped.append(f"{info.filename}: {why}")
            continue
        budget -= info.file_size
        try:
            data = archive.read(info)
        except (OSError, RuntimeError, zipfile.BadZipFile, zlib.error, NotImplementedError) as err:
            skipped.append(f"{info.filename}: {type(err).__name__}: {err}")
            continue
        yield info.filename, data


def drawing_texts(archive: zipfile.ZipFile) -> list[str]:
    """The text of each chart, diagram and spreadsheet drawing part, in part order; unreadable parts give none."""
    out = []
    for _name, data in bounded_parts(archive, _PARTS):
        try:
            text = part_text(data)
        except (ParseError, DefusedXmlException, ValueError):
            continue
        if text:
            out.append(text)
    return out
