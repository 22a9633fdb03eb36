"""Signing in and out (``/signin``, ``/signout``) and what only an administrator may ask (``/explain``)."""

from __future__ import annotations

from beamtrawl.pipeline.config import ConfigError
from beamtrawl.pipeline.serve.asking import NO_SEARCH, BadRequest, asked, explain_asked, link
from beamtrawl.pipeline.serve.people import ANONYMOUS
from beamtrawl.pipeline.serve.site import REALM, Site, log
from beamtrawl.transforms.index.base import IndexUnavailable
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

NO_USERS = "This search has no users to sign in as."


class PeopleRoutes:
    def __init__(self, site: Site):
        self.site = site

    def routes(self) -> list[Route]:
        return [Route("/explain", self.explain_page), Route("/signin", self.signin),
                Route("/signout", self.signout)]

    async def explain_page(self, request: Request) -> Response:
        """``beamtrawl explain`` on the page, for an administrator: whoever may see the document, the answer is
        the index's and the crawls' (the text view stays behind the searcher's own groups)."""
        site = self.site
        searcher = await site.who(request)
        if not searcher.signed_in:
            if not site.doorkeeper.can_sign_in:
                raise HTTPException(404, NO_USERS)
            raise HTTPException(401, "Sign in as an administrator to ask why a document is or is not in the index.",
                                headers={"WWW-Authenticate": REALM})
        if not searcher.admin:
            raise HTTPException(403, "Only an administrator may ask why a document is or is not in the index.")
        values = {"template": "explain.html", "a": NO_SEARCH, "searcher": searcher, "asked": "", "lines": []}
        try:
            values["asked"] = explain_asked(request.query_params)
        except BadRequest as err:
            return site.page(request, 400, **values, error=str(err))
        if not values["asked"]:
            return site.page(request, **values)
        try:
            values["lines"] = await run_in_threadpool(site.explaining.lines, values["asked"])
        except (IndexUnavailable, ConfigError) as err:
            log.error("explain: %s", err)
            return site.page(request, 503, **values, error=f"The answer cannot be given right now: {err}")
        return site.page(request, **values)

    async def signin(self, request: Request) -> Response:
        searcher = await self.site.who(request)
        if not self.site.doorkeeper.can_sign_in:
            raise HTTPException(404, NO_USERS)
        if not searcher.signed_in:
            raise HTTPException(401, "Sign in with your user name and password.", headers={"WWW-Authenticate": REALM})
        try:
            back = asked(request.query_params)
        except BadRequest:
            back = NO_SEARCH
        return RedirectResponse(link(back), 303)

    async def signout(self, request: Request) -> Response:
        """Sign out of HTTP Basic: a 401 without a challenge, so the browser drops the credentials it
        keeps for this site (they were refused) without asking for new ones, and shows the page."""
        if not self.site.doorkeeper.can_sign_in:
            raise HTTPException(404, NO_USERS)
        return self.site.page(request, 401, template="error.html", status=401, searcher=ANONYMOUS,
                              message="You are signed out. Close the browser's window too if it still sends your name.")
