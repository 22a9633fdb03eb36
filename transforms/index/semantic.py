"""Search by meaning: which mode a search runs in, the ranking of passages by their vectors, and the fusion of
a keyword and a vector ranking (reciprocal rank fusion). Targets call :func:`nearest` (or, with their own
scores, :func:`best_documents`) and :func:`fuse`; the
commands call :func:`search_page`, which settles the mode and embeds the query.

Modes: ``keyword`` (every word required, BM25: docs/search.md), ``semantic`` (the documents whose best passage is
nearest the query's meaning), ``hybrid`` (both rankings fused), and ``auto``, the default: hybrid for a query
that reads as a question, or whose keywords find nothing; keyword otherwise, so module names, file names and
phrases rank exactly as before.

A target without pages (the Delta table: :mod:`.table_search`) is searched through :func:`unpaged_hits`.

Access: a target ranks only the vectors of the documents its searcher may see (the partitions of
``sqlite_parts``, the table's visible rows), and a vector's score — its cosine with the query — depends on nothing but the two vectors, so
hits, scores, counts and facets of a semantic or hybrid search are those of an index holding the visible
documents only (tests/test_semantic.py repeats issue 15's score-leak tests).
"""

from __future__ import annotations

import dataclasses
import re

from beamtrawl.transforms.index.query import Query, QueryError

AUTO, KEYWORD, SEMANTIC, HYBRID = "auto", "keyword", "semantic", "hybrid"
MODES = (AUTO, KEYWORD, SEMANTIC, HYBRID)
#: Documents each ranking contributes to a semantic or hybrid search (its hits, total and facets are among them).
DEPTH = 100
#: Reciprocal rank fusion (Cormack et al. 2009): a document's fused score is the sum over rankings of
#: weight / (RRF_K + its rank). Measured on bench/semantic_bench.py's 65 questions (MRR@10; semantic alone 0.80,
#: keyword alone 0.52): the usual K = 60 with equal weights gave 0.70, below semantic alone, since keywords that
#: every word must match rank questions poorly; K = 10 with the keyword ranking at 0.3 gave 0.79.
RRF_K = 10
KEYWORD_WEIGHT = 0.3
#: The keyword half of a hybrid search leaves out the words that more than this share of the documents its
#: searcher may see hold ("how", "the", "file"): they tell nothing, every word being required, and their long
#: posting lists were most of a hybrid question's time at 100,000 documents (bench/semantic_bench.py --scale).
COMMON_SHARE = 0.1
_QUESTION_WORDS = frozenset(
    ["how", "what", "why", "when", "where", "which", "who", "whom", "whose", "can", "could", "should", "would", "does", "do", "did", "is", "are", "was", "were", "will", "shall", "may", "might"])
_WORD = re.compile(r"[^\W_]+")


def is_question(text: str) -> bool:
    """Does the query read as a question or a sentence rather than keywords: a question mark, a question word
    first, or six words or more without any operator or filter?"""
    if any(mark in text for mark in ('"', ":", " OR ", "*")) or re.search(r"(^|\s)-\S", text):
        return False
    found = _WORD.findall(text.lower())
    return text.rstrip().endswith("?") or bool(found and found[0] in _QUESTION_WORDS and len(found) > 2) \
        or len(found) >= 6


def settled(query: Query, embedder, keyword_total=None) -> Query | None:
    """``query`` in the mode it runs in (its ``mode`` as asked), with its vector when it needs one; None: run it as
    keywords first and ask again with the number they found (``auto``, a keyword-like query). ``embedder``: texts
    → vectors, or None when the configuration has no model."""
    mode, text = query.mode, query.text
    if mode not in MODES:
        raise QueryError(f"the mode is one of {', '.join(MODES)}, got {mode!r}")
    if query.like:  # the document's own vectors, from the index: no model needed, its words are not used
        return dataclasses.replace(query, mode=SEMANTIC)
    if mode == AUTO:
        if embedder is None or not query.has_text:
            return dataclasses.replace(query, mode=KEYWORD)
        if not is_question(text) and keyword_total is None:
            return None
        mode = HYBRID if is_question(text) or keyword_total == 0 else KEYWORD
    if mode == KEYWORD:
        return dataclasses.replace(query, mode=KEYWORD)
    if embedder is None:
        raise QueryError("the configuration embeds nothing (no embeddings section), so there is nothing to search "
                         "by meaning; use --mode keyword or add embeddings: {model: wordllama} and crawl again")
    if not query.has_text:
        raise QueryError(f"a {mode} search needs words to look for")
    words = " ".join(term.text for clause in query.clauses for term in clause)
    return dataclasses.replace(query, mode=mode, vector=embedder([words])[0])


