"""Plain text and source code, in whatever charset it was written. A first line underlined as a heading is
the title (:func:`heading_title`)."""

from __future__ import annotations

import re

import charset_normalizer
from beamtrawl.transforms.preparators.base import Prepared

REVISION = 2  # part of the preparation fingerprint (base.py): 1 titles a text by its underlined first line, 2 reads
# ISO-2022 text
#: Text under an application/… name: script and data read as they are (a ``*.rules`` file, a NEWS file
#: libmagic calls JavaScript, a ``.json`` or ``.ipynb``, a shell script or TeX under its older names, a
#: printer's PPD file, an INI file libmagic calls a setup script).
MIME_TYPES = ("text/*", "application/javascript", "application/x-javascript", "application/ecmascript",
              "application/json", "application/x-ndjson", "application/x-ipynb+json", "application/x-sh",
              "application/x-tex", "application/x-latex", "application/vnd.cups-ppd", "application/x-setupscript",
              "application/mbox")  # a mailbox the mbox preparator cannot read is still text


_ISO_2022 = re.compile(rb"\x1b(?:\$[@AB(]|\$\)C|\([BJI])")  # ISO-2022's designations: JIS X 0208, GB 2312, KS C 5601…


def decode_text(data: bytes) -> str:
    """UTF-8 when the bytes are UTF-8 (the common case, and cheap to try), but ISO-2022 (7-bit Japanese mail and
    text, and Korean) when escape sequences say so: those bytes are ASCII, valid UTF-8, and read as
    ``$B$N3+H/`` they held no word; else the charset that charset-normalizer finds most plausible; else Latin-1,
    which decodes anything."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    else:
        if "\x1b" not in text or not _ISO_2022.search(data):
            return text
        for codec in ("iso2022_kr",) if b"\x1b$)C" in data else ("iso2022_jp_2", "iso2022_jp_ext"):
            try:
                return data.decode(codec)
            except UnicodeDecodeError:
                continue
        return text
    best = charset_normalizer.from_bytes(data[:1_000_000]).best()
    if best is not None:
        return data.decode(best.encoding, errors="replace")
    return data.decode("latin-1")


def prepare_text(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    text = decode_text(data)
    return Prepared(title=_markdown_title(text, url) or heading_title(text), content=text)


_UNDERLINE = re.compile(r"([=\-~*^#])\1{2,}")


def heading_title(text: str) -> str:
    """A plain text file's title: its first line when the next one underlines it (``=====``, ``-----``: a
    reStructuredText or setext heading, as NEWS and README files begin), or the line between an over- and an
    underline, after any reST comments and labels (``.. _tutorial-index:``); when it is short."""
    lines = [line.strip() for line in text.lstrip("\ufeff").splitlines()[:20]]
    while lines and (not lines[0] or lines[0].startswith(".. ")):
        lines.pop(0)
    if len(lines) >= 3 and _UNDERLINE.fullmatch(lines[0]) and lines[2] == lines[0]:
        lines = lines[1:]
    if len(lines) < 2 or not _UNDERLINE.fullmatch(lines[1]):
        return ""
    return lines[0] if 0 < len(lines[0]) <= 120 and len(lines[1]) >= min(len(lines[0]), 3) else ""


def _markdown_title(text: str, url: str) -> str:
    """A Markdown file's first line, when it is a heading, is its title (the markdown preparator's fallback)."""
    if not url.lower().endswith((".md", ".markdown")):
        return ""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return first.lstrip("#").strip() if first.startswith("#") else ""
