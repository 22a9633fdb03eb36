"""The preparator interface: a plain callable from bytes to searchable text and metadata.

A preparator is ``func(data: bytes, url: str, mimetype: str, params: dict) -> Prepared``; it can be
called and tested without Beam. :class:`PreparatorSpec` says which documents it accepts (MIME
types, or a URL pattern that overrides them, as in regain) and its priority (higher first).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field


class PreparationError(Exception):
    """The preparator cannot read this document; the message becomes the report's reason."""


@dataclass
class Prepared:
    title: str = ""
    content: str = ""
    summary: str = ""
    headlines: list[str] = field(default_factory=list)
    metadata: str = ""
    fields: dict[str, str] = field(default_factory=dict)
    links: list[tuple[str, str]] = field(default_factory=list)  # (absolute URL, link text)


@dataclass(frozen=True)
class PreparatorSpec:
    name: str
    func: Callable[[bytes, str, str, dict], Prepared]
    mime_types: tuple[str, ...] = ()  # exact types, or "family/*"
    priority: int = 0
    url_pattern: re.Pattern | None = None
    params: tuple[tuple[str, object], ...] = ()
    catch_all: bool = False  # only for documents no other preparator accepts

    def accepts(self, mimetype: str, url: str) -> bool:
        if self.url_pattern is not None:
            return self.url_pattern.search(url) is not None
        family = mimetype.split("/", 1)[0] + "/*"
        return mimetype in self.mime_types or family in self.mime_types

    def __call__(self, data: bytes, url: str, mimetype: str) -> Prepared:
        return self.func(data, url, mimetype, dict(self.params))
