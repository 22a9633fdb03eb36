"""HTML and XHTML: trafilatura finds the main text and title; h1–h6 become headlines; links are kept
with their text for the web source."""

from __future__ import annotations

from urllib.parse import urljoin

import lxml.html
import trafilatura
from trafilatura.utils import load_html

from transforms.preparators.base import PreparationError, Prepared

_SKIP_LINKS = ("mailto:", "javascript:", "tel:", "data:")


def _text(element) -> str:
    return " ".join(" ".join(element.itertext()).split())


def prepare_html(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    tree = load_html(data)
    if tree is None:  # trafilatura refuses fragments such as "<p>tiny</p>"
        try:
            tree = lxml.html.document_fromstring(data)
        except (lxml.etree.ParserError, ValueError) as err:
            raise PreparationError(f"not parseable as HTML: {err}") from None
    title_element = tree.find(".//title")
    title = _text(title_element) if title_element is not None else ""
    headlines = [h for h in (_text(e) for e in tree.iter("h1", "h2", "h3", "h4", "h5", "h6")) if h]
    base = urljoin(url, next(iter(tree.xpath("//base/@href")), ""))
    links = []
    for anchor in tree.iter("a", "frame", "iframe"):
        target = anchor.get("href") or anchor.get("src")
        if target and not target.strip().lower().startswith(_SKIP_LINKS):
            links.append((urljoin(base, target.strip()), _text(anchor)))

    # fast: no fallback extractors, no metadata (htmldate alone costs more than the rest together).
    document = trafilatura.bare_extraction(tree, url=url, fast=True, include_comments=False)
    content = (document.text if document is not None else "") or ""
    if not content.strip():  # too short for trafilatura's main-text heuristics: take all visible text
        for junk in tree.xpath("//script|//style|//noscript"):
            junk.drop_tree()
        body = tree.find(".//body")
        content = _text(body if body is not None else tree)
    return Prepared(title=title, content=content, headlines=headlines, links=links)
