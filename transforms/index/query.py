"""The search syntax every index target understands, parsed once into a :class:`Query`.

``spectrometer calibration`` (words, all required) ``"polar bear"`` (a phrase) ``-draft`` (exclusion)
``calib*`` (prefix) ``mimetype:text/*`` ``extension:pdf`` ``path:/srv/docs/lab`` ``url:file:///srv``
(filters, a path or URL prefix, ``*`` wildcards in MIME types; ``-extension:csv`` excludes).
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

    @property
    def has_text(self) -> bool:
        return bool(self.words or self.phrases)


def parse_query(text: str) -> Query:
    query = Query()
    for match in _TOKEN.finditer(text):
        negated, name, phrase, word = match.group(1) == "-", match.group(2), match.group(3), match.group(4)
        value = phrase if phrase is not None else word
        if name is not None and name.lower() in FILTER_FIELDS:
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
