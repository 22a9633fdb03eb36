"""How the pages show things: the template environment and its filters (sizes, dates, URLs, names with
their bidirectional controls made visible, where a hit opens)."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import jinja2
from beamtrawl.pipeline import __version__
from beamtrawl.pipeline.serve import documents, mime_names, thumbnails
from beamtrawl.pipeline.serve.asking import MAX_EXPLAIN_CHARS
from beamtrawl.transforms.index.query import MAX_QUERY_CHARS
from beamtrawl.transforms.sources import at_own_address
from markupsafe import Markup

ORDER_LABELS = {"relevance": "Best match", "date": "Newest first"}
MODE_LABELS = {"auto": "Words or meaning", "keyword": "Every word", "semantic": "Meaning",
               "hybrid": "Words and meaning"}
_HERE = Path(__file__).parent


def hit_link(hit) -> str:
    """Where a hit opens: a web page at its address, anything else through /document/<id>."""
    if at_own_address(hit.url):
        return hit.url
    return f"/document/{hit.id}"


def human_size(size: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:,} {unit}" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1024
    return ""


def shown_url(url: str) -> str:
    """A URL as a person reads it: percent-escapes decoded (the page escapes it as text)."""
    return plain(urllib.parse.unquote(url, errors="replace"))


def plain(text: str) -> str:
    """A name as the page shows it: bidirectional overrides and isolates made visible (U+FFFD), so
    ``invoice\u202eFDP.exe`` cannot pass for ``invoiceexe.PDF``."""
    return documents.BIDI_CONTROLS.sub("\ufffd", text)


def breakable(text: str) -> Markup:
    """A folder or URL as a label that wraps after its slashes, never inside a name (``<wbr>``), escaped."""
    return Markup("/<wbr>").join(plain(text).split("/"))


def shown_date(iso: str) -> str:
    return iso[:16].replace("T", " ") if iso else ""


def environment() -> jinja2.Environment:
    """The templates of the pages, escaping everything they show; a missing value is an error."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(_HERE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    env.filters.update(size=human_size, date=shown_date, hit_link=hit_link, url=shown_url, plain=plain,
                       breakable=breakable, mime=mime_names.readable)
    env.globals.update(version=__version__, MAX_QUERY_CHARS=MAX_QUERY_CHARS, ORDER_LABELS=ORDER_LABELS, MODE_LABELS=MODE_LABELS,
                       MAX_EXPLAIN_CHARS=MAX_EXPLAIN_CHARS,
                       thumbnail_types=thumbnails.TYPES)
    return env

