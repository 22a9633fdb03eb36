"""regain's useLinkTextAsTitleList: documents whose URL matches a pattern take as title the text
of the link that led to them (``Entry.link_text``, set by sources that follow links, e.g. the web
source), typically PDFs and office files whose own titles are empty or "Microsoft Word - doc1".

Params: ``url_patterns``, a list of regexes searched anywhere in the URL (regain's jakarta-regexp
``match``), e.g. ``['^https?://.*\\.(pdf|xls|doc|rtf|docx|xlsx|pptx)$']``. Documents without link
text (files, start URLs) keep their title.
"""

from __future__ import annotations

import dataclasses
import re

from beamtrawl.plugins.hookspecs import hookimpl


class LinkTextAsTitle:
    def __init__(self, url_patterns: list[str] | None = None):
        if not isinstance(url_patterns, list) or not url_patterns:
            raise ValueError("url_patterns must be a non-empty list of regexes")
        self.patterns = []
        for n, pattern in enumerate(url_patterns):
            try:
                self.patterns.append(re.compile(str(pattern)))
            except re.error as err:
                raise ValueError(f"url_patterns[{n}]: {err}") from None

    @hookimpl
    def on_after_prepare(self, raw_document, prepared):
        text = " ".join((raw_document.entry.link_text or "").split())
        if text and any(p.search(raw_document.entry.url) for p in self.patterns):
            return dataclasses.replace(prepared, title=text)
        return None
