"""HTML and XHTML: trafilatura finds the main text and title; h1–h6 become headlines; the description
(``<meta name="description">``, which Tika reads too) is the metadata; links, with their text, when
the ``links`` parameter asks for them.

Page furniture is taken out before the text and headlines are taken (links, when asked for, before it, since
a crawler follows navigation): navigation, search boxes, the page's own header and footer, sidebars
and the "¶" permalinks beside headings that Sphinx and MkDocs print. In the text, every page of a site
would match the words of its menus, and snippets would show them; so their visible text goes to the
document's ``furniture`` field, which the index targets search with a low weight and never show
(docs/search.md): a word only a sidebar holds still finds the page, below pages that hold it in their text.

The text is trafilatura's main text, then every other block of visible text that is not furniture and
holds a word the main text lacks, in page order (``_rest``): trafilatura judges a list of links
boilerplate, and so dropped the body of index pages (Python's "Python Runtime Services", a toctree of its
modules, kept 70 % of its words) and of pages laid out with tables (a WARC capture of a 1990s site kept its
headings but not the paragraphs beside its links). The main text comes first, so the first lines and
snippets are still the article's.

A page that declares its main content (HTML5's ``<main>``, ARIA's ``role="main"``: Sphinx, MkDocs and most
site generators write one) needs no guess: that element's text is the main text, and trafilatura, whose
heuristics cost about 90 % of the time of a page, runs only for pages that say nothing (or whose declared
main content holds no word). The text is then what it would be anyway, the declared part first: trafilatura
would find the same main text there, and the blocks it left out of it would follow in ``_rest``."""

from __future__ import annotations

import copy
import functools
import re
from html.parser import HTMLParser
from urllib.parse import urljoin

import lxml.etree
import lxml.html
from beamtrawl.transforms.preparators.base import PreparationError, Prepared

REVISION = 4  # part of the preparation fingerprint (base.py): 1 keeps the page's description as its metadata,
# 2 the blocks the main text left out that are not furniture, 3 a declared main content is the main text and
# the furniture's text goes to a field of its own, 4 a page nested deeper than libxml2 reads is read flat

# Prepared.links only when asked: the web source finds a page's links in its raw bytes itself
# (transforms/sources/http/links.py), so no source reads them here, and they cost a tenth of a page's time.
DEFAULTS = (("links", False),)
_SKIP_LINKS = ("mailto:", "javascript:", "tel:", "data:")
_INVISIBLE = ("script", "style", "noscript", "template")  # no words a reader sees
_FURNITURE_TAGS = ("nav", *_INVISIBLE)
_OWNS_HEADER = ("article", "main", "section")  # their header and footer hold a title, a byline
_SPHINX_BARS = frozenset({"related", "footer"})  # <div class="related">, <div class="footer">


def _has_class(name: str) -> str:
    """The class test in XPath; the plain ``contains`` first, since most class attributes fail it and building
    the padded string for every one cost a third of the furniture queries' time."""
    return f"(contains(., '{name}') and contains(concat(' ', normalize-space(.), ' '), ' {name} '))"


# Furniture found by its attributes (see the module docstring): ARIA landmarks that are not the main text,
# heading permalinks (Sphinx, MkDocs: <a class="headerlink">¶</a>) and Sphinx's sidebar. An attribute's
# parent, not //*[…]: libxml2 then tests the attributes pages have, not every element (a third of the time).
_MARKED = lxml.etree.XPath(
    "//@role[.='navigation' or .='search' or .='banner' or .='contentinfo' or .='complementary' or .='menu'"
    f" or .='menubar']/.. | //@class[{_has_class('headerlink')} or {_has_class('sphinxsidebar')}]/.."
    " | //a[not(*) and normalize-space(text())='¶']")
# Sphinx's bars (<div class="related">, <div class="footer">) are among these (:func:`_is_sphinx_bar`)
_BAR_CANDIDATES = lxml.etree.XPath(f"//div/@class[{_has_class('related')} or {_has_class('footer')}]/..")
# the page's declaration of its main content: HTML5's <main>, ARIA's role="main"
_MAIN = lxml.etree.XPath("//main | //@role[.='main']/..")
_BLOCKS = ("address", "article", "aside", "blockquote", "body", "caption", "dd", "details", "div", "dl", "dt",
           "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr",
           "li", "main", "ol", "p", "pre", "section", "summary", "table", "td", "th", "tr", "ul", "br")
