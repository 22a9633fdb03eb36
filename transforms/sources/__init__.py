"""Where documents live. One module per URL scheme, each with ``SCHEMES``, ``expand`` (discovery)
and ``open_document`` (reading bytes for preparation)."""

from __future__ import annotations

from types import ModuleType

from transforms.sources import file, http, imap, smb

_BY_SCHEME = {scheme: module for module in (file, http, smb, imap) for scheme in module.SCHEMES}


def source_for(url: str) -> ModuleType:
    """The source module that handles ``url``'s scheme."""
    scheme = url.split(":", 1)[0]
    try:
        return _BY_SCHEME[scheme]
    except KeyError:
        raise ValueError(f"no source handles {scheme}: URLs") from None
