"""Where documents live. One module per URL scheme, each with ``SCHEMES``, ``expand`` (discovery)
and ``open_document`` (reading bytes for preparation). A module is loaded when first asked for, so a
process pays only for the clients (smbprotocol, urllib3, smart_open …) of the schemes it meets."""

from __future__ import annotations

import importlib
from types import ModuleType

_BY_SCHEME = {"file": "file", "http": "http", "https": "http", "smb": "smb", "imap": "imap", "imaps": "imap"}


def source_for(url: str) -> ModuleType:
    """The source module that handles ``url``'s scheme."""
    scheme = url.split(":", 1)[0]
    try:
        name = _BY_SCHEME[scheme]
    except KeyError:
        raise ValueError(f"no source handles {scheme}: URLs") from None
    return importlib.import_module(f"{__name__}.{name}")