def search_page(target, query: Query, embedder, limit: int, **page):
    """A page of hits (IndexTarget.search_page's ``page`` arguments: offset, order, facet_size) in the query's mode
    (auto: settled here, once keywords found nothing if need be; keyword on a target that cannot search by
    meaning)."""
    if query.mode == AUTO and not searches_meaning(target):
        query = dataclasses.replace(query, mode=KEYWORD)
    run = settled(query, embedder)
    if run is None:
        found = target.search_page(dataclasses.replace(query, mode=KEYWORD), limit, **page)
        if found.total:
            return found
        run = settled(query, embedder, keyword_total=0)
    refuse_meaning(target, run)
    return target.search_page(run, limit, **page)


def unpaged_hits(target, query: Query, embedder, limit: int) -> list:
    """The best ``limit`` hits of a target without pages (the Delta table: no totals or facets), where ``auto`` is
    hybrid for a question, else semantic, when there is a model and the target searches by meaning (it has no
    keyword search to fall back on), else keyword."""
    if query.mode == AUTO:
        meaning = embedder is not None and searches_meaning(target) and query.has_text
        query = dataclasses.replace(query, mode=(HYBRID if is_question(query.text) else SEMANTIC) if meaning else KEYWORD)
    run = settled(query, embedder)
    refuse_meaning(target, run)
    return target.search(run, limit)


def searches_meaning(target) -> bool:
    return bool(getattr(target, "semantic", False))


def refuse_meaning(target, query: Query) -> None:
    """One line for a semantic or hybrid search (or more like this) on a target that cannot run one."""
    if query.mode != KEYWORD and not searches_meaning(target):
        raise QueryError(f"this index kind ({type(target).__name__}) cannot search by meaning yet; use --mode keyword")


def nearest(vectors, row_docs, query_vector, depth: int = DEPTH, allowed=None) -> list[tuple[int, float, int]]:
    """(document, score, row) of the ``depth`` documents whose best passage is nearest ``query_vector``, best
    first: ``vectors`` holds one unit-length row per passage, ``row_docs`` the document of each row; ``allowed``,
    if given, a boolean per row (documents a query's filters admit)."""
    import numpy as np

    scores = np.asarray(vectors, dtype=np.float32) @ np.asarray(query_vector, dtype=np.float32) \
        if len(row_docs) else np.zeros(0, np.float32)
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    return best_documents(scores, np.asarray(row_docs), depth)


def best_documents(scores, row_docs, depth: int = DEPTH) -> list[tuple[int, float, int]]:
    """(document, score, row) of the ``depth`` documents with the best passage scores (a document scores its best
    passage's; -inf: left out), best first, ties by document. Sorts only the best 4 × ``depth`` passages (more
    while they hold fewer than ``depth`` documents), not every passage compared."""
    import numpy as np

    count = int(np.count_nonzero(np.isfinite(scores)))
    wanted = min(count, 4 * depth)
    while True:
        top = np.argpartition(-scores, wanted - 1)[:wanted] if 0 < wanted < len(scores) else \
            np.flatnonzero(np.isfinite(scores))
        top = top[np.isfinite(scores[top])]
        top = top[np.lexsort((row_docs[top], -scores[top]))]
        docs, first = np.unique(row_docs[top], return_index=True)
        if len(docs) >= depth or wanted >= count:
            break
        wanted = min(count, wanted * 4)
    best = top[np.sort(first)][:depth]
    return [(int(row_docs[row]), round(float(scores[row]), 6), int(row)) for row in best]


def is_common(holding: int, documents: int) -> bool:
    """Is a word that ``holding`` of the searcher's ``documents`` hold too common for a hybrid search's keywords?"""
    return holding > COMMON_SHARE * documents


def unit_mean(rows):
    """The mean of a document's passage vectors (float32 rows), unit length ("more like this"); None: none."""
    import numpy as np

    if not len(rows):
        return None
    mean = np.asarray(rows, dtype=np.float32).mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if np.isfinite(norm) and norm else None


def fuse(keyword: list, vector: list, named: frozenset = frozenset()) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of a keyword and a vector ranking (document keys, best first) → (key, score), best
    first (ties: the order of first appearance, keywords first). Documents ``named`` as the query (query.name_keys)
    come first, as a keyword search ranks them (docs/search.md)."""
    scores: dict = {}
    for ranking, weight in ((keyword, KEYWORD_WEIGHT), (vector, 1.0)):
        for rank, key in enumerate(ranking, 1):
            scores[key] = scores.get(key, 0.0) + weight / (RRF_K + rank)
    for key in named & scores.keys():
        scores[key] += 1.0
    return sorted(scores.items(), key=lambda item: -item[1])
