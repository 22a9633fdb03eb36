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
from typing import Any
from urllib.parse import unquote

from beamtrawl.transforms.urls import url_to_path

#: Names an auxiliary field cannot take: the standard fields of every document (IndexDoc) but
#: ``extension``, regain's default auxiliary field (tests check this list against IndexDoc).
RESERVED = frozenset((
    "id", "url", "root", "title", "content", "summary", "headlines", "metadata", "mimetype", "filename",
    "path", "size", "mtime_ns", "last_modified", "groups", "preparation_error", "content_hash", "etag",
    "http_last_modified", "prep_fingerprint", "outlinks", "indexed_at", "aux", "denied"))
_NAME = re.compile(r"[a-z][a-z0-9_]*")


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
        if self.source == "path" and url.startswith("file:"):
            text = url_to_path(url)
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


def parse_aux_fields(r, raw: Any) -> tuple[AuxFieldSpec, ...]:
    """``auxiliary_fields:`` → the defaults plus the configured fields (``r`` is pipeline.config's
    ``_Reader``); a configured field named like a default replaces it."""
    keys = {"name", "regex", "group", "value", "source", "case_sensitive", "lower_case", "store", "index",
            "tokenize"}
    fields: dict[str, AuxFieldSpec] = {spec.name: spec for spec in DEFAULT_AUX_FIELDS}
    configured = set()
    for i, entry in enumerate(r.seq(raw, "auxiliary_fields")):
        path = f"auxiliary_fields[{i}]"
        entry = r.mapping(entry, path, keys, required={"name", "regex"})
        name = r.string(entry["name"], f"{path}.name")
        if not _NAME.fullmatch(name):
            raise r.fail(f"{path}.name", f"must be lower case letters, digits or '_', starting with a letter, "
                                         f"got {name!r}")
        if name in RESERVED:
            raise r.fail(f"{path}.name", f"'{name}' is a standard field of every document")
        if name in configured:
            raise r.fail(f"{path}.name", f"'{name}' is defined twice")
        configured.add(name)
        case_sensitive = r.boolean(entry.get("case_sensitive", False), f"{path}.case_sensitive")
        pattern = r.string(entry["regex"], f"{path}.regex")
        try:
            regex = re.compile(pattern, 0 if case_sensitive else re.IGNORECASE)
        except re.error as err:
            raise r.fail(f"{path}.regex", str(err)) from None
        if "group" in entry and "value" in entry:
            raise r.fail(path, "needs either 'group' (a regex group) or 'value' (a fixed value), not both")
        value = r.string(str(entry["value"]), f"{path}.value") if "value" in entry else None
        group = r.integer(entry.get("group", 1 if regex.groups else 0), f"{path}.group")
        if value is None and group > regex.groups:
            raise r.fail(f"{path}.group", f"the regex has {regex.groups} groups, so there is no group {group}")
        source = entry.get("source", "url")
        if source not in ("url", "path"):
            raise r.fail(f"{path}.source", f"must be url or path, got {source!r}")
        fields[name] = AuxFieldSpec(
            name, regex, group, value, source,
            lower_case=r.boolean(entry.get("lower_case", True), f"{path}.lower_case"),
            store=r.boolean(entry.get("store", True), f"{path}.store"),
            index=r.boolean(entry.get("index", True), f"{path}.index"),
            tokenize=r.boolean(entry.get("tokenize", False), f"{path}.tokenize"))
    return tuple(fields.values())
