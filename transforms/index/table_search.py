"""Search by meaning on the Delta table (issue 31): the table has no text index, but its ``vectors`` column holds
every passage's embedding, so a semantic search is an exact cosine over them in numpy, read in batches of the
columns it needs only; "more like this" compares with the mean of a document's own vectors; a hybrid search fuses
that ranking with a keyword ranking the table can afford without an index (:func:`keyword_ranking`: the query's
telling words, each required as a whole word of the title or text, BM25).

Access, as the other targets enforce it (``sqlite._visible``): a row is read only if the searcher may see it
(public, or sharing a group, and not denied to any group the searcher holds or to everyone); the vectors and the
text of the others are never compared or counted, so scores, hits and their order are those of a table holding
the visible rows alone (tests/test_semantic.py).

::

    pass 1  fragments → batches of (id, groups, denied, content_hash, vectors[, title, content]) → visible rows
            → passage scores (a hybrid search: also each telling word's count per row and the rows' lengths)
    rank    semantic.best_documents (+ semantic.fuse with the keyword ranking); copies of one content: one hit
    pass 2  the hits' display columns (url, title, content for the passage, …) by their rows: ``take``
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from beamtrawl.transforms.index import semantic
from beamtrawl.transforms.index.base import MAX_LOCATIONS, Hit, render_snippet
from beamtrawl.transforms.index.query import Query, QueryError
from beamtrawl.transforms.records import EVERYONE

#: Rows per batch read: bounds the memory of one batch's vectors (a document of max_passages, 200, passages of 256
#: float32 values holds 200 KB of them: 256 such rows, 52 MB).
BATCH_ROWS = 256
#: Characters of a passage a hit shows (as the embedded index's PASSAGE_CHARS).
PASSAGE_CHARS = 600
_HIT_COLUMNS = ["id", "url", "title", "content", "passages", "mimetype", "size", "last_modified"]
_BM25_K1, _BM25_B, _TITLE_WEIGHT = 1.2, 0.75, 10.0  # the embedded index's constants and title weight


def search(dataset: ds.Dataset, query: Query, limit: int) -> list[Hit]:
    """The best ``limit`` hits of a semantic or hybrid ``query`` (with its ``vector``, or ``like``: a document id)
    among the rows of ``dataset`` the searcher may see."""
    if query.filters or query.excluded:
        raise QueryError("a search of the Delta table takes words only (no filters or exclusions): read the table "
                         "with DuckDB or Polars to filter it (docs/table.md)")
    fragments = list(dataset.get_fragments())
    vector, own = query.vector, None
    if query.like:
        own, vector = _own_vector(fragments, query)
        if vector is None:
            return []
    telling = _keyword_words(query)  # none (alternatives and prefixes only): the vector ranking alone
    scored = _Scored(query.mode == semantic.HYBRID and bool(telling), telling)
    for number, fragment in enumerate(fragments):
        scored.read(number, fragment, query.groups, vector, own)
    ranking = scored.ranking()
    return _hits(fragments, ranking, scored, limit)


def visible(groups_column, denied_column, groups: Sequence[str]):
    """A boolean per row: may a searcher holding ``groups`` see it (public or a shared group, and not denied)?"""
    import numpy as np

    held, denying = set(groups), {*groups, EVERYONE}
    return np.fromiter(((not allowed or not held.isdisjoint(allowed)) and denying.isdisjoint(denied or ())
                        for allowed, denied in zip(groups_column.to_pylist(), denied_column.to_pylist(), strict=True)),
                       dtype=bool, count=len(groups_column))


def _matrix(vectors, width: int | None = None) -> tuple:
    """(float32 passages × ``width``, the number of passages of each row) of a ``vectors`` column (list of lists);
    a row with a vector of another width (another model's, or damaged) counts none. ``width`` None: the first
    vector's."""
    import numpy as np

    counts = pc.fill_null(pc.list_value_length(vectors), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    inner = pc.list_flatten(vectors)
    widths = pc.fill_null(pc.list_value_length(inner), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    width = int(widths[0]) if width is None and len(widths) else width or 0
    fitting = np.bincount(np.repeat(np.arange(len(counts)), counts), weights=widths == width, minlength=len(counts))
    good = (counts > 0) & (fitting == counts)
    if not width or not good.any():
        return np.zeros((0, width), np.float32), np.zeros_like(counts)
    values = pc.list_flatten(inner).to_numpy(zero_copy_only=False).astype(np.float32)
    keep = np.repeat(np.repeat(good, counts), widths)
    return values[keep].reshape(-1, width), np.where(good, counts, 0)


def _own_vector(fragments, query: Query):
    """("more like this") (the document's place, the unit mean of its vectors) if the searcher may see it."""
    for number, fragment in enumerate(fragments):
        table = fragment.to_table(columns=["id"])
        at = pc.index(table["id"], query.like).as_py()
        if at < 0:
            continue
        row = fragment.take([at], columns=["groups", "denied", "vectors"])
        if not visible(row["groups"], row["denied"], query.groups)[0]:
            return None, None
        matrix, _ = _matrix(row["vectors"].combine_chunks())
        return (number, at), semantic.unit_mean(matrix)
    return None, None


class _Scored:
    """What pass 1 keeps of the visible rows: each scored passage (its score, the row it belongs to, its number in
    the row) and, for a hybrid search, each telling word's count in each row and the rows' lengths."""

    def __init__(self, keywords: bool, telling: list[str]):
        self.keywords, self.telling = keywords, telling
        self.scores, self.rows, self.passages = [], [], []
        self.places: list[tuple[int, int]] = []  # a visible row's (fragment, row in it); its index is its key
        self.copies: list[str] = []
        self.counts: list = []  # per batch: words × rows
        self.lengths: list = []

    def read(self, number: int, fragment, groups, vector, own) -> None:
        import numpy as np

        columns = ["id", "groups", "denied", "content_hash", "vectors", *(["title", "content"] if self.keywords
                                                                          else [])]
        offset = 0
        for batch in fragment.to_batches(columns=columns, batch_size=BATCH_ROWS):
            shown = np.flatnonzero(visible(batch["groups"], batch["denied"], groups))
            if own is not None and own[0] == number:
                shown = shown[shown + offset != own[1]]
            if len(shown):
                self._keep(batch.take(pa.array(shown)), number, shown + offset, vector)
            offset += batch.num_rows

    def _keep(self, batch, number: int, rows, vector) -> None:
        import numpy as np

        first = len(self.places)
        self.places.extend((number, int(row)) for row in rows)
        ids, hashes = batch["id"].to_pylist(), batch["content_hash"].to_pylist()
        self.copies.extend(h or i for h, i in zip(hashes, ids, strict=True))
        if vector is not None:
            matrix, counts = _matrix(batch["vectors"], len(vector))
            if len(matrix):
                self.scores.append(matrix @ np.asarray(vector, dtype=np.float32))
                self.rows.append(np.repeat(np.arange(first, first + len(counts)), counts))
                self.passages.append(np.concatenate([np.arange(c) for c in counts]) if len(counts) else
                                     np.zeros(0, np.int64))
        if self.keywords:
            accents = not all(word.isascii() for word in self.telling)
            title, content = _folded(batch["title"], accents), _folded(batch["content"], accents)
            self.counts.append(np.array([
                _TITLE_WEIGHT * _count(title, word) + _count(content, word) for word in self.telling]).reshape(
                len(self.telling), -1))
            self.lengths.append(_TITLE_WEIGHT * _count(title, None) + _count(content, None))

    def ranking(self) -> list[tuple[int, float, int]]:
        """(key, score, best passage or -1), best first, at most semantic.DEPTH documents."""
        import numpy as np

        near = []
        if self.scores:
            scores, rows = np.concatenate(self.scores), np.concatenate(self.rows)
            self.passage_of = np.concatenate(self.passages)
            near = semantic.best_documents(scores, rows, semantic.DEPTH)
        best = {key: row for key, _, row in near}
        if not self.keywords:
            return [(key, score, best[key]) for key, score, _ in near]
        fused = semantic.fuse(self._keyword_ranking(), [key for key, _, _ in near])
        return [(key, round(score, 6), best.get(key, -1)) for key, score in fused]

    def _keyword_ranking(self) -> list[int]:
        """The visible rows holding every telling word, best first by BM25 with the visible rows' statistics."""
        import numpy as np

        if not self.counts or not self.telling:
            return []
        counts, lengths = np.concatenate(self.counts, axis=1), np.concatenate(self.lengths)
        documents, average = len(lengths), max(float(lengths.mean()), 1e-9)
        holding = (counts > 0).sum(axis=1)
        telling = np.flatnonzero([not semantic.is_common(int(n), documents) for n in holding])
        if not len(telling):
            return []
        counts, holding = counts[telling], holding[telling]
        idf = np.log((documents - holding + 0.5) / (holding + 0.5))
        idf = np.where(idf > 0, idf, 1e-6)
        norm = _BM25_K1 * (1 - _BM25_B + _BM25_B * lengths / average)
        score = (idf[:, None] * counts * (_BM25_K1 + 1) / (counts + norm)).sum(axis=0)
        matched = np.flatnonzero((counts > 0).all(axis=0))
        order = matched[np.lexsort((matched, -score[matched]))]
        return [int(key) for key in order[:semantic.DEPTH]]


def _folded(column, accents: bool):
    """A text column as query.words reads text: lower case, and with ``accents`` (a query word that is not ASCII)
    accents removed from the rows that are not ASCII (a null: empty). Without, an accented spelling of an ASCII
    word is not that word: Unicode normalisation was most of a hybrid search's time (2 s of 3 on 317 pages)."""
    lower = pc.utf8_lower(pc.fill_null(column, ""))
    other = pc.invert(pc.string_is_ascii(lower))
    if not accents or not pc.any(other).as_py():
        return lower
    decomposed = pc.utf8_normalize(pc.filter(lower, other), "NFKD")
    return pc.replace_with_mask(lower, other, pc.replace_substring_regex(decomposed, r"\p{Mn}+", ""))


def _count(column, word: str | None):
    """Occurrences of ``word`` as a whole word in each row of a folded text column (None: its length in
    characters, which BM25's length normalisation reads as a ratio to the average only)."""
    if word is None:
        return pc.utf8_length(column).to_numpy(zero_copy_only=False).astype(float)
    pattern = rf"(?:^|[^\pL\pN]){_escaped(word)}(?:$|[^\pL\pN])"
    return pc.count_substring_regex(column, pattern).to_numpy(zero_copy_only=False).astype(float)


def _escaped(word: str) -> str:
    """A word (letters and digits only: query.words) for an RE2 pattern."""
    return "".join(c if c.isalnum() else f"\\{c}" for c in word)


def _keyword_words(query: Query) -> list[str]:
    """The words a hybrid search may require by keyword: those of the query's terms that are neither alternatives
    nor prefixes (a phrase's words each, in any order: the table has no positions), the common ones left out once
    counted (semantic.is_common)."""
    found = []
    for clause in query.clauses:
        if len(clause) == 1 and not clause[0].prefix:
            found.extend(w for w in clause[0].words if w not in found)
    return found


def _hits(fragments, ranking, scored: _Scored, limit: int) -> list[Hit]:
    """The best ``limit`` contents of ``ranking`` as hits (copies: the best of them, listing the others' URLs),
    their columns read by row."""
    chosen, others = [], {}
    for key, score, passage in ranking:
        copy = scored.copies[key]
        if copy in others:
            others[copy].append(key)
        elif len(chosen) < limit:
            others[copy] = []
            chosen.append((key, score, passage))
    rows = _rows_of(fragments, [key for key, _, _ in chosen], scored.places)
    urls = _rows_of(fragments, [k for keys in others.values() for k in keys], scored.places, ["url"])
    hits = []
    for key, score, passage in chosen:
        row = rows[key]
        number = int(scored.passage_of[passage]) if passage >= 0 else -1
        plain, marked = render_snippet(_passage(row, number))
        located = sorted(urls[k]["url"] for k in others[scored.copies[key]])[:MAX_LOCATIONS]
        modified = row["last_modified"]
        hits.append(Hit(url=row["url"], title=row["title"] or "", snippet=plain, snippet_html=marked,
                        score=round(float(score), 4), mimetype=row["mimetype"] or "", size=row["size"] or 0,
                        last_modified=modified.isoformat(timespec="milliseconds") if modified else "", id=row["id"],
                        locations=located))
    return hits


def _rows_of(fragments, keys: list[int], places, columns=_HIT_COLUMNS) -> dict[int, dict]:
    """key → its row's ``columns``, read with one ``take`` per fragment."""
    wanted: dict[int, list[int]] = {}
    for key in keys:
        wanted.setdefault(places[key][0], []).append(key)
    found = {}
    for number, held in wanted.items():
        table = fragments[number].take([places[key][1] for key in held], columns=columns)
        found.update(zip(held, table.to_pylist(), strict=True))
    return found


def _passage(row: dict, number: int) -> str:
    """Passage ``number`` of a row's text, cut at PASSAGE_CHARS (else the text's beginning)."""
    content, spans = row["content"] or "", row["passages"] or []
    if 0 <= number and 2 * number + 1 < len(spans) and spans[2 * number] < spans[2 * number + 1]:
        start, stop = spans[2 * number], spans[2 * number + 1]
        return content[start:min(stop, start + PASSAGE_CHARS)] + ("…" if stop > start + PASSAGE_CHARS else "")
    return content[:200]
