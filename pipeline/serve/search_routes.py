"""The search, as a page (``/``) and as JSON (``/api/search``), and the index's health (``/health``)."""

from __future__ import annotations

import math

from beamtrawl.pipeline.serve.asking import MAX_DEPTH, NO_SEARCH, BadRequest, asked, facet_view, link
from beamtrawl.pipeline.serve.site import JSON, Site, log
from beamtrawl.transforms.index.base import ORDERS, IndexUnavailable
from beamtrawl.transforms.index.query import QueryError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


class SearchRoutes:
    def __init__(self, site: Site):
        self.site = site

    def routes(self) -> list[Route]:
        return [Route("/", self.search_page), Route("/api/search", self.api_search), Route("/health", self.health)]

    async def search_page(self, request: Request) -> Response:
        site = self.site
        searcher = await site.who(request)
        try:
            a = asked(request.query_params)
        except BadRequest as err:
            return site.page(request, 400, a=NO_SEARCH, searcher=searcher, error=str(err))
        if not a.asks:
            return site.page(request, a=a, searcher=searcher, result=None)
        try:
            result = await site.searches.run(site.run_search, a, searcher)
        except QueryError as err:
            return site.page(request, 400, a=a, searcher=searcher, error=f"This search cannot be run: {err}.")
        except IndexUnavailable as err:
            log.error("%s", err)
            return site.page(request, 503, a=a, searcher=searcher,
                             error="The search index cannot be reached right now. Please try again later.")
        pages = max(1, math.ceil(min(result.total, MAX_DEPTH) / a.per_page))
        return site.page(request, a=a, searcher=searcher, result=result, facets=facet_view(a, result), pages=pages,
                         previous=link(a, page=a.page - 1) if a.page > 1 else "",
                         next=link(a, page=a.page + 1) if a.page < pages else "",
                         orders={o: link(a, order=o, page=1) for o in ORDERS})

    async def api_search(self, request: Request) -> Response:
        searcher = await self.site.who(request)
        try:
            a = asked(request.query_params)
            if not a.asks:
                raise BadRequest("q is the query; it is empty")
            result = await self.site.searches.run(self.site.run_search, a, searcher)
        except (BadRequest, QueryError) as err:
            return JSON({"error": str(err)}, 400)
        except IndexUnavailable as err:
            log.error("%s", err)
            return JSON({"error": "the search index cannot be reached"}, 503)
        return JSON({
            "query": a.q, "mode": a.mode, "like": a.like, "order": a.order, "page": a.page, "per_page": a.per_page, "total": result.total,
            "hits": [hit.__dict__ for hit in result.hits],
            "facets": {name: [{"value": v, "count": n} for v, n in values] for name, values in result.facets.items()},
        })

    async def health(self, request: Request) -> Response:
        try:
            await self.site.searches.run(lambda target: target.check())
        except IndexUnavailable as err:
            log.error("health: %s", err)
            return JSON({"status": "unavailable"}, 503)
        return JSON({"status": "ok"})
