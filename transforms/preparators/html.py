"""HTML and XHTML: trafilatura finds the main text and title; h1–h6 become headlines; the description
(``<meta name="description">``, which Tika reads too) is the metadata; links are kept with their text for
the web source.

Page furniture is taken out before the text and headlines are taken (links are taken before, since the
crawler follows navigation): navigation, search boxes, the page's own header and footer, sidebars
and the "¶" permalinks beside headings that Sphinx and MkDocs print. In the text, every page of a site
would match the words of its menus, and snippets would show them; so their visible text goes to the
document's ``furniture`` field, which the index targets search with a low weight and never show
(docs/search.md): a word only a sidebar holds still finds the page, below pages that hold it in their text.

The text is trafilatura's main text, then every other block of visible text that is not furniture and
holds a word the main text lacks, in page order (``_rest``): trafilatura judges a list of links
boilerplate, and so dropped the body of index pages (Python's "Python Runtime Services", a toctree of its
modules, kept 70 % of its words) and of pages laid out with tables (a WARC capture of a 1990s site kept its
headings but not the paragraphs beside its links). The main text comes first, so the first lines and
snippets are still the article's."""

from __future__ import annotations

import re
from urllib.parse import urljoin

import lxml.html
import trafilatura
from beamtrawl.transforms.preparators.base import PreparationError, Prepared
from trafilatura.utils import load_html

REVISION = 3  # part of the preparation fingerprint (base.py): 1 keeps the page's description as its metadata,
# 2 the blocks the main text left out that are not furniture, 3 the furniture's text in its own field

_SKIP_LINKS = ("mailto:", "javascript:", "tel:", "data:")
_INVISIBLE = frozenset({"script", "style", "noscript", "template"})  # no words a reader sees
_FURNITURE_TAGS = frozenset({"nav", *_INVISIBLE})
# ARIA landmarks that are not the main text
_FURNITURE_ROLES = frozenset({"navigation", "search", "banner", "contentinfo", "complementary", "menu", "menubar"})
# heading permalinks (Sphinx, MkDocs: <a class="headerlink">¶</a>) and Sphinx's sidebar
_FURNITURE_CLASSES = frozenset({"headerlink", "sphinxsidebar"})
_SPHINX_BARS = frozenset({"related", "footer"})  # <div class="related">, <div class="footer">
_OWNS_HEADER = frozenset({"article", "main", "section"})  # their header and footer hold a title, a byline
_BLOCKS = frozenset({"address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "div", "dl", "dt",
                     "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
                     "header", "hr", "li", "main", "ol", "p", "pre", "section", "summary", "table", "td", "th",
                     "tr", "ul", "br"})
_WORD = re.compile(r"\w+")
# Markup after the closing </html>, which libxml2 drops: groff -Thtml writes an empty page, then the page.
_AFTER_END = re.compile(rb"</html\s*>\s*<", re.IGNORECASE)
_CLOSING = re.compile(rb"</(?:body|html)\s*>", re.IGNORECASE)


def _text(element) -> str:
    return " ".join(" ".join(element.itertext()).split())


def _is_furniture(element) -> bool:
    tag = element.tag
    if tag in _FURNITURE_TAGS or element.get("role") in _FURNITURE_ROLES:
        return True
    if tag in ("header", "footer"):  # the page's, not an article's
        return not any(a.tag in _OWNS_HEADER for a in element.iterancestors())
    classes = (element.get("class") or "").split()
    if _FURNITURE_CLASSES.intersection(classes) or (tag == "div" and classes and set(classes) <= _SPHINX_BARS):
        return True
    return tag == "a" and len(element) == 0 and (element.text or "").strip() == "¶"


def _drop_furniture(tree) -> str:
    """Remove what every page of a site repeats around its main text (see the module docstring); return its
    visible text, a line per block, for the ``furniture`` field."""
    found = [e for e in tree.iter() if isinstance(e.tag, str) and _is_furniture(e)]
    for element in found:  # invisible first, so that a menu's script is not the menu's text
        if element.tag in _INVISIBLE and element.getparent() is not None:
            element.drop_tree()
    dropped, lines = set(), []
    for element in found:
        if element.tag in _INVISIBLE or any(a in dropped for a in element.iterancestors()):
            continue
        dropped.add(element)
        lines.extend(line for line in _lines(element) if _WORD.search(line))
        if element.getparent() is not None:
            element.drop_tree()
    return "\n".join(dict.fromkeys(lines))  # a menu shown twice (wide and narrow screens): once


def _load(data: bytes):
    tree = load_html(data)
    if tree is None:  # trafilatura refuses fragments such as "<p>tiny</p>"
        try:
            tree = lxml.html.document_fromstring(data)
        except (lxml.etree.ParserError, ValueError) as err:
            raise PreparationError(f"not parseable as HTML: {err}") from None
    return tree


def prepare_html(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    tree = _load(_CLOSING.sub(b"", data) if _AFTER_END.search(data) else data)
    title_element = tree.find(".//title")
    title = _text(title_element) if title_element is not None else ""
    description = " ".join(" ".join(tree.xpath("//meta[@name='description' or @name='Description']/@content")).split())
    base = urljoin(url, next(iter(tree.xpath("//base/@href")), ""))
    links = []
    for anchor in tree.iter("a", "frame", "iframe"):
        target = anchor.get("href") or anchor.get("src")
        if target and not target.strip().lower().startswith(_SKIP_LINKS):
            links.append((urljoin(base, target.strip()), _text(anchor)))
    furniture = _drop_furniture(tree)
    headlines = [h for h in (_text(e) for e in tree.iter("h1", "h2", "h3", "h4", "h5", "h6")) if h]

    # fast: no fallback extractors, no metadata (htmldate alone costs more than the rest together).
    document = trafilatura.bare_extraction(tree, url=url, fast=True, include_comments=False)
    content = (document.text if document is not None else "") or ""
    body = tree.find(".//body")
    if not content.strip():  # too short for trafilatura's main-text heuristics: take all visible text
        content = _text(body if body is not None else tree)
    else:
        content = "\n".join([content, *_rest(body if body is not None else tree, content)])
    return Prepared(title=title, content=content, headlines=headlines, links=links, metadata=description,
                    furniture=furniture)


def _lines(root) -> list[str]:
    """The visible text under ``root`` as lines, one per block element (a paragraph, a list item, a cell)."""
    parts: list[str] = []
    for event, element in lxml.etree.iterwalk(root, events=("start", "end")):
        block = isinstance(element.tag, str) and element.tag in _BLOCKS
        if event == "start":
            parts.append("\n" if block else "")
            if isinstance(element.tag, str) and element.text:
                parts.append(element.text)
        else:
            parts.append("\n" if block else "")
            if element.tail and element is not root:
                parts.append(element.tail)
    return [line for line in (" ".join(piece.split()) for piece in "".join(parts).split("\n")) if line]


def _rest(root, main: str) -> list[str]:
    """The lines of visible text that hold a word the main text does not, in page order (a word set, not a
    substring test, so that a huge page costs one pass)."""
    known = {word.lower() for word in _WORD.findall(main)}
    rest = []
    for line in _lines(root):
        words = {word.lower() for word in _WORD.findall(line)}
        if not words <= known:
            known |= words
            rest.append(line)
    return rest
