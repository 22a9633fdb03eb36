"""A hit itself: its document from its source (``/document/<id>``), what the index holds of it
(``/text/<id>``) and an image's thumbnail (``/thumbnail/<id>``), each behind the search's access check."""

from __future__ import annotations

from beamtrawl.pipeline.serve import documents, text_view, thumbnails
from beamtrawl.pipeline.serve.asking import PER_PAGE, Asked, link
from beamtrawl.pipeline.serve.deliveries import Late
from beamtrawl.pipeline.serve.pages import hit_link
from beamtrawl.pipeline.serve.site import Site, asked_id, log
from beamtrawl.transforms.index.base import RELEVANCE
from beamtrawl.transforms.index.query import MAX_QUERY_CHARS
from markupsafe import Markup
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route


class DocumentRoutes:
    def __init__(self, site: Site):
        self.site = site

    def routes(self) -> list[Route]:
        return [Route("/document/{doc_id}", self.document), Route("/text/{doc_id}", self.text),
                Route("/thumbnail/{doc_id}", self.thumbnail)]

    async def document(self, request: Request) -> Response:
        stored, stream = await self.site.opened(request)
        if isinstance(stream, Response):
            return stream
        return _Unfinished(stored.url, self.site.deliveries.chunks(stream, documents.CHUNK),
                           headers=documents.headers(stored, getattr(stream, "content_type", "")))

    async def text(self, request: Request) -> Response:
        """What the index holds of a hit, after the same access check as the search and /document."""
        site = self.site
        searcher = await site.who(request)
        doc_id = asked_id(request)
        indexed = await site.on_index(lambda target: target.indexed(doc_id, searcher.groups))
        if indexed is None:
            raise HTTPException(404)
        q = request.query_params.get("q", "")[:MAX_QUERY_CHARS]
        whole, prefixes = text_view.query_words(q, site.fields)
        content, left_out = text_view.shown_text(indexed.content)
        search = Asked(q, 1, PER_PAGE, RELEVANCE)
        return site.page(request, template="text.html", a=search, searcher=searcher,
                         doc=indexed, opens=hit_link(indexed), back=link(search) if q else "/",
                         content=Markup(text_view.marked(content, whole, prefixes)), left_out=left_out,
                         title=Markup(text_view.marked(indexed.title, whole, prefixes)),
                         headlines=Markup(text_view.marked(indexed.headlines, whole, prefixes)),
                         metadata=Markup(text_view.marked(indexed.metadata, whole, prefixes)))

    async def thumbnail(self, request: Request) -> Response:
        stored, stream = await self.site.opened(request, signed=False)
        if isinstance(stream, Response) or not thumbnails.makes(stored):
            if not isinstance(stream, Response):
                stream.close()
            raise HTTPException(404, "This document has no thumbnail.")
        try:
            picture = await self.site.deliveries.run(thumbnails.make, stream)
        except Late as err:
            log.warning("%s: no thumbnail made in time: %s", stored.url, err)
            raise HTTPException(504, "The document's server did not answer in time; try again later.") from None
        if picture is None:
            raise HTTPException(404, "This document has no thumbnail.")
        return Response(picture, media_type="image/png", headers=thumbnails.HEADERS)


class _Unfinished(StreamingResponse):
    """A document's bytes as its source gives them; when the source stops answering (deliveries.Late), the
    connection ends without the response's end, so the searcher's client sees a cut document as cut."""

    def __init__(self, url: str, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.url = url

    async def stream_response(self, send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        try:
            async for chunk in self.body_iterator:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except Late as err:
            log.warning("%s: stopped sending to a searcher: %s", self.url, err)
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})
