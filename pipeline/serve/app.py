"""The web application of ``beamtrawl serve``: the search page, the JSON API, documents, sign-in and
health, as one Starlette application run by uvicorn.

Routes::

    GET /                    the search page (q, page, per_page, order); server-rendered, no JavaScript
    GET /api/search          the same search as JSON: the hits of ``beamtrawl search --json``, total, facets
    GET /document/<id>       a hit's document, from its source, after the search's access check
    GET /text/<id>?q=…       what the index holds of a hit (title, fields, text; the search's words marked)
    GET /thumbnail/<id>      an image hit's thumbnail (PNG), made on request behind the same check
    GET /explain?url=…       for a signed-in administrator only: why a URL or path is or is not in the index
                             (``beamtrawl explain``'s lines); others 403, anonymous asked to sign in
    GET /signin              asks for HTTP Basic credentials, then goes back to the search
    GET /signout             refuses the credentials the browser keeps (401, no challenge): signed out
    GET /health              200 when the index answers, 503 when it does not
    GET /static/…            the style sheet

Every search runs the parsed query (transforms/index/query.py) with the searcher's groups
(people.Doorkeeper) through the index target's ``search_page``, which counts, facets and ranks only
what those groups may see. Index work is blocking, so it runs in worker threads, each with a target
of its own (:class:`Searches`: a SQLite connection must not be shared by concurrent searches).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path

import jinja2
import orjson
from beamtrawl.pipeline import __version__
from beamtrawl.pipeline.config import ConfigError, load_config
from beamtrawl.pipeline.explain import as_url
from beamtrawl.pipeline.serve import documents, mime_names, text_view, thumbnails
from beamtrawl.pipeline.serve.people import ANONYMOUS, Doorkeeper, Searcher
from beamtrawl.pipeline.serve.protocol import BoundedHeadProtocol
from beamtrawl.pipeline.serve.signin import TooManyFailures
from beamtrawl.transforms.index import make_target
from beamtrawl.transforms.index.base import (
    DATE_FACET,
    FACET_FIELDS,
    ORDERS,
    RELEVANCE,
    IndexUnavailable,
    Page,
    date_buckets,
)
from beamtrawl.transforms.index.query import MAX_QUERY_CHARS, QueryError, parse_query
from beamtrawl.transforms.sources import Sources
from beamtrawl.transforms.sources.settings import SourceSettings
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

log = logging.getLogger("beamtrawl.serve")

PER_PAGE = 20  # hits on a page unless per_page says otherwise
MAX_PER_PAGE = 100
MAX_DEPTH = 10_000  # hits one can page to (OpenSearch's max_result_window): narrow the search beyond
FACET_SIZE = 10  # values shown per facet
MAX_EXPLAIN_CHARS = 4096  # the longest URL or path /explain takes (Linux's PATH_MAX)
SEARCH_THREADS = 8  # index connections, so searches at once
REALM = 'Basic realm="beamtrawl", charset="UTF-8"'
#: uvicorn's options: h11 bounds a request's line and headers (httptools buffers a header of any size: one
#: client sending a 200 MB header grew the server by 260 MB), and the protocol bounds the time a head may
#: take (protocol.py); the client address is the TCP peer (no X-Forwarded-For), which the trusted-header
#: check relies on
SERVER_OPTIONS = {"http": BoundedHeadProtocol, "h11_max_incomplete_event_size": 64 * 1024, "proxy_headers": False,
                  "server_header": False}
FACET_LABELS = {"mimetype": "Type", "extension": "Extension", "path": "Folder", "modified": "Modified"}
ORDER_LABELS = {"relevance": "Best match", "date": "Newest first"}
#: The page's own policy: its style sheet and nothing else; forms post only here; no frames.
PAGE_CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; "
            "frame-ancestors 'none'")
SECURITY_HEADERS = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    # no cache (a browser's, a caching proxy's in front of a trusted header) may keep what one
                    # searcher's groups showed and hand it to the next
                    (b"cache-control", b"no-store")]
_PAGE_CSP_HEADER = (b"content-security-policy", PAGE_CSP.encode())
_HERE = Path(__file__).parent


class Searches:
    """SEARCH_THREADS threads for index work, each with an index target of its own, made when the thread
    first needs it and kept (a SQLite connection must not be shared by concurrent searches, since a search
    registers its scoring function on it). Run straight on an executor: anyio's general thread pool cost
    a third more of the server's time per search (its limiter, cancel scope and context copy)."""

    def __init__(self, index_config, size: int = SEARCH_THREADS):
        self._config = index_config
        self._pool = ThreadPoolExecutor(size, thread_name_prefix="search")
        self._mine = threading.local()
        self._made: list = []
        self._lock = threading.Lock()

    async def run(self, work, *args):
        """``work(target, *args)`` on a search thread, with that thread's target."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._with_target, work, args)

    def _with_target(self, work, args):
        target = getattr(self._mine, "target", None)
        if target is None:
            target = self._mine.target = make_target(self._config)
            with self._lock:
                self._made.append(target)
        return work(target, *args)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        for target in self._made:
            target.close()


class Explaining:
    """``beamtrawl explain`` for the page: the configuration as a crawl loads it is loaded on the first question
    (plugins, preparators: what searching never needs) and kept; a configuration error is said and tried again."""

    def __init__(self, load):
        self._load, self._config, self._lock = load, None, threading.Lock()

    def lines(self, text: str) -> list[str]:
        from beamtrawl.pipeline.explain import explain

        with self._lock:
            if self._config is None:
                self._config = self._load()
        return explain(self._config, text)


class JSON(JSONResponse):
    """A JSON answer encoded by orjson (a twentieth of the time of the json module's for a page of hits)."""

    def render(self, content) -> bytes:
        return orjson.dumps(content)


class BadRequest(ValueError):
    """A request the search cannot answer as asked (a page number that is no number…); one sentence."""


@dataclass(frozen=True)
class Asked:
    """A search as the request asks for it, checked against the bounds."""

    q: str
    page: int
    per_page: int
    order: str

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page


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
    found = Asked(q, page, per_page, order)
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
    params = {"q": a.q, "order": a.order, "page": a.page, "per_page": a.per_page, **changes}
    defaults = {"order": RELEVANCE, "page": 1, "per_page": PER_PAGE}
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


def hit_link(hit) -> str:
    """Where a hit opens: a web page at its address, anything else through /document/<id>."""
    if hit.url.split(":", 1)[0].lower() in documents.WEB_SCHEMES:
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


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(_HERE / "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    env.filters.update(size=human_size, date=shown_date, hit_link=hit_link, url=shown_url, plain=plain,
                       breakable=breakable, mime=mime_names.readable)
    env.globals.update(version=__version__, MAX_QUERY_CHARS=MAX_QUERY_CHARS, ORDER_LABELS=ORDER_LABELS,
                       MAX_EXPLAIN_CHARS=MAX_EXPLAIN_CHARS,
                       thumbnail_types=thumbnails.TYPES)
    return env


class SecurityHeaders:
    """ASGI middleware: every answer carries SECURITY_HEADERS, and a page without a policy of its own
    (documents bring theirs) gets PAGE_CSP."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def sending(message):
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [h for h in SECURITY_HEADERS if h[0] not in present]
                if b"content-security-policy" not in present:
                    extra.append(_PAGE_CSP_HEADER)
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)
        await self.app(scope, receive, sending)


access_log = logging.getLogger("beamtrawl.serve.access")


class AccessLog:
    """ASGI middleware: one line per request in the request log (``beamtrawl.serve.access``): the client
    address, the signed-in user ("-" for anonymous), method, path, status, bytes and milliseconds. The query
    string is left out (it holds what people search for) and so is every header: a password never gets in.
    Each line starts with the time (UTC)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started, answer = time.perf_counter(), {"status": 500, "bytes": 0}

        async def sending(message):
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
            elif message["type"] == "http.response.body":
                answer["bytes"] += len(message.get("body", b""))
            await send(message)
        try:
            await self.app(scope, receive, sending)
        finally:
            peer = (scope.get("client") or ("-",))[0]
            user = scope.get("state", {}).get("user") or "-"
            access_log.info("%s %s %s %s %s %d %d %.0fms", datetime.now(UTC).isoformat(timespec="milliseconds"),
                            peer, _printable(user), scope["method"],
                            _printable(scope["path"])[:500], answer["status"], answer["bytes"],
                            (time.perf_counter() - started) * 1000)


def _printable(text: str) -> str:
    """A request's value as one log line's field: no spaces or control characters (they could forge lines)."""
    return "".join(c if c.isprintable() and not c.isspace() else f"%{ord(c) & 0xFF:02X}" for c in text)


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


def make_app(config, doorkeeper: Doorkeeper | None = None, crawl_config=None) -> Starlette:
    """The application over ``config``'s index; ``doorkeeper`` says who is searching (default: everyone
    is anonymous); ``crawl_config()`` gives the configuration as a crawl loads it (plugins, preparators), which
    /explain compares with (default: ``config``'s file loaded so, on first use)."""
    doorkeeper = doorkeeper or Doorkeeper()
    crawl_config = crawl_config or (lambda: load_config(config.source, crawling=True))
    explaining = Explaining(crawl_config)
    searches = Searches(config.index)
    fields = [f.name for f in config.auxiliary_fields if f.index]
    templates = Jinja2Templates(env=_environment())
    sources = Sources(SourceSettings.from_config(config))  # with the logins of SMB and IMAP sources
    async def who(request: Request) -> Searcher:
        """The searcher, or HTTPException 401 for wrong credentials, 429 when the address or user name must
        wait after failures (people.Doorkeeper.sign_in)."""
        peer = request.client.host if request.client else ""
        authorization = request.headers.get("authorization", "")
        if not authorization and not doorkeeper.trusted_header:
            return ANONYMOUS  # most requests: no thread needed
        if not doorkeeper.checks_password(authorization, request.headers, peer):  # trusted, or verified lately
            found = await run_in_threadpool(doorkeeper.searcher, authorization, request.headers, peer)
        else:
            try:
                found = await doorkeeper.sign_in(authorization, request.headers, peer)
            except TooManyFailures as wait:
                raise HTTPException(429, f"Too many failed sign-ins from this address or for this user name; try "
                                         f"again in {math.ceil(wait.seconds)} seconds.",
                                    headers={"Retry-After": str(math.ceil(wait.seconds))}) from None
        if found is None:
            raise HTTPException(401, "The user name or password is wrong.", headers={"WWW-Authenticate": REALM})
        request.state.user = found.name  # for the request log (AccessLog)
        return found

    def run_search(target, a: Asked, searcher: Searcher) -> Page:
        query = parse_query(a.q, fields, searcher.groups)
        return target.search_page(query, a.per_page, a.offset, a.order, FACET_SIZE)

    def page(request: Request, code: int = 200, **values) -> Response:
        values.setdefault("error", "")
        values.setdefault("searcher", Searcher())
        values.setdefault("can_sign_in", doorkeeper.can_sign_in)
        return templates.TemplateResponse(request, values.pop("template", "search.html"), values,
                                          status_code=code)

    async def search_page(request: Request) -> Response:
        searcher = await who(request)
        try:
            a = asked(request.query_params)
        except BadRequest as err:
            return page(request, 400, a=Asked("", 1, PER_PAGE, RELEVANCE), searcher=searcher, error=str(err))
        if not a.q:
            return page(request, a=a, searcher=searcher, result=None)
        try:
            result = await searches.run(run_search, a, searcher)
        except QueryError as err:
            return page(request, 400, a=a, searcher=searcher, error=f"This search cannot be run: {err}.")
        except IndexUnavailable as err:
            log.error("%s", err)
            return page(request, 503, a=a, searcher=searcher,
                        error="The search index cannot be reached right now. Please try again later.")
        pages = max(1, math.ceil(min(result.total, MAX_DEPTH) / a.per_page))
        return page(request, a=a, searcher=searcher, result=result, facets=facet_view(a, result), pages=pages,
                    previous=link(a, page=a.page - 1) if a.page > 1 else "",
                    next=link(a, page=a.page + 1) if a.page < pages else "",
                    orders={o: link(a, order=o, page=1) for o in ORDERS})

    async def api_search(request: Request) -> Response:
        searcher = await who(request)
        try:
            a = asked(request.query_params)
            if not a.q:
                raise BadRequest("q is the query; it is empty")
            result = await searches.run(run_search, a, searcher)
        except (BadRequest, QueryError) as err:
            return JSON({"error": str(err)}, 400)
        except IndexUnavailable as err:
            log.error("%s", err)
            return JSON({"error": "the search index cannot be reached"}, 503)
        return JSON({
            "query": a.q, "order": a.order, "page": a.page, "per_page": a.per_page, "total": result.total,
            "hits": [hit.__dict__ for hit in result.hits],
            "facets": {name: [{"value": v, "count": n} for v, n in values] for name, values in result.facets.items()},
        })

    async def opened(request: Request):
        """(the stored document the searcher may open, a stream of its bytes); for a web page, a redirect to
        it as the stream. The same access check as the search: an id the searcher may not see is 404."""
        searcher = await who(request)
        doc_id = request.path_params["doc_id"]
        if not documents.DOCUMENT_ID.fullmatch(doc_id):
            raise HTTPException(404)

        try:
            stored = await searches.run(lambda target: target.document(doc_id, searcher.groups))
        except IndexUnavailable as err:
            log.error("%s", err)
            raise HTTPException(503, "The search index cannot be reached right now.") from None
        if stored is None:
            raise HTTPException(404)
        if documents.is_web(stored):
            return stored, RedirectResponse(stored.url, 303)  # an address from the index, never from the request
        try:
            return stored, await run_in_threadpool(documents.open_stream, sources, stored, config.follow_symlinks)
        except FileNotFoundError:
            raise HTTPException(410, "This document is no longer where it was indexed; the next crawl takes "
                                     "it out of the search.") from None
        except documents.NotIndexed as err:
            log.warning("%s: not sent to a searcher: %s", stored.url, err)
            raise HTTPException(409, "This document changed after it was indexed; it can be opened again "
                                     "after the next crawl.") from None
        except Exception as err:  # noqa: BLE001 - the source's own errors (OSError, SMB, IMAP): one log line
            log.warning("%s: cannot open for a searcher: %s", stored.url, str(err)[:300] or type(err).__name__)
            raise HTTPException(502, "The document could not be read from where it is stored. It may have "
                                     "moved, or its server may be down.") from None

    async def document(request: Request) -> Response:
        stored, stream = await opened(request)
        if isinstance(stream, Response):
            return stream
        return StreamingResponse(documents.chunks(stream), headers=documents.headers(stored))

    async def text(request: Request) -> Response:
        """What the index holds of a hit, after the same access check as the search and /document."""
        searcher = await who(request)
        doc_id = request.path_params["doc_id"]
        if not documents.DOCUMENT_ID.fullmatch(doc_id):
            raise HTTPException(404)
        try:
            indexed = await searches.run(lambda target: target.indexed(doc_id, searcher.groups))
        except IndexUnavailable as err:
            log.error("%s", err)
            raise HTTPException(503, "The search index cannot be reached right now.") from None
        if indexed is None:
            raise HTTPException(404)
        q = request.query_params.get("q", "")[:MAX_QUERY_CHARS]
        whole, prefixes = text_view.query_words(q, fields)
        content, left_out = text_view.shown_text(indexed.content)
        return page(request, template="text.html", a=Asked(q, 1, PER_PAGE, RELEVANCE), searcher=searcher,
                    doc=indexed, opens=hit_link(indexed), back=link(Asked(q, 1, PER_PAGE, RELEVANCE)) if q else "/",
                    content=Markup(text_view.marked(content, whole, prefixes)), left_out=left_out,
                    title=Markup(text_view.marked(indexed.title, whole, prefixes)),
                    headlines=Markup(text_view.marked(indexed.headlines, whole, prefixes)),
                    metadata=Markup(text_view.marked(indexed.metadata, whole, prefixes)))

    async def thumbnail(request: Request) -> Response:
        stored, stream = await opened(request)
        if isinstance(stream, Response) or not thumbnails.makes(stored):
            if not isinstance(stream, Response):
                stream.close()
            raise HTTPException(404, "This document has no thumbnail.")
        picture = await run_in_threadpool(thumbnails.make, stream)
        if picture is None:
            raise HTTPException(404, "This document has no thumbnail.")
        return Response(picture, media_type="image/png", headers=thumbnails.HEADERS)

    async def explain_page(request: Request) -> Response:
        """``beamtrawl explain`` on the page, for an administrator: whoever may see the document, the answer is
        the index's and the crawls' (the text view stays behind the searcher's own groups)."""
        searcher = await who(request)
        if not searcher.signed_in:
            if not doorkeeper.can_sign_in:
                raise HTTPException(404, "This search has no users to sign in as.")
            raise HTTPException(401, "Sign in as an administrator to ask why a document is or is not in the index.",
                                headers={"WWW-Authenticate": REALM})
        if not searcher.admin:
            raise HTTPException(403, "Only an administrator may ask why a document is or is not in the index.")
        values = {"template": "explain.html", "a": Asked("", 1, PER_PAGE, RELEVANCE), "searcher": searcher,
                  "asked": "", "lines": []}
        try:
            values["asked"] = explain_asked(request.query_params)
        except BadRequest as err:
            return page(request, 400, **values, error=str(err))
        if not values["asked"]:
            return page(request, **values)
        try:
            values["lines"] = await run_in_threadpool(explaining.lines, values["asked"])
        except (IndexUnavailable, ConfigError) as err:
            log.error("explain: %s", err)
            return page(request, 503, **values, error=f"The answer cannot be given right now: {err}")
        return page(request, **values)

    async def signin(request: Request) -> Response:
        searcher = await who(request)
        if not doorkeeper.can_sign_in:
            raise HTTPException(404, "This search has no users to sign in as.")
        if not searcher.signed_in:
            raise HTTPException(401, "Sign in with your user name and password.", headers={"WWW-Authenticate": REALM})
        try:
            back = asked(request.query_params)
        except BadRequest:
            back = Asked("", 1, PER_PAGE, RELEVANCE)
        return RedirectResponse(link(back), 303)

    async def signout(request: Request) -> Response:
        """Sign out of HTTP Basic: a 401 without a challenge, so the browser drops the credentials it
        keeps for this site (they were refused) without asking for new ones, and shows the page."""
        if not doorkeeper.can_sign_in:
            raise HTTPException(404, "This search has no users to sign in as.")
        response = page(request, 401, template="error.html", status=401, searcher=ANONYMOUS,
                        message="You are signed out. Close the browser's window too if it still sends your name.")
        return response

    async def health(request: Request) -> Response:
        try:
            await searches.run(lambda target: target.check())
        except IndexUnavailable as err:
            log.error("health: %s", err)
            return JSON({"status": "unavailable"}, 503)
        return JSON({"status": "ok"})

    async def failed(request: Request, exc: HTTPException) -> Response:
        messages = {404: "There is no such page or document, or you may not open it.",
                    405: "This address only answers GET."}
        detail = exc.detail if exc.detail and exc.detail != HTTPStatus(exc.status_code).phrase else ""
        text = detail or messages.get(exc.status_code, "The request could not be answered.")
        if request.url.path.startswith("/api/"):
            return JSON({"error": text}, exc.status_code, headers=exc.headers)
        response = page(request, exc.status_code, template="error.html", status=exc.status_code, message=text)
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        searches.close()

    async def broken(request: Request, exc: Exception) -> Response:
        """A bug: one line in the log, a plain answer without details (outside the security middleware,
        so it carries the headers itself)."""
        log.error("%s %s: %s", request.method, request.url.path, str(exc)[:300] or type(exc).__name__)
        headers = {name.decode(): value.decode() for name, value in SECURITY_HEADERS}
        return PlainTextResponse("The search failed unexpectedly.", 500,
                                 headers={**headers, "content-security-policy": PAGE_CSP})

    app = Starlette(routes=[
        Route("/", search_page), Route("/api/search", api_search), Route("/document/{doc_id}", document),
        Route("/text/{doc_id}", text),
        Route("/thumbnail/{doc_id}", thumbnail), Route("/explain", explain_page),
        Route("/signin", signin), Route("/signout", signout), Route("/health", health),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ], exception_handlers={HTTPException: failed, Exception: broken}, lifespan=lifespan)
    app.router.redirect_slashes = False  # its redirect is absolute, to whatever Host the request named
    app.add_middleware(SecurityHeaders)
    app.add_middleware(AccessLog)
    return app
