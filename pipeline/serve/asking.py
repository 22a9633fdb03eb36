"""What a search request asks for, checked against the page's bounds, and the links that change it: the
search page's address for a search, and the facets' links that narrow or widen it."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

from beamtrawl.pipeline.explain import as_url
from beamtrawl.pipeline.serve import mime_names
from beamtrawl.transforms.index.base import DATE_FACET, FACET_FIELDS, ORDERS, RELEVANCE, Page, date_buckets
from beamtrawl.transforms.index.query import MAX_QUERY_CHARS
from beamtrawl.transforms.index.semantic import AUTO, MODES

PER_PAGE = 20  # hits on a page unless per_page says otherwise
MAX_PER_PAGE = 100
MAX_DEPTH = 10_000  # hits one can page to (OpenSearch's max_result_window): narrow the search beyond
FACET_SIZE = 10  # values shown per facet
MAX_EXPLAIN_CHARS = 4096  # the longest URL or path /explain takes (Linux's PATH_MAX)
FACET_LABELS = {"mimetype": "Type", "extension": "Extension", "path": "Folder", "modified": "Modified"}


class BadRequest(ValueError):
    """A request the search cannot answer as asked (a page number that is no number…); one sentence."""


@dataclass(frozen=True)
class Asked:
    """A search as the request asks for it, checked against the bounds."""

    q: str
    page: int
    per_page: int
    order: str
    mode: str = AUTO  # semantic.MODES
    like: str = ""  # a document id: more like this

    @property
    def asks(self) -> bool:
        """Does the request ask for a search at all (words, filters, or documents like one)?"""
        return bool(self.q or self.like)

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page


NO_SEARCH = Asked("", 1, PER_PAGE, RELEVANCE)  # a page that shows no search (an error, the explain form)


def asked(params) -> Asked:
    """The search a request's parameters ask for; raises BadRequest for values out of bounds."""
    q = params.get("q", "").strip()
    if len(q) > MAX_QUERY_CHARS:
        raise BadRequest(f"the query is too long ({len(q):,} characters; at most {MAX_QUERY_CHARS:,})")
    page = _whole(params.get("page", "1"), "page", 1, MAX_DEPTH)
    per_page = _whole(params.get("per_page", str(PER_PAGE)), "per_page", 1, MAX_PER_PAGE)
    order = params.get("order", RELEVANCE) or RELEVANCE
    if order not in ORDERS:
        raise BadRequest(f"order is {' or '.join(ORDERS)}")
    mode = params.get("mode", AUTO) or AUTO
    if mode not in MODES:
        raise BadRequest(f"mode is {', '.join(MODES)}")
    like = params.get("like", "")
    if like and not re.fullmatch(r"[0-9a-f]{1,64}", like):
        raise BadRequest("like is a document's id (hexadecimal digits)")
    found = Asked(q, page, per_page, order, mode, like)
    if found.offset + per_page > MAX_DEPTH:
        raise BadRequest(f"only the first {MAX_DEPTH:,} hits can be paged through; narrow the search")
    return found


def _whole(text: str, name: str, low: int, high: int) -> int:
    if not re.fullmatch(r"[0-9]{1,6}", text) or not low <= int(text) <= high:
        raise BadRequest(f"{name} is a whole number from {low} to {high:,}")
    return int(text)


def facet_term(name: str, value: str) -> str | None:
    """The query term that narrows a search to a facet value (None when the language cannot say it)."""
    if '"' in value:
        return None
    return f'{name}:"{value}"' if re.search(r"\s", value) else f"{name}:{value}"


def link(a: Asked, **changes) -> str:
    """The search page's address for ``a`` with some parameters changed (a relative URL: no redirect
    or link the page builds can lead off this site)."""
    params = {"q": a.q, "order": a.order, "page": a.page, "per_page": a.per_page, "mode": a.mode, "like": a.like,
              **changes}
    defaults = {"order": RELEVANCE, "page": 1, "per_page": PER_PAGE, "mode": AUTO, "like": ""}
    return "/?" + urllib.parse.urlencode({k: v for k, v in params.items() if defaults.get(k) != v})


def facet_view(a: Asked, page: Page) -> list[dict]:
    """The facets as the page shows them: each value with its count and the link that narrows (or, when
    chosen already, widens) the search."""
    shown = []
    dates = {value: label for label, value, _low, _high in date_buckets()}
    for name in (*FACET_FIELDS, DATE_FACET):
        values = []
        for value, count in page.facets.get(name, []):
            term = facet_term(name, value)
            whole = re.compile(rf"(?<!\S){re.escape(term)}(?!\S)") if term else None  # a term of q, quoted or not
            chosen = bool(whole and whole.search(a.q))
            if term is None:
                href = None
            elif chosen:
                href = link(a, q=" ".join(whole.sub("", a.q).split()), page=1)
            else:
                href = link(a, q=f"{a.q} {term}", page=1)
            label = dates.get(value, value) if name == DATE_FACET else (
                mime_names.readable(value) if name == "mimetype" else value)
            values.append({"value": value, "label": label, "count": count, "href": href, "chosen": chosen})
        if values:
            shown.append({"name": name, "label": FACET_LABELS[name], "choices": values})
    return shown


def explain_asked(params) -> str:
    """The URL or path an /explain request asks about ("" for the empty form); raises BadRequest for one it
    cannot be (too long, control characters, a path relative to the server's own folder)."""
    text = params.get("url", "").strip()
    if len(text) > MAX_EXPLAIN_CHARS:
        raise BadRequest(f"the URL or path is too long ({len(text):,} characters; at most {MAX_EXPLAIN_CHARS:,})")
    if any(not c.isprintable() for c in text):
        raise BadRequest("the URL or path holds control characters; no document's address does")
    if text and "://" not in text and not text.startswith("/"):
        raise BadRequest("give a URL (file://, smb://, http://…) or an absolute local path")
    try:
        as_url(text)  # what explain makes of it
    except ValueError as err:  # the URL parser's ("Invalid IPv6 URL"), a lone surrogate's (UnicodeError)
        raise BadRequest(f"this is not a URL or path explain can read ({err})") from None
    return text
