"""The one search language of every index target, parsed once into a :class:`Query` tree.

The language (docs/search.md has the user's version):

* ``spectrometer calibration`` — words, all required, in any searchable field.
* ``"polar bear"`` — a phrase: its words next to each other, in this order, in one field.
* ``calib*`` — a prefix (only a trailing ``*`` on an unquoted word).
* ``-draft``, ``-"first draft"``, ``-extension:csv`` — exclusion.
* ``bash OR zsh`` — either (``OR`` in capitals between two terms; lower-case ``or`` is a word).
* ``modified:>2024-01-01``, ``modified:2024-03``, ``modified:2023..2024-06``, ``size:>1MB``, ``size:<=10KB``
  — ranges (:func:`range_of`): a date (a year, a month or a day, UTC) or a size (bytes, KB, MB, GB, TB
  in powers of 1,024), after ``>``, ``>=``, ``<``, ``<=``, alone (within that day, month or year; that
  size exactly), or ``A..B`` (both included).
* ``mimetype:text/*`` ``extension:pdf`` ``path:/srv/docs/lab`` ``url:file:///srv`` — filters
  (``*`` is the only wildcard, in MIME types; a path or URL is a prefix);
  ``project:apollo`` filters by an auxiliary field (the names the configuration defines are passed
  in): an exact value, or for a tokenized field every word of it. Any other ``name:value`` is text.

Words are what :func:`words` finds: runs of letters and digits, lower-cased, accents removed. So
punctuation inside a term splits it into words that must stand next to each other, exactly like a
phrase: ``annual_numbat_summary``, ``Quokkareport.final`` and ``bash|zsh`` are phrases. There are
no stop words (``the`` is a word like any other) and words match by stem (``running`` finds
``runs``). A term with no words (``&``, ``-``, ``*``) is left out.

``groups`` is who is searching: a document with groups is found only by a searcher holding one of
them, and with no groups a search finds public documents only (regain showed everything for an
empty list). Every index target applies it to the whole query — text, filters, exclusions,
snippets — so nothing about a document outside them comes back.

Each target translates the tree itself (``sqlite._fts_match``, ``opensearch._text_query``); no user
syntax ever reaches a target's own query parser.
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

FILTER_FIELDS = ("mimetype", "extension", "path", "url")
#: Filters by a range of values (:func:`range_of`): the modification time and the size in bytes.
RANGE_FIELDS = ("modified", "size")
#: The stored field each range filter compares, the same name in every target.
RANGE_COLUMNS = {"modified": "mtime_ns", "size": "size"}
OR = "OR"
#: Added to the score of a document whose name equals the query (:func:`name_keys`): more than any
#: text score on either target, so an exact name ranks above every partial match.
EXACT_NAME_BOOST = 1000.0
#: The bounds of one query (docs/search.md, "Limits"): each prefix term expands to every word it
#: starts, and the cost grows with terms times prefixes (100 ``x*`` took 16 s on 2,000 documents).
#: File names (before their first dot, any case) of change logs and release notes, and the factor their score
#: is multiplied by: they mention every command and file of their project, and outranked the manual pages
#: and documents they describe (``grep`` listed NEWS.gz and changelog.gz first).
CHANGE_LOG_NAMES = ("changelog", "changes", "news", "history", "releasenotes", "release-notes", "release_notes")
CHANGE_LOG_WEIGHT = 0.2
#: The weight of page furniture (menus, sidebars, footers: IndexDoc.furniture) against the text's 1, in both
#: targets: a page whose sidebar holds a word is found, below a page whose text holds it. BM25 favours short
#: documents: at 0.2, os.path.html (its sidebar names fileinput) outranked os.html, 12 times longer, whose text
#: mentions fileinput once; at 0.05 it ranks below it (tests/test_opensearch.py, tests/test_page_furniture.py).
FURNITURE_WEIGHT = 0.05
_COMPRESSED = re.compile(r"\.(gz|bz2|xz|zst|lz|lzma|z)$", re.IGNORECASE)
_MAN_SECTION = re.compile(r"\.[1-9n][a-z]*$")  # grep.1, printf.3posix, sources.list.5
MAX_QUERY_CHARS = 1000
MAX_TERMS = 32  # terms, excluded terms, OR alternatives and filters
MAX_PREFIX_TERMS = 8
_TRAILING = re.compile(r"[\W_]+$")  # what follows a term's last word
_TOKEN = re.compile(r'(-?)(?:([A-Za-z_]+):)?(?:"([^"]*)"?|(\S+))')
_WORD = re.compile(r"[^\W_]+")
_TITLE_PARTS = re.compile(r"\s+[—–|·-]\s+|\s*:\s+")  # "subprocess — Python 3.11 documentation"


class QueryError(ValueError):
    pass


def words(text: str) -> list[str]:
    """The words of ``text`` as both targets index them: letters and digits, lower case, no accents."""
    folded = text.lower()
    if not folded.isascii():  # ASCII has no accents to take off: the common case skips the loop over characters
        folded = "".join(c for c in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(c))
    return _WORD.findall(folded)


def name_keys(filename: str, extension: str, title: str) -> list[str]:
    """What a query must equal, word for word, to match a document's name exactly: the file name whole
    (``sources.list``) and without its extension, without a compression suffix (``NEWS.gz``), a manual page's
    name without its section (``grep.1.gz`` is ``grep``), the title, and each part of a title joined by a
    dash, bar or colon."""
    stem = filename[: -len(extension) - 1] if extension and filename.lower().endswith("." + extension) else filename
    plain = _COMPRESSED.sub("", filename)
    keys = [filename, stem, plain, _MAN_SECTION.sub("", plain), title, *_TITLE_PARTS.split(title)]
    return sorted({" ".join(words(k)) for k in keys} - {""})


def is_change_log(filename: str) -> bool:
    """A change log or release notes (``changelog.Debian.gz``, ``NEWS``, ``CHANGES.md``, ``HISTORY.rst``):
    ranked below what it describes (CHANGE_LOG_WEIGHT), since it names everything its project holds."""
    stem = filename.lower().split(".", 1)[0]
    return stem in CHANGE_LOG_NAMES


@dataclass(frozen=True)
class Term:
    """One search term: a word (several if punctuation joins them, then matched as a phrase) or a
    quoted phrase; ``prefix`` makes its last word a prefix."""

    text: str
    prefix: bool = False

    @property
    def words(self) -> list[str]:
        return words(self.text)


@dataclass
class Query:
    clauses: list[tuple[Term, ...]] = field(default_factory=list)  # all required; one clause = any of its terms
    excluded: list[Term] = field(default_factory=list)
    filters: list[tuple[str, str, bool]] = field(default_factory=list)  # (field, value, negated)
    groups: tuple[str, ...] = ()  # the searcher's groups; () = public documents only
    #: How the text is matched (semantic.MODES): by its words, by what it means (its ``vector``, or the vectors of
    #: the document ``like`` names: "more like this"), or both fused. Targets see keyword, semantic or hybrid.
    mode: str = "keyword"
    vector: Any = None  # the query's embedding (a unit-length float32 numpy row), for semantic and hybrid
    like: str = ""  # a document id: documents like it (its own vectors), the document itself left out
    text: str = ""  # the query as typed (auto mode reads it: is it a question?)

    @property
    def has_text(self) -> bool:
        return bool(self.clauses)

    @property
    def name_key(self) -> str:
        """The query's words, to compare with :func:`name_keys`; "" when it has alternatives or prefixes
        (nothing to be equal to)."""
        if any(len(clause) > 1 or clause[0].prefix for clause in self.clauses):
            return ""
        return " ".join(w for clause in self.clauses for w in clause[0].words)


def _prefix_text(value: str) -> str:
    """What a prefix term starts with: its text up to the end of its last word (``ab:*`` is ``ab*``), so that
    both indexes read it alike (FTS5 made ``ab:`` a prefix of ``ab``, OpenSearch a plain word)."""
    return _TRAILING.sub("", value.rstrip("*"))


def parse_query(text: str, fields=(), groups=()) -> Query:
    """``fields``: the searchable auxiliary field names; ``groups``: the searcher's groups."""
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is too long ({len(text):,} characters; at most {MAX_QUERY_CHARS:,})")
    query = Query(groups=tuple(groups))
    known = {*FILTER_FIELDS, *RANGE_FIELDS, *fields}
    join_next = False  # the last token was OR
    for match in _TOKEN.finditer(text):
        negated, name, phrase, word = match.group(1) == "-", match.group(2), match.group(3), match.group(4)
        value = phrase if phrase is not None else word
        if name is not None and name.lower() in known:
            if not value:
                raise QueryError(f"{name}: needs a value")
            if name.lower() in RANGE_FIELDS:
                range_of(name.lower(), value)  # a value that is no date or size is refused here, on both targets
            query.filters.append((name.lower(), value, negated))
            join_next = False
            continue
        if name is not None:  # not a field we know: search the words as written
            value = f"{name}:{value}"
        if word == OR and not negated and name is None:
            join_next = bool(query.clauses)
            continue
        prefix = phrase is None and value.endswith("*")
        term = Term(_prefix_text(value) if prefix else value, prefix)
        if not term.words:  # "&", "-", "*": nothing the index could match
            continue
        if negated:
            query.excluded.append(term)
        elif join_next:
            query.clauses[-1] = (*query.clauses[-1], term)
        else:
            query.clauses.append((term,))
        join_next = False
    if not (query.has_text or query.filters):
        raise QueryError("the query has no words or filters to search for")
    _check_bounds(query)
    return query


