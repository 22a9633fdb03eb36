"""The search syntax every index target understands, parsed once into a :class:`Query`.

``spectrometer calibration`` (words, all required) ``"polar bear"`` (a phrase) ``-draft`` (exclusion)
``calib*`` (prefix) ``mimetype:text/*`` ``extension:pdf`` ``path:/srv/docs/lab`` ``url:file:///srv``
(filters, a path or URL prefix, ``*`` wildcards in MIME types; ``-extension:csv`` excludes).
``project:apollo`` filters by an auxiliary field (the names the configuration defines are passed in):
an exact value, or for a tokenized field (``location``) every word of it.

``groups`` is who is searching: a document with groups is found only by a searcher holding one of
them, and with no groups a search finds public documents only (regain showed everything for an
empty list). Every index target applies it to the whole query — text, filters, exclusions,
snippets — so nothing about a document outside them comes back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

FILTER_FIELDS = ("mimetype", "extension", "path", "url")
_TOKEN = re.compile(r'(-?)(?:([A-Za-z_]+):)?(?:"([^"]*)"?|(\S+))')


class QueryError(ValueError):
    pass


@dataclass
class Query:
    words: list[str] = field(default_factory=list)  # a trailing * makes a prefix
    phrases: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)  # words or phrases
    filters: list[tuple[str, str, bool]] = field(default_factory=list)  # (field, value, negated)
    groups: tuple[str, ...] = ()  # the searcher's groups; () = public documents only

    def aux_filters(self) -> list[tuple[str, str, bool]]:
        """The filters on auxiliary fields (every field that is not one of FILTER_FIELDS)."""
        return [f for f in self.filters if f[0] not in FILTER_FIELDS]

    @property
    def has_text(self) -> bool:
        return bool(self.words or self.phrases)


def parse_query(text: str, fields=(), groups=()) -> Query:
    """``fields``: the searchable auxiliary field names; ``groups``: the searcher's groups."""
    query = Query(groups=tuple(groups))
    known = {*FILTER_FIELDS, *fields}
    for match in _TOKEN.finditer(text):
        negated, name, phrase, word = match.group(1) == "-", match.group(2), match.group(3), match.group(4)
        value = phrase if phrase is not None else word
        if name is not None and name.lower() in known:
            if not value:
                raise QueryError(f"{name}: needs a value")
            query.filters.append((name.lower(), value, negated))
            continue
        if name is not None:  # not a field we know: search the words as written
            value = f"{name}:{value}"
        if not any(char.isalnum() for char in value):  # "&", "-", "*": nothing the index could match
            continue
        if negated:
            query.excluded.append(value)
        elif phrase is not None:
            query.phrases.append(value)
        else:
            query.words.append(value)
    if not (query.has_text or query.filters):
        raise QueryError("the query has no words or filters to search for")
    return query
