"""Prepare bytes as a crawl's preparing process does: the MIME type sniffed, then the built-in chain (or the
preparators a test names) run on them. One helper for every preparator test, so they all meet the same chain."""

from __future__ import annotations

from beamtrawl.transforms.preparators import BUILTIN, Chain
from beamtrawl.transforms.preparators.mime import MimeSniffer

SNIFF = MimeSniffer()


def prepare_bytes(data: bytes, url: str, preparators=BUILTIN):
    """(prepared or None, failures, MIME type) for ``data`` found at ``url``."""
    mimetype = SNIFF(data, url)
    prepared, errors = Chain(preparators, SNIFF).run(data, url, mimetype)
    return prepared, errors, mimetype