def asking(text: str, fields=(), groups=(), like: str = "", mode: str = "auto") -> Query:
    """A search's query in ``mode`` (semantic.MODES: settled by semantic.search_page): ``text`` parsed, or for
    "more like this" (``like``: a document id) nothing but the document."""
    if like and not text.strip():
        return Query(groups=tuple(groups), like=like, mode=mode)
    query = parse_query(text, fields, groups)
    query.like, query.mode, query.text = like, mode, text
    return query


def _check_bounds(query: Query) -> None:
    """Refuse a query whose terms or prefixes exceed the bounds that keep one search cheap."""
    terms = [*(term for clause in query.clauses for term in clause), *query.excluded]
    if len(terms) + len(query.filters) > MAX_TERMS:
        raise QueryError(f"the query has too many terms ({len(terms) + len(query.filters)}; at most {MAX_TERMS}, "
                         f"counting excluded terms, OR alternatives and filters)")
    prefixes = sum(term.prefix for term in terms)
    if prefixes > MAX_PREFIX_TERMS:
        raise QueryError(f"the query has too many prefix terms ({prefixes} words ending in *; "
                         f"at most {MAX_PREFIX_TERMS})")


# -- ranges: modified: and size: -------------------------------------------------------------------------
_COMPARISON = re.compile(r"(>=|<=|>|<)?(.+)")
_DATE = re.compile(r"(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_HELP = {"modified": "a date as 2024, 2024-03 or 2024-03-05 (UTC)",
         "size": "a size as 2000, 10KB, 1.5MB or 2GB (powers of 1,024)"}


