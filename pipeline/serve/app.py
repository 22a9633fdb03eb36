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
of its own (site.Searches: a SQLite connection must not be shared by concurrent searches).

The handlers live in ``search_routes``, ``document_routes`` and ``people_routes``; what they share in
``site``; how a request's search is read in ``asking``; how pages show things in ``pages``.
"""

from __future__ import annotations

import contextlib
from http import HTTPStatus
from pathlib import Path

from beamtrawl.pipeline.serve.document_routes import DocumentRoutes
from beamtrawl.pipeline.serve.middleware import PAGE_CSP, SECURITY_HEADERS, AccessLog, SecurityHeaders
from beamtrawl.pipeline.serve.people import Doorkeeper
from beamtrawl.pipeline.serve.people_routes import PeopleRoutes
from beamtrawl.pipeline.serve.protocol import BoundedHeadProtocol
from beamtrawl.pipeline.serve.search_routes import SearchRoutes
from beamtrawl.pipeline.serve.site import JSON, Site, log
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

#: uvicorn's options: h11 bounds a request's line and headers (httptools buffers a header of any size: one
#: client sending a 200 MB header grew the server by 260 MB), and the protocol bounds the time a head may
#: take (protocol.py); the client address is the TCP peer (no X-Forwarded-For), which the trusted-header
#: check relies on
SERVER_OPTIONS = {"http": BoundedHeadProtocol, "h11_max_incomplete_event_size": 64 * 1024, "proxy_headers": False,
                  "server_header": False}
MESSAGES = {404: "There is no such page or document, or you may not open it.", 405: "This address only answers GET."}
_HERE = Path(__file__).parent


def make_app(config, doorkeeper: Doorkeeper | None = None, crawl_config=None,
             document_seconds: float | None = None) -> Starlette:
    """The application over ``config``'s index (site.Site says what the others are)."""
    site = Site(config, doorkeeper, crawl_config, document_seconds)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        site.searches.close()
        site.deliveries.close()

    async def failed(request: Request, exc: HTTPException) -> Response:
        return answer_refusal(site, request, exc)

    routes = [*SearchRoutes(site).routes(), *DocumentRoutes(site).routes(), *PeopleRoutes(site).routes(),
              Mount("/static", StaticFiles(directory=_HERE / "static"), name="static")]
    app = Starlette(routes=routes, exception_handlers={HTTPException: failed, Exception: broken}, lifespan=lifespan)
    app.router.redirect_slashes = False  # its redirect is absolute, to whatever Host the request named
    app.add_middleware(SecurityHeaders)
    app.add_middleware(AccessLog)
    return app


def answer_refusal(site: Site, request: Request, exc: HTTPException) -> Response:
    """An HTTPException as the error page (or, under /api/, as JSON), with the exception's headers."""
    detail = exc.detail if exc.detail and exc.detail != HTTPStatus(exc.status_code).phrase else ""
    text = detail or MESSAGES.get(exc.status_code, "The request could not be answered.")
    if request.url.path.startswith("/api/"):
        return JSON({"error": text}, exc.status_code, headers=exc.headers)
    response = site.page(request, exc.status_code, template="error.html", status=exc.status_code, message=text)
    for name, value in (exc.headers or {}).items():
        response.headers[name] = value
    return response


async def broken(request: Request, exc: Exception) -> Response:
    """A bug: one line in the log, a plain answer without details (outside the security middleware,
    so it carries the headers itself)."""
    log.error("%s %s: %s", request.method, request.url.path, str(exc)[:300] or type(exc).__name__)
    headers = {name.decode(): value.decode() for name, value in SECURITY_HEADERS}
    return PlainTextResponse("The search failed unexpectedly.", 500,
                             headers={**headers, "content-security-policy": PAGE_CSP})
