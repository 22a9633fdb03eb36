"""MIME types by the names people read ("C source code" for ``text/x-csrc``), for the search page's Type
facet and hits; the type itself is shown on hover.

The names are freedesktop.org's shared MIME database (Debian's shared-mime-info, installed with any desktop
and by tests/run.sh): its English comment of each type and alias. Without it, a few common types have names
of their own here, and any other type is shown as it is.
"""

from __future__ import annotations

import functools
import logging
import xml.etree.ElementTree as ET

log = logging.getLogger("beamtrawl.serve")

DATABASE = "/usr/share/mime/packages/freedesktop.org.xml"
_NS = "{http://www.freedesktop.org/standards/shared-mime-info}"
_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
#: Names of the commonest types when the database is not installed.
FALLBACK = {"text/plain": "plain text document", "text/html": "HTML document", "application/pdf": "PDF document",
            "text/markdown": "Markdown document", "text/x-csrc": "C source code", "text/x-python": "Python script",
            "application/zip": "Zip archive", "application/gzip": "Gzip archive", "text/csv": "CSV document",
            "message/rfc822": "email message", "image/png": "PNG image", "image/jpeg": "JPEG image",
            "text/troff": "troff document"}


@functools.cache
def _names(path: str = DATABASE) -> dict[str, str]:
    """Type (and alias) → its English comment, read once."""
    names = dict(FALLBACK)
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError) as err:
        log.info("%s: MIME types are shown as they are (%s)", path, err)
        return names
    for kind in tree.getroot().iter(f"{_NS}mime-type"):
        comment = next((c.text for c in kind.findall(f"{_NS}comment") if _LANG not in c.attrib and c.text), None)
        if not comment:
            continue
        for name in [kind.get("type"), *(a.get("type") for a in kind.findall(f"{_NS}alias"))]:
            if name:
                names[name] = comment
    return names


def readable(mimetype: str) -> str:
    """The name people read for ``mimetype``, else the type itself."""
    return _names().get(mimetype, mimetype)
