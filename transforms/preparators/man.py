"""Manual pages (roff with the man or mdoc macros, e.g. ``/usr/share/man/man1/ls.1.gz`` once
decompressed): rendered to text by mandoc, which was written to format untrusted manuals (it runs no
roff request that reads or writes files or runs programs, and refuses absolute ``.so`` paths; it runs in
an empty folder, so relative ones find nothing). The title is the NAME section ("ls - list directory
contents") or else the page name from the header; the headlines are the section and subsection headings.
The header's and footer's words other than the page name — the manual's volume, the source and version, the
date (``User Commands``, ``GNU coreutils 9.1``, ``September 2022``) — are the metadata: printed on every page of
the manual, they say which release a page belongs to, and a search for "coreutils 9.1" finds its pages.
A page that only redirects (``.so man7/string_copying.7``) is titled by its own name and holds its target.

Roff that is no manual page (not named by a section, no ``.TH`` with a section, no ``.Dd``) — a macro
package (``ms.tmac``), a document in the ms, me, mm or hdtbl macros (``examples/hdtbl/rainbow.roff``) — is
read as its source, as Tika reads it: mandoc formats only man and mdoc and renders next to nothing of it. A
searcher finds a macro package by its macros' names and comments, a document by its words.

Without mandoc installed this preparator fails ("mandoc is not installed (Debian package mandoc)") and
the text preparator reads the roff source instead; the report has a "fallback" line per page and the summary
one warning with their number, and installing mandoc re-prepares them (``helpers``).
"""

from __future__ import annotations

import re

from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from beamtrawl.transforms.preparators.external import run_program
from beamtrawl.transforms.preparators.helpers import Helper
from beamtrawl.transforms.preparators.text import prepare_text
from beamtrawl.transforms.urls import file_name

REVISION = 2  # part of the preparation fingerprint (base.py): 1 reads roff that is no manual page as its source; 2
# keeps the header's and footer's volume, source and date as metadata
MIME_TYPES = ("text/troff", "text/x-troff", "text/x-troff-man", "application/x-troff-man")
DEFAULTS = (("command", "mandoc -T utf8 -O width=200 ${filename}"), ("timeout", 30.0),
            ("max_output_bytes", 64 * 1024**2))
MANDOC = Helper("mandoc", "mandoc", "manual pages")
HELPERS = (MANDOC,)
_OVERSTRIKE = re.compile(r".\x08")  # the terminal's bold and underline: "N\bN", "_\bx"
_SUBSECTION = "   "  # mandoc indents .SS headings by 3, body text by 7 or more
_REDIRECT = re.compile(rb'(?:[.\']\\".*\n|\s*\n)*\.so\s+(\S+)\s*\Z')  # comments, then only ".so target"
_PAGE_NAME = re.compile(r"^(.+)\.([0-9][a-z]*)$")  # "siginfo_t.3type"
# man's ``.TH LS 1 …`` (a name, then a section: ms and hdtbl have a .TH macro of their own), mdoc's ``.Dd``
_COLUMNS = re.compile(r"\s{2,}")  # mandoc sets a header's or footer's parts apart by runs of spaces
_PAGE_HEADER = re.compile(rb"""^[.'][ \t]*(?:TH[ \t]+(?:"[^"\n]*"|\S+)[ \t]+"?[0-9nlox]|Dd\b)""", re.MULTILINE)


def _redirect(data: bytes, url: str) -> Prepared | None:
    """A ``.so`` page as its name and target: mandoc, in its empty folder, cannot follow it."""
    found = _REDIRECT.match(data)
    if found is None:
        return None
    name = _PAGE_NAME.match(file_name(url))
    title = f"{name.group(1)}({name.group(2)})" if name else file_name(url)
    return Prepared(title=title, content=f"see {found.group(1).decode('utf-8', 'replace')}")


def _manual_page(data: bytes, url: str) -> bool:
    """Named by its section (``ls.1``, ``siginfo_t.3type``), or headed as man or mdoc pages are."""
    return _PAGE_NAME.match(file_name(url)) is not None or _PAGE_HEADER.search(data) is not None


def _header_and_footer(header: str, footer: str, page: str) -> str:
    """The parts of the page's header and footer lines but the page's own name (``ARCH(1)``), each once."""
    parts = [part for line in (header, footer) for part in _COLUMNS.split(line.strip()) if part and part != page]
    return "  ".join(dict.fromkeys(parts))


def prepare_man(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    redirect = _redirect(data, url)
    if redirect is not None:
        return redirect
    if not _manual_page(data, url):
        return prepare_text(data, url, "text/plain", {})
    if params["command"].split()[0] == MANDOC.program and not MANDOC.installed():
        raise PreparationError(MANDOC.missing())
    text = _OVERSTRIKE.sub("", run_program(data, url, {**params, "check_exit_code": False}))
    lines = [line.rstrip() for line in text.splitlines()]
    filled = [i for i, line in enumerate(lines) if line.strip()]
    if not filled:
        return Prepared()
    header, body, footer = lines[filled[0]], lines[filled[0] + 1: filled[-1]], lines[filled[-1]]
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
    metadata = _header_and_footer(header, footer, page) if len(filled) > 1 else ""
    return Prepared(title=title, content=content, headlines=headlines, metadata=metadata)