# Marks where a block begins and ends while its text is taken (:func:`_lines`): a character of Unicode's
# private use area, which a page may hold (icon fonts) at the cost of a line break there.
_BREAK = "\ue000"
_WORD = re.compile(r"\w+")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")  # C0 controls but tab and line breaks: not XML
# Markup after the closing </html>, which libxml2 drops: groff -Thtml writes an empty page, then the page.
_AFTER_END = re.compile(rb"</html\s*>\s*<", re.IGNORECASE)
_CLOSING = re.compile(rb"</(?:body|html)\s*>", re.IGNORECASE)
#: libxml2's depth limit (400 unclosed <font> tags reach it): it stops there and drops the text it had read.
_DEEPEST = 255


def _text(element) -> str:
    return " ".join(" ".join(element.itertext()).split())


def _is_sphinx_bar(element) -> bool:
    return set(element.get("class", "").split()) <= _SPHINX_BARS


def _drop_furniture(tree) -> str:
    """Remove what every page of a site repeats around its main text (see the module docstring): script and
    style, navigation, the page's own header and footer (not those of an article, a main part, a section),
    and what :data:`_MARKED` and :func:`_is_sphinx_bar` find; return its visible text, a line per block, for
    the ``furniture`` field."""
    found = [*tree.iter(*_FURNITURE_TAGS), *_MARKED(tree), *filter(_is_sphinx_bar, _BAR_CANDIDATES(tree)),
             *(e for e in tree.iter("header", "footer") if next(e.iterancestors(*_OWNS_HEADER), None) is None)]
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


def import_trafilatura():
    """trafilatura, imported at its first use: a third of the preparators' import (issue 27: every crawl's command
    paid it, though only the preparing child reads HTML; that child imports it before its first document)."""
    import trafilatura.utils

    return trafilatura


@functools.cache
def _default_options():
    from trafilatura.settings import Extractor

    return Extractor(output_format="python", fast=True, comments=False)


def _options(url: str):
    """trafilatura's options for a page (what ``bare_extraction(tree, url=url, fast=True, include_comments=False)``
    makes), copied from ones made once: making them reads its configuration, eight ``ConfigParser.getint``s, ~5 %
    of a page's preparation (py-spy, issue 27). ``bare_extraction`` copies them before it changes one."""
    options = copy.copy(_default_options())
    options.url = url
    options.source = url and url.encode("utf-8", "replace").decode("utf-8")
    return options


def _load(data: bytes):
    tree = import_trafilatura().utils.load_html(data)
    if tree is None:  # trafilatura refuses fragments such as "<p>tiny</p>"
        try:
            tree = lxml.html.document_fromstring(data)
        except (lxml.etree.ParserError, ValueError) as err:
            raise PreparationError(f"not parseable as HTML: {err}") from None
    return tree


def _links(tree, url: str) -> list[tuple[str, str]]:
    """Each link's absolute URL and text. A page links to a few documents at many anchors (an index page to
    each entry of a module's page): each document's URL is resolved once."""
    base = urljoin(url, next(iter(tree.xpath("//base/@href")), ""))
    resolved: dict[str, str] = {}
    links = []
    for anchor in tree.iter("a", "frame", "iframe"):
        target = (anchor.get("href") or anchor.get("src") or "").strip()
        if target and not target.lower().startswith(_SKIP_LINKS):
            document, _, fragment = target.partition("#")
            if document not in resolved:
                resolved[document] = urljoin(base, document) if document else base.partition("#")[0]
            links.append((resolved[document] + (f"#{fragment}" if fragment else ""), _text(anchor)))
    return links


def _is_main(element) -> bool:
    return element.tag == "main" or element.get("role") == "main"


def _declared_main(root):
    """The one element the page declares its main content, when it holds a word; else None."""
    found = [e for e in _MAIN(root) if not any(_is_main(a) for a in e.iterancestors())]  # the outermost
    if len(found) != 1 or found[0].getparent() is None:  # none, several, or <html role="main">
        return None
    # a word in any of its texts: stops at the first, where string() built a whole manual's text to test it
    return found[0] if any(_WORD.search(text) for text in found[0].itertext()) else None


