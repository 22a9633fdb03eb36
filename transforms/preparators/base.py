"""The preparator interface: a plain callable from bytes to searchable text and metadata.

A preparator is ``func(data: bytes, url: str, mimetype: str, params: dict) -> Prepared``; it can be
called and tested without Beam. :class:`PreparatorSpec` is one configured instance of it: which
documents it accepts (MIME types, or a URL pattern that overrides them, as in regain, or with
``url_and_mime`` both), its priority (higher first) and its parameters. Several instances of one function
may exist under different names.

A preparator's module may set ``REVISION`` (an int, default 0): it enters the preparation fingerprint, so
raising it when the module's output changes re-prepares the documents it made (DESIGN, invariant 3).
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
    fields: dict[str, str] = field(default_factory=dict)  # additional fields, regain's getAdditionalFields
    links: list[tuple[str, str]] = field(default_factory=list)  # (absolute URL, link text)
    path: list[tuple[str, str]] = field(default_factory=list)  # breadcrumb (URL, title), regain's getPath
    partial: str = ""  # why only part of the document was read (a bound was reached); a report line
    furniture: str = ""  # words every page of a site repeats (menus, sidebars): searchable at a low weight, never shown


_TEXTS = ("title", "content", "summary", "metadata", "partial", "furniture")


def checked(prepared) -> Prepared:
    """``prepared`` as a preparator or an ``on_after_prepare`` plugin gave it, if its texts are strings and its
    headlines strings in a list; else a TypeError naming the field (a plugin's ``title=7`` failed later, naming an
    ``AttributeError`` of ``int``)."""
    if not isinstance(prepared, Prepared):
        raise TypeError(f"the preparation gave {type(prepared).__name__}, not Prepared")
    for name in _TEXTS:
        if not isinstance(getattr(prepared, name), str):
            raise TypeError(f"Prepared.{name} is {type(getattr(prepared, name)).__name__}, not str")
    if not isinstance(prepared.headlines, list | tuple) or not all(isinstance(h, str) for h in prepared.headlines):
        raise TypeError("Prepared.headlines is not a list of strings")
    return prepared


@dataclass(frozen=True)
class PreparatorSpec:
    """``params`` holds the parameters in use; a registered spec's are the defaults, and configuration
    may set only those keys, with values of the same type. ``check_params`` may refuse a combination
    (raising ``ValueError("key: problem")``) or fill in derived values."""

    name: str
    func: Callable[[bytes, str, str, dict], Prepared]
    mime_types: tuple[str, ...] = ()  # exact types, or "family/*"
    priority: int = 0
    url_pattern: re.Pattern | None = None
    params: tuple[tuple[str, object], ...] = ()
    catch_all: bool = False  # only for documents no other preparator accepts
    check_params: Callable[[dict], dict] | None = None
    preparator: str = ""  # the registered preparator this instance configures; "" = ``name``
    url_and_mime: bool = False  # the URL pattern narrows the MIME types instead of overriding them

    def accepts(self, mimetype: str, url: str) -> bool:
        if self.url_pattern is not None:
            if self.url_pattern.search(url) is None:
                return False
            if not self.url_and_mime:
                return True
        family = mimetype.split("/", 1)[0] + "/*"
        return mimetype in self.mime_types or family in self.mime_types

    def __call__(self, data, url: str, mimetype: str) -> Prepared:
        """``data`` is bytes or a readable binary stream."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            data = data.read()
        return self.func(bytes(data), url, mimetype, dict(self.params))
