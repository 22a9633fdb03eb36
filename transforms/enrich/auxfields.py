"""Auxiliary fields: extra index fields computed from a document's URL or path (regain's
``auxiliaryField``), e.g. ``project`` from ``/projects/([^/]*)/`` or a fixed ``doctype`` per folder.

regain's semantics: a regex searched anywhere in the URL (or, with ``source: path``, in the decoded
local path of a ``file:`` URL), case-insensitive unless ``case_sensitive``; the value is a regex group
(``group``, default 1, or 0 for a regex without groups) or a fixed ``value``; no match, no field;
lower-cased unless ``lower_case: false``; ``store`` (returned with hits), ``index`` (searchable as
``name:value``) and ``tokenize`` (matched by words rather than as one exact value) flags with regain's
defaults true, true, false. regain's two shipped fields are always there unless a configured field
takes their name: ``extension`` (stored, exact; its regex stops at a ``/``, where regain's took
``x/Makefile`` for ``/a.x/Makefile``) and ``location`` (the whole URL, tokenized, not stored, so
``location:projects`` finds everything with that word in its URL).

Values are computed in :func:`transforms.prepare.make_document`, so a change of the field
definitions changes the preparation fingerprint and re-prepares the documents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from beamtrawl.transforms.sources import local_path

#: Names an auxiliary field cannot take: the standard fields of every document (IndexDoc) but
#: ``extension``, regain's default auxiliary field (tests check this list against IndexDoc).
RESERVED = frozenset((
    "id", "url", "root", "title", "content", "summary", "headlines", "metadata", "mimetype", "filename",
    "path", "size", "mtime_ns", "last_modified", "groups", "preparation_error", "content_hash", "etag",
    "http_last_modified", "prep_fingerprint", "outlinks", "indexed_at", "aux", "denied", "furniture", "passages", "vectors"))


@dataclass(frozen=True)
class AuxFieldSpec:
    name: str
    regex: re.Pattern
    group: int = 1
    value: str | None = None  # a fixed value, when the regex matches
    source: str = "url"  # or "path"
    lower_case: bool = True
    store: bool = True
    index: bool = True
    tokenize: bool = False

    def compute(self, url: str):
        """The field's :class:`transforms.records.AuxValue` for ``url``, or None."""
        from beamtrawl.transforms.records import (
            AuxValue,  # records import Beam: not needed to read a configuration
        )

        text = url
        if self.source == "path":
            text = local_path(url) or url
        match = self.regex.search(text)
        if match is None:
            return None
        value = self.value if self.value is not None else (match.group(self.group) or "")
        if not value:
            return None
        if self.lower_case:
            value = value.lower()
        return AuxValue(self.name, value, self.store, self.index, self.tokenize)


DEFAULT_AUX_FIELDS = (
    AuxFieldSpec("extension", re.compile(r"\.([^./]*)$", re.IGNORECASE)),
    AuxFieldSpec("location", re.compile(r"^(.*)$", re.IGNORECASE), store=False, tokenize=True),
)


def aux_values(specs, url: str) -> list:
    """The auxiliary field values of the document at ``url``, in configuration order."""
    values = []
    for spec in specs:
        value = spec.compute(url)
        if value is not None:
            values.append(value)
    return values


def tokens(text: str) -> list[str]:
    """The words a tokenized field is searched by: lower case, percent-decoded, split at non-word
    characters (``file:///srv/Meeting%20notes/a-b.md`` → file srv meeting notes a b md)."""
    return re.findall(r"\w+", unquote(text).lower())
