"""Plain text and source code, in whatever charset it was written."""

from __future__ import annotations

import charset_normalizer
from beamtrawl.transforms.preparators.base import Prepared

#: Text under an application/… name: script and data read as they are (a ``*.rules`` file, a NEWS file
#: libmagic calls JavaScript, a ``.json`` or ``.ipynb``, a shell script or TeX under its older names).
MIME_TYPES = ("text/*", "application/javascript", "application/x-javascript", "application/ecmascript",
              "application/json", "application/x-ndjson", "application/x-ipynb+json", "application/x-sh",
              "application/x-tex", "application/x-latex",
              "application/mbox")  # a mailbox the mbox preparator cannot read is still text


def decode_text(data: bytes) -> str:
    """UTF-8 when the bytes are UTF-8 (the common case, and cheap to try); else the charset that
    charset-normalizer finds most plausible; else Latin-1, which decodes anything."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    best = charset_normalizer.from_bytes(data[:1_000_000]).best()
    if best is not None:
        return data.decode(best.encoding, errors="replace")
    return data.decode("latin-1")


def prepare_text(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    text = decode_text(data)
    return Prepared(title=_markdown_title(text, url), content=text)


def _markdown_title(text: str, url: str) -> str:
    """A Markdown file's first line, when it is a heading, is its title."""
    if not url.lower().endswith((".md", ".markdown")):
        return ""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return first.lstrip("#").strip() if first.startswith("#") else ""
