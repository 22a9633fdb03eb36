"""The text encoding of a web page: the Content-Type header's charset, else the page's own ``<meta>``
declaration, else detection (charset-normalizer). Each candidate must decode the whole body without
error to win, so a header that lies (``charset=utf-8`` on Shift_JIS bytes) falls through to the next.

Pages are handed on re-encoded as UTF-8: every later stage (link extraction, the HTML preparator, the
content hash) then reads one encoding. Files without declared charset go through the text preparator's
``decode_text`` instead; a page has declarations to weigh first and WHATWG's windows-1252 fallback.
"""

from __future__ import annotations

import codecs
import re

from charset_normalizer import from_bytes

_META = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_HEADER = re.compile(r"charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]+)", re.IGNORECASE)
#: Labels browsers read as a wider encoding (WHATWG Encoding): latin-1 pages use windows-1252 quotes.
_WIDER = {"iso-8859-1": "cp1252", "latin-1": "cp1252", "latin1": "cp1252", "us-ascii": "cp1252",
          "ascii": "cp1252", "shift_jis": "cp932", "sjis": "cp932", "x-sjis": "cp932", "gb2312": "gbk"}


def _codec(label: str) -> str | None:
    label = label.strip().lower()
    try:
        return codecs.lookup(_WIDER.get(label, label)).name
    except LookupError:
        return None


def candidates(body: bytes, content_type: str) -> list[str]:
    """Encodings to try, best evidence first."""
    found = []
    header = _HEADER.search(content_type or "")
    if header:
        found.append(header.group(1).decode() if isinstance(header.group(1), bytes) else header.group(1))
    meta = _META.search(body[:4096])
    if meta:
        found.append(meta.group(1).decode("ascii", "replace"))
    found.append("utf-8")
    codecs_ = [c for c in (_codec(label) for label in found) if c]
    return list(dict.fromkeys(codecs_))


def decode(body: bytes, content_type: str = "") -> tuple[str, str]:
    """(text, encoding used). Falls back to detection, then to UTF-8 with replacement characters."""
    for encoding in candidates(body, content_type):
        try:
            return body.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    for encoding in _detected(body):
        try:
            return body.decode(encoding), encoding
        except (UnicodeDecodeError, LookupError):
            continue
    return body.decode("utf-8", "replace"), "utf-8"


def _detected(body: bytes) -> list[str]:
    """charset-normalizer's guesses, least chaos first; among near-equal guesses windows-1252 wins, the
    fallback HTML (WHATWG) prescribes for undeclared Western pages: short Latin text fits many codepages."""
    matches = list(from_bytes(body[:65536]))
    if not matches:
        return []
    calm = min(m.percent_chaos for m in matches)
    western = [m for m in matches if m.percent_chaos <= calm + 10 and "cp1252" in m.could_be_from_charset]
    return ["cp1252"] * bool(western) + [m.encoding for m in matches]


def to_utf8(body: bytes, content_type: str = "") -> bytes:
    """The page's bytes as UTF-8."""
    text, encoding = decode(body, content_type)
    return body if encoding == "utf-8" else text.encode("utf-8")
