"""Adobe FrameMaker's Maker Interchange Format (``.mif``, ``<MIFFile 2019>``): a text file of statements
in angle brackets. A paragraph (``<Para``) is its lines' ``<String `…'>`` statements, with ``<Char Tab>``
and the line-breaking characters as whitespace, as Tika's MIFParser writes them; everything else (formats,
tags, frames' geometry, markers) is left out. A binary FrameMaker file (``<MakerFile``) has no such text
and is not claimed (it stays unsupported, as for Tika, which reads none of it).

MIF's escapes in strings are decoded: ``\\>`` ``\\q`` (') ``\\Q`` (`) ``\\\\`` ``\\t`` and ``\\xNN `` (a FrameRoman
code: see :func:`_unescape`).
"""

from __future__ import annotations

import re

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.text import decode_text

MIME_TYPES = ("application/vnd.mif",)  # libmagic: text MIF; a binary FrameMaker file is application/x-mif
#: a string ends on its line, read one way only: unterminated strings made the pattern quadratic in the file
_STATEMENTS = re.compile(r"<(Para)\b|<String `((?:[^'\\\n]++|\\.)*+)'>|<Char (\w+)>")
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2} ?|.)")
_ESCAPES = {">": ">", "q": "'", "Q": "`", "\\": "\\", "t": "\t"}
_CHARS = {"Tab": "\t", "HardReturn": "\n", "HardSpace": " ", "EmDash": "—", "EnDash": "–", "Bullet": "•"}


#: FrameRoman below 0x20: tab, forced return, end of paragraph, numeric/thin/en/em space, non-breaking hyphen
_FRAME_CONTROLS = {0x08: "\t", 0x09: "\n", 0x0A: "\n", 0x10: " ", 0x11: " ", 0x12: " ", 0x13: " ", 0x15: "-"}


def _unescape(match: re.Match) -> str:
    """``\\xNN `` is a FrameRoman byte: Mac Roman above 0x7F (typographic quotes, dashes, accented letters),
    FrameMaker's spaces and hyphens below 0x20; other escapes are MIF's own."""
    code = match.group(1)
    if not (code.startswith("x") and len(code) > 1):
        return _ESCAPES.get(code, code)
    byte = int(code[1:3], 16)
    if byte < 0x20:
        return _FRAME_CONTROLS.get(byte, "")
    return bytes([byte]).decode("mac_roman")


def mif_text(text: str) -> str:
    """The paragraphs' text, one line each."""
    out: list[str] = []
    for para, string, char in _STATEMENTS.findall(text):
        if para:
            out.append("\n")
        elif char:
            out.append(_CHARS.get(char, ""))
        else:
            out.append(_ESCAPE.sub(_unescape, string))
    return "\n".join(line.strip() for line in "".join(out).splitlines() if line.strip())


def prepare_mif(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    if not data.lstrip().startswith(b"<MIFFile"):
        raise PreparationError("not a MIF file: a binary FrameMaker document, or no <MIFFile> statement")
    return Prepared(content=mif_text(decode_text(data)))
