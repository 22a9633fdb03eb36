"""Thumbnails of image hits for the search page, made on request from the document's own bytes (opened
through the same access check as ``/document/<id>``) by Pillow, bounded in bytes read and pixels decoded.
Nothing is cached on disk: a thumbnail is a few kB, sent with a private cache lifetime so a browser keeps it."""

from __future__ import annotations

import io

from beamtrawl.pipeline.serve.documents import DOCUMENT_CSP

SIDE = 160  # pixels of a thumbnail's longer side
MAX_BYTES = 32 * 1024**2  # an image larger than this gets no thumbnail
MAX_PIXELS = 60_000_000  # nor one that would decode to more pixels (a decompression bomb)
TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp", "image/x-ms-bmp", "image/tiff")
HEADERS = {"Cache-Control": "private, max-age=3600", "Content-Security-Policy": DOCUMENT_CSP,
           "X-Content-Type-Options": "nosniff"}


def makes(stored) -> bool:
    """Whether a document gets a thumbnail: an image of a type Pillow reads, not too large."""
    return stored.mimetype in TYPES and 0 < stored.size <= MAX_BYTES


def make(stream) -> bytes | None:
    """The PNG thumbnail of the image in ``stream`` (closed here), or None when it cannot be read."""
    from PIL import Image

    try:
        data = stream.read(MAX_BYTES + 1)
    finally:
        stream.close()
    if len(data) > MAX_BYTES:
        return None
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.size[0] * image.size[1] > MAX_PIXELS:
                return None
            image.draft("RGB", (SIDE, SIDE))  # JPEG decodes at a fraction of its size
            image.thumbnail((SIDE, SIDE))
            out = io.BytesIO()
            image.convert("RGBA" if "A" in image.getbands() else "RGB").save(out, "PNG")
            return out.getvalue()
    except (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError):
        return None