def range_of(name: str, value: str) -> tuple[int | None, int | None]:
    """The values a range filter admits, as [low, high) — ``None`` for no bound: nanoseconds since the epoch
    for ``modified`` (the index's ``mtime_ns``), bytes for ``size``. ``>D`` starts after the period ``D``
    (a day, month or year) ends, ``>=D`` when it begins, ``<D`` ends when it begins, ``<=D`` when it ends;
    ``D`` alone is the period; ``A..B`` runs from the start of ``A`` to the end of ``B``."""
    span = _date_span if name == "modified" else _size_span
    if ".." in value:
        first, _, last = value.partition("..")
        return span(name, first)[0], span(name, last)[1]
    comparison, operand = _COMPARISON.fullmatch(value.strip()).groups()
    low, high = span(name, operand)
    return {">": (high, None), ">=": (low, None), "<": (None, low), "<=": (None, high)}.get(comparison, (low, high))


def _date_span(name: str, text: str) -> tuple[int, int]:
    """[start, end) of a year, month or day in UTC, in nanoseconds."""
    match = _DATE.fullmatch(text.strip())
    try:
        year, month, day = int(match[1]), int(match[2] or 1), int(match[3] or 1)
        start = datetime(year, month, day, tzinfo=UTC)
    except (TypeError, ValueError):
        raise QueryError(f"{name}: {text!r} is not {_HELP[name]}") from None
    if match[3]:
        end_year, end_month, end_day = year, month, day + 1
        if end_day > calendar.monthrange(year, month)[1]:
            end_year, end_month, end_day = year + (month == 12), month % 12 + 1, 1
    elif match[2]:
        end_year, end_month, end_day = year + (month == 12), month % 12 + 1, 1
    else:
        end_year, end_month, end_day = year + 1, 1, 1
    end = datetime(end_year, end_month, end_day, tzinfo=UTC) if end_year <= 9999 else None
    return _ns(start), _ns(end) if end else 2**63 - 1


def _ns(moment: datetime) -> int:
    return int(calendar.timegm(moment.utctimetuple())) * 1_000_000_000


def _size_span(name: str, text: str) -> tuple[int, int]:
    """[size, size + 1) in bytes."""
    match = _SIZE.fullmatch(text.strip())
    if not match:
        raise QueryError(f"{name}: {text!r} is not {_HELP[name]}")
    number = int(float(match[1]) * _UNITS[(match[2] or "").lower()[:1]])
    return number, number + 1
