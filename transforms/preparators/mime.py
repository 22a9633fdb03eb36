"""MIME type of a document's bytes, by python-magic (libmagic), refined where magic is vague."""

from __future__ import annotations

import magic

from transforms.urls import extension

SNIFF_BYTES = 64 * 1024
# libmagic calls small or fragmentary HTML text/plain; the extension settles it.
_TEXT_BY_EXTENSION = {"html": "text/html", "htm": "text/html", "xhtml": "application/xhtml+xml"}


class MimeSniffer:
    """Holds a libmagic handle, which cannot be pickled: create one per worker (``DoFn.setup``)."""

    def __init__(self):
        self._magic = magic.Magic(mime=True)

    def __call__(self, data: bytes, url: str) -> str:
        if not data:
            return "application/x-empty"
        detected = self._magic.from_buffer(data[:SNIFF_BYTES])
        if detected in ("text/plain", "text/xml"):
            return _TEXT_BY_EXTENSION.get(extension(url), detected)
        return detected
