"""Manual pages (roff with the man or mdoc macros, e.g. ``/usr/share/man/man1/ls.1.gz`` once
decompressed): rendered to text by mandoc, which was written to format untrusted manuals (it runs no
roff request that reads or writes files or runs programs, and refuses absolute ``.so`` paths; it runs in
an empty folder, so relative ones find nothing). The title is the NAME section ("ls - list directory
contents") or else the page name from the header; the headlines are the section and subsection headings.

Without mandoc installed this preparator fails and the text preparator reads the roff source instead
(a "fallback" line in the report names the cause).
"""

from __future__ import annotations

import re

from transforms.preparators.base import Prepared
from transforms.preparators.external import run_program

MIME_TYPES = ("text/troff", "text/x-troff", "text/x-troff-man", "application/x-troff-man")
DEFAULTS = (("command", "mandoc -T utf8 -O width=200 ${filename}"), ("timeout", 30.0),
            ("max_output_bytes", 64 * 1024**2))
_OVERSTRIKE = re.compile(r".\x08")  # the terminal's bold and underline: "N\bN", "_\bx"
_SUBSECTION = "   "  # mandoc indents .SS headings by 3, body text by 7 or more


def prepare_man(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    text = _OVERSTRIKE.sub("", run_program(params["command"], data, url, params["timeout"], False,
                                           params["max_output_bytes"]))
    lines = [line.rstrip() for line in text.splitlines()]
    filled = [i for i, line in enumerate(lines) if line.strip()]
    if not filled:
        return Prepared()
    header, body = lines[filled[0]], lines[filled[0] + 1: filled[-1]]  # the last line is the footer
    sections: dict[str, list[str]] = {}
    headlines, current = [], None
    for line in body:
        if line and (not line[0].isspace() or (line.startswith(_SUBSECTION) and not line[3].isspace())):
            current = line.strip()
            headlines.append(current)
            sections.setdefault(current, [])
        elif current is not None and line.strip():
            sections[current].append(line.strip())
    page = header.split()[0] if header.split() else ""
    title = " ".join(sections.get("NAME", [])) or page.lower()
    content = "\n".join(line.strip() for line in body if line.strip())
    return Prepared(title=title, content=content, headlines=headlines)
