"""How ``beamtrawl search`` prints hits for a person: the total first, each hit's title, where it lives
(a local path for a file, a decoded URL otherwise), its snippet and where else the same content is, the matches highlighted on a terminal
only (a pipe or a file gets plain text, so ``grep`` and ``less`` see no escape codes).

The hit's own fields are the index's (``--json`` prints them as they are); only their display is here.
"""

from __future__ import annotations

import html
import os

from beamtrawl.pipeline.report import terminal_safe
from beamtrawl.transforms.sources import local_path
from beamtrawl.transforms.urls import readable_url

#: What a terminal shows around a match: bold and reverse video, then back to normal.
_ON, _OFF = "\x1b[1;7m", "\x1b[0m"


def highlights(stream) -> bool:
    """Whether matches are highlighted on ``stream``: a terminal, unless NO_COLOR is set (no-color.org)
    or TERM is ``dumb``."""
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def location(url: str) -> str:
    """Where a hit lives as a person types it: a file's local path (``/srv/meeting notes.txt``), else its
    URL with percent-escapes decoded (``https://host/meeting notes``)."""
    try:
        return local_path(url) or readable_url(url)
    except ValueError:
        return readable_url(url)


def snippet(hit, highlight: bool) -> str:
    """The hit's snippet on one line, its matches in reverse video if ``highlight``; control characters
    from documents never reach the terminal (report.terminal_safe)."""
    if not highlight:
        return terminal_safe(hit.snippet)
    parts = hit.snippet_html.replace("</mark>", "<mark>").split("<mark>")  # even: text, odd: a match
    return "".join(_ON + terminal_safe(html.unescape(p)) + _OFF if n % 2 else terminal_safe(html.unescape(p))
                   for n, p in enumerate(parts))


def total_line(total: int, shown: int) -> str:
    """``3 documents found`` or ``1,204 documents found; the best 10:`` (what recoll and grep -c tell)."""
    if total == 0:
        return "no documents found"
    found = f"{total:,} document{'s' if total != 1 else ''} found"
    return found if shown >= total else f"{found}; the best {shown:,}:"


def render(hits, total: int, highlight: bool) -> str:
    """The whole answer of a search: the total line, then a numbered block per hit."""
    blocks = [total_line(total, len(hits))]
    for n, hit in enumerate(hits, 1):
        blocks.append(f"{n}. {terminal_safe(hit.title)}\n   {terminal_safe(location(hit.url))}"
                      + (f"\n   {snippet(hit, highlight)}" if hit.snippet else "")
                      + "".join(f"\n   also at {terminal_safe(location(url))}" for url in hit.locations))
    return "\n\n".join(blocks)
