"""Markdown (``.md``, ``.markdown``), rendered to text by markdown-it-py (CommonMark with GitHub's tables):
what a reader sees, not the markup (``# Title``, ``| --- |``, ``**bold**``, link targets). The first heading
is the title; every heading is a headline. Code blocks keep their text; HTML inside the Markdown is reduced
to its text. A link's text stays, its target goes (it is no word of the document)."""

from __future__ import annotations

import lxml.etree
import lxml.html
from beamtrawl.transforms.preparators.base import Prepared
from beamtrawl.transforms.preparators.text import decode_text

MIME_TYPES = ("text/markdown", "text/x-markdown")
_BREAKS = {"softbreak": "\n", "hardbreak": "\n"}


def _html_text(markup: str) -> str:
    try:
        return lxml.html.fragment_fromstring(markup, create_parent="div").text_content()
    except (lxml.etree.ParserError, ValueError):
        return ""


def _inline(token) -> str:
    """The text a reader sees of an inline token: its text, code spans, images' alternative text, breaks."""
    out = []
    for child in token.children or ():
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type == "image":
            out.append(_inline(child))
        elif child.type == "html_inline":
            out.append(_html_text(child.content))
        else:
            out.append(_BREAKS.get(child.type, ""))
    return "".join(out)


def prepare_markdown(data: bytes, url: str, mimetype: str, params: dict) -> Prepared:
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(decode_text(data))
    lines, headlines, row = [], [], None
    in_heading = False
    for token in tokens:
        if token.type == "heading_open":
            in_heading = True
        elif token.type == "heading_close":
            in_heading = False
        elif token.type == "tr_open":
            row = []
        elif token.type == "tr_close":
            lines.append(" ".join(cell for cell in row if cell))
            row = None
        elif token.type == "inline":
            text = _inline(token).strip()
            if row is not None:
                row.append(text)
            elif text:
                lines.append(text)
                if in_heading:
                    headlines.append(" ".join(text.split()))
        elif token.type in ("fence", "code_block"):
            lines.append(token.content.rstrip("\n"))
        elif token.type == "html_block":
            lines.append(_html_text(token.content).strip())
    return Prepared(title=headlines[0] if headlines else "", content="\n".join(line for line in lines if line),
                    headlines=headlines)
