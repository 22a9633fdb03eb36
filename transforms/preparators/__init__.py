"""Preparators turn bytes into searchable text. One module per family of formats; this module
lists the built-in ones and picks, for a document, the preparators to try in order."""

from __future__ import annotations

import re

from transforms.preparators.base import PreparationError, PreparatorSpec, Prepared
from transforms.preparators.html import prepare_html
from transforms.preparators.metadata_only import prepare_metadata_only
from transforms.preparators.text import prepare_text

BUILTIN = (
    PreparatorSpec("html", prepare_html, ("text/html", "application/xhtml+xml"), priority=10),
    PreparatorSpec("text", prepare_text, ("text/*",), priority=0),
    # regain's EmptyPreparator catch-all: every document is at least found by name, path, type, date.
    PreparatorSpec("metadata_only", prepare_metadata_only, priority=-10, url_pattern=re.compile("")),
)


def chain_for(preparators: tuple[PreparatorSpec, ...], mimetype: str, url: str) -> list[PreparatorSpec]:
    """The preparators accepting a document, highest priority first (ties keep configuration order)."""
    return sorted((p for p in preparators if p.accepts(mimetype, url)), key=lambda p: -p.priority)


__all__ = ["BUILTIN", "PreparationError", "PreparatorSpec", "Prepared", "chain_for"]