def prepare_html(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    tree = _load(_CLOSING.sub(b"", data) if _AFTER_END.search(data) else data)
    if _too_deep(tree):
        return _flat(data)
    title_element = tree.find(".//title")
    title = _text(title_element) if title_element is not None else ""
    description = " ".join(" ".join(tree.xpath("//meta[@name='description' or @name='Description']/@content")).split())
    links = _links(tree, url) if params.get("links") else []  # before the furniture goes: navigation links
    furniture = _drop_furniture(tree)
    headlines = [h for h in (_text(e) for e in tree.iter("h1", "h2", "h3", "h4", "h5", "h6")) if h]
    body = tree.find(".//body")
    root = body if body is not None else tree
    main = _declared_main(root)
    if main is not None:
        content = "\n".join(_lines(main))
        main.drop_tree()  # the rest of the page follows its text
    else:
        # fast: no fallback extractors, no metadata (htmldate alone costs more than the rest together).
        document = import_trafilatura().bare_extraction(tree, options=_options(url))
        content = (document.text if document is not None else "") or ""
    if not content.strip():  # too short for trafilatura's main-text heuristics: take all visible text
        content = _text(root)
    else:
        content = "\n".join([content, *_rest(root, content)])
    return Prepared(title=title, content=content, headlines=headlines, links=links, metadata=description,
                    furniture=furniture)


def visible_lines(data: bytes) -> list[str]:
    """Every block of a page's visible text, a line each, without trafilatura's choice of a main text: for text
    that is searched and not shown (a mail's HTML alternative), at the cost of a parse."""
    tree = _load(data)
    if _too_deep(tree):
        return _flat(data).content.splitlines()
    lxml.etree.strip_elements(tree, *_INVISIBLE, with_tail=False)
    body = tree.find(".//body")
    return _lines(body if body is not None else tree)


def _too_deep(tree) -> bool:
    """Did libxml2 stop at its depth limit? Then the last element it read, the end of the chain of last
    children, is that deep (a walk down one chain, where a search of the whole tree cost 2 % of a page)."""
    element, depth = tree, 0
    while len(element) and depth < _DEEPEST:
        element, depth = element[-1], depth + 1
    return depth >= _DEEPEST


class _FlatText(HTMLParser):
    """A page's title and visible text read as a stream of tags: no tree, so no depth limit."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.title: list[str] = []
        self.text: list[str] = []
        self._inside = ""  # the title or an invisible element whose end tag comes next

    def handle_starttag(self, tag, attrs):
        if tag == "title" or tag in _INVISIBLE:
            self._inside = tag
        elif tag in _BLOCKS:
            self.text.append(_BREAK)

    def handle_endtag(self, tag):
        if tag == self._inside:
            self._inside = ""
        elif tag in _BLOCKS:
            self.text.append(_BREAK)

    def handle_data(self, data):
        if not self._inside:
            self.text.append(data)
        elif self._inside == "title":
            self.title.append(data)


def _flat(data: bytes) -> Prepared:
    """A page nested deeper than libxml2 reads (:func:`_too_deep`): its title and every word of its visible text,
    a line per block, the furniture not told apart (such a page has no layout to tell it by)."""
    reader = _FlatText()
    reader.feed(import_trafilatura().utils.decode_file(data))
    reader.close()
    lines = (" ".join(piece.split()) for piece in "".join(reader.text).split(_BREAK))
    return Prepared(title=" ".join("".join(reader.title).split()), content="\n".join(line for line in lines if line))


def _lines(root) -> list[str]:
    """The visible text under ``root`` as lines, one per block element (a paragraph, a list item, a cell), a
    preformatted block's lines each their own. Marks each block's bounds in the tree (which it changes), so
    that libxml2 writes the text in one call."""
    for pre in list(root.iter("pre")):
        text, tail = lxml.etree.tostring(pre, method="text", encoding="unicode", with_tail=False), pre.tail
        pre.clear()
        _assign(pre, "text", text.replace("\n", _BREAK))
        _assign(pre, "tail", tail)
    for element in root.iter(*_BLOCKS):
        _assign(element, "text", _BREAK + (element.text or ""))
        if element is not root:
            _assign(element, "tail", _BREAK + (element.tail or ""))
    text = lxml.etree.tostring(root, method="text", encoding="unicode", with_tail=False)
    return [line for line in (" ".join(piece.split()) for piece in text.split(_BREAK)) if line]


def _assign(element, part: str, text: str | None) -> None:
    """Set an element's text or tail; lxml refuses control characters, which libxml2 kept from a broken page."""
    try:
        setattr(element, part, text)
    except ValueError:
        setattr(element, part, _CONTROL.sub("", text))


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
