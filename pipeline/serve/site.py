"""What the handlers of ``beamtrawl serve`` share (:class:`Site`): who is asking, the index's search threads,
the page templates, the sources documents open through, and the one access check before a hit is read."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import threading
from concurrent.futures import ThreadPoolExecutor

import orjson
from beamtrawl.pipeline.config import load_config
from beamtrawl.pipeline.serve import documents, pages
from beamtrawl.pipeline.serve.asking import FACET_SIZE, Asked
from beamtrawl.pipeline.serve.deliveries import DOCUMENT_SECONDS, Deliveries, Late
from beamtrawl.pipeline.serve.people import ANONYMOUS, Doorkeeper, Searcher
from beamtrawl.pipeline.serve.signin import TooManyFailures
from beamtrawl.transforms.embed import lazy_embedder
from beamtrawl.transforms.index import make_target, semantic
from beamtrawl.transforms.index.base import IndexUnavailable, Page
from beamtrawl.transforms.index.query import asking
from beamtrawl.transforms.sources import Sources
from beamtrawl.transforms.sources.settings import SourceSettings
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

log = logging.getLogger("beamtrawl.serve")

SEARCH_THREADS = 8  # index connections, so searches at once
REALM = 'Basic realm="beamtrawl", charset="UTF-8"'


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


class Site:
    """The application's state and the steps its handlers share. ``doorkeeper`` says who is searching
    (default: everyone is anonymous); ``crawl_config()`` gives the configuration as a crawl loads it (plugins,
    preparators), which /explain compares with (default: ``config``'s file loaded so, on first use);
    ``document_seconds`` bounds the wait for a document's source (default: deliveries.DOCUMENT_SECONDS)."""

    def __init__(self, config, doorkeeper: Doorkeeper | None = None, crawl_config=None,
                 document_seconds: float | None = None):
        self.config = config
        self.doorkeeper = doorkeeper or Doorkeeper()
        self.explaining = Explaining(crawl_config or (lambda: load_config(config.source, crawling=True)))
        self.searches = Searches(config.index)
        self.fields = [f.name for f in config.auxiliary_fields if f.index]
        self.embedder = lazy_embedder(config.embeddings)
        self.templates = Jinja2Templates(env=pages.environment())
        self.deliveries = Deliveries(document_seconds or DOCUMENT_SECONDS)
        self.sources = Sources(dataclasses.replace(  # with the logins of SMB and IMAP sources
            SourceSettings.from_config(config), deadline=self.deliveries.seconds))

    async def who(self, request: Request) -> Searcher:
        """The searcher, or HTTPException 401 for wrong credentials, 429 when the address or user name must
        wait after failures (people.Doorkeeper.sign_in)."""
        doorkeeper = self.doorkeeper
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
        request.state.user = found.name  # for the request log (middleware.AccessLog)
        return found

    def run_search(self, target, a: Asked, searcher: Searcher) -> Page:
        query = asking(a.q, self.fields, searcher.groups, a.like, a.mode)
        return semantic.search_page(target, query, self.embedder, a.per_page, offset=a.offset, order=a.order,
                                    facet_size=FACET_SIZE)

    def page(self, request: Request, code: int = 200, **values) -> Response:
        values.setdefault("error", "")
        values.setdefault("searcher", Searcher())
        values.setdefault("can_sign_in", self.doorkeeper.can_sign_in)
        values.setdefault("similar", self.embedder is not None)  # "more like this" needs the index's vectors
        return self.templates.TemplateResponse(request, values.pop("template", "search.html"), values,
                                               status_code=code)

    async def on_index(self, work, *args):
        """``work(target, *args)`` on a search thread; HTTPException 503 when the index cannot be reached."""
        try:
            return await self.searches.run(work, *args)
        except IndexUnavailable as err:
            log.error("%s", err)
            raise HTTPException(503, "The search index cannot be reached right now.") from None

    async def opened(self, request: Request, signed: bool = True):
        """(the stored document the searcher may open, a stream of its bytes); for a web page, or an object its
        store signs an address of (``signed``), a redirect to it as the stream. The same access check as the
        search: an id the searcher may not see is 404."""
        searcher = await self.who(request)
        doc_id = asked_id(request)
        stored = await self.on_index(lambda target: target.document(doc_id, searcher.groups))
        if stored is None:
            raise HTTPException(404)
        if documents.is_web(stored):
            return stored, RedirectResponse(stored.url, 303)  # an address from the index, never from the request
        try:
            found = await self.deliveries.run(self._open, stored, signed)  # one deadline for all it asks
            if isinstance(found, str):
                return stored, RedirectResponse(found, 303, headers={"cache-control": "no-store"})
            return stored, found
        except Late as err:
            log.warning("%s: not opened for a searcher in time: %s", stored.url, err)
            raise HTTPException(504, "The document's server did not answer in time; try again later.") from None
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

    def _open(self, stored, signed: bool):
        """A signed address of the document (``signed``, where its source signs one), else a stream of it."""
        address = documents.signed_address(self.sources, stored) if signed else ""
        return address or documents.open_stream(self.sources, stored, self.config.follow_symlinks)


def asked_id(request: Request) -> str:
    """The document id in the request's path; HTTPException 404 for anything that is no id of ours."""
    doc_id = request.path_params["doc_id"]
    if not documents.DOCUMENT_ID.fullmatch(doc_id):
        raise HTTPException(404)
    return doc_id
