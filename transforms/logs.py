"""Where log output goes: beamtrawl's own messages to the terminal; what libraries log or warn
(pypdf's "EOF marker not found", Beam's worker errors) only with ``--debug``.

A library's complaint about one document is never news on its own: when it matters, the document's
report line says so (the preparator failed, the text was cut). ``--debug`` sets ``BEAMTRAWL_DEBUG`` in
the environment, which the workers and the preparing children inherit, so they show everything too.
"""

from __future__ import annotations

import logging
import os
import sys

DEBUG_ENV = "BEAMTRAWL_DEBUG"
OURS = "beamtrawl"  # the logger of beamtrawl's own messages, and the parent of its others


def debugging() -> bool:
    return os.environ.get(DEBUG_ENV) == "1"


def _ours(record: logging.LogRecord) -> bool:
    return record.name == OURS or record.name.startswith(OURS + ".")


def route(debug: bool | None = None) -> None:
    """Set up this process's logging: with ``debug``, every record at DEBUG and up on stderr; without,
    only beamtrawl's own from INFO up (library records and Python warnings are dropped)."""
    if debug is None:
        debug = debugging()
    if debug:
        os.environ[DEBUG_ENV] = "1"
    logging.captureWarnings(True)  # warnings.warn(...) of libraries become log records, filtered below
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    if not debug:
        handler.addFilter(_ours)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.INFO)
