"""OpenSearch's passage vectors (issue 31): each embedded document keeps its passages' vectors as nested
``knn_vector`` rows (the k-NN plugin's Lucene HNSW engine, cosine), so one k-NN query ranks documents by their
best passage, as the embedded index does; which passage that is, a page's hits find from their stored vectors
(:func:`best_passage`: an inner hit would run the k-NN search again).

* The nested field is named after the model's dimensions (``passage_vectors_256``): a mapping fixes a vector's
  length, and a model of another length then writes a field of its own instead of being refused. It is added
  to a partition index the first time a document with vectors is written there (``field_mapping``).
* The vectors are left out of ``_source``, which keeps them as float16 bytes (``vectors``, base64: a third of
  their JSON) with the passages' spans (``passages``), which export and the moves of ``set_access`` read back
  (:func:`knn_rows` rebuilds the nested rows: an update of a part of ``_source`` would lose them). The node
  keeps the JSON it was sent as the recovery source until its retention lease lets a merge drop it, so the
  values are sent with ROUNDING decimals.
* **Access**: the filter goes *inside* the k-NN query, so the nearest ``k`` are found among the documents the
  searcher may see and the query's filters admit (no post-filter that returns fewer). The query runs over the
  searcher's partition indices only (``OpenSearchIndex._search``), whose graphs hold nothing else. The k-NN
  plugin (2.19) runs a nested query's filter against the nested rows as well as their documents: a negative
  clause (``must_not``: public = no groups) alone would admit every row, so the filter is anchored by a term
  only documents hold (``ANCHOR``).
"""

from __future__ import annotations

import base64

PREFIX = "passage_vectors_"
#: A term every document holds and no nested row does (the filter's anchor; see the module's docstring).
ANCHOR_FIELD, ANCHOR = "record", "document"
METHOD = {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"}
ROUNDING = 4  # decimals of a vector's values as sent (knn_rows)


def field(dimensions: int) -> str:
    return f"{PREFIX}{dimensions}"


def field_mapping(dimensions: int) -> dict:
    """The nested vector field for vectors of ``dimensions`` values."""
    return {"properties": {field(dimensions): {"type": "nested", "properties": {
        "v": {"type": "knn_vector", "dimension": dimensions, "method": METHOD, "doc_values": False}}}}}


def dimensions_of(passages, vectors: bytes) -> int:
    """Values per vector of a document's float16 rows (0: none, or not whole rows)."""
    count = len(passages) // 2
    if not count or not vectors or len(vectors) % (2 * count):
        return 0
    return len(vectors) // (2 * count)


def stored(passages, vectors: bytes, rows: bool = True) -> dict:
    """The ``_source`` keys of a document's vectors: spans and float16 bytes kept, the k-NN rows indexed (if
    ``rows``: an index with k-NN)."""
    source = {"passages": list(passages), "vectors": base64.b64encode(vectors).decode() if vectors else ""}
    return {**source, **knn_rows(source)} if rows else source


def knn_rows(source: dict) -> dict:
    """{the nested field: one row per passage} from a ``_source``'s stored vectors ({} without any)."""
    import numpy as np

    rows = matrix(source)
    if rows is None or not np.isfinite(rows).all():
        return {}
    # four decimals (a cosine moves by about 1e-4, float16 itself keeps three or four digits): the node keeps the
    # JSON it was sent (its recovery source) beside the vectors, and "0.0123" is a third of "0.0123291015625"
    rows = np.round(rows.astype(np.float64), ROUNDING)
    # a row of zeros has no direction (the cosine engine refuses it): a row without a vector keeps the numbering
    return {field(rows.shape[1]): [{"v": row} if any(row) else {} for row in rows.tolist()]}


def source_dimensions(source: dict) -> int:
    """Values per vector of a stored ``_source``'s vectors (0: none)."""
    return dimensions_of(source.get("passages") or [], decoded(source.get("vectors")))


def decoded(value) -> bytes:
    """The float16 bytes of a ``_source``'s ``vectors``."""
    if not value:
        return b""
    try:
        return base64.b64decode(value)
    except (ValueError, TypeError):
        return b""  # a damaged value: the document is found by its words only


def matrix(source: dict):
    """A stored ``_source``'s passage vectors, one float32 row per passage (None without any)."""
    import numpy as np

    raw = decoded(source.get("vectors"))
    dimensions = dimensions_of(source.get("passages") or [], raw)
    return np.frombuffer(raw, dtype=np.float16).reshape(-1, dimensions).astype(np.float32) if dimensions else None


def document_vector(source: dict):
    """The mean of a stored document's passage vectors, unit length ("more like this"); None without any."""
    import numpy as np

    rows = matrix(source)
    if rows is None:
        return None
    mean = rows.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if np.isfinite(norm) and norm else None


def knn_query(vector, k: int, admitted: dict) -> dict:
    """A nested k-NN query for the ``k`` documents whose best passage is nearest ``vector``, among those
    ``admitted`` (a bool query's body). No inner hit: the node would run the k-NN search again for it in its fetch
    phase; :func:`best_passage` finds a hit's passage from its stored vectors instead."""
    path = field(len(vector))
    anchored = {"bool": {**admitted, "filter": [{"term": {ANCHOR_FIELD: ANCHOR}}, *admitted.get("filter", [])]}}
    return {"nested": {"path": path, "score_mode": "max", "ignore_unmapped": True,
                       "query": {"knn": {f"{path}.v": {"vector": [float(x) for x in vector], "k": k,
                                                       "filter": anchored}}}}}


def cosine(score: float) -> float:
    """The cosine of the Lucene engine's score for ``cosinesimil``, (1 + cosine) / 2."""
    return round(2.0 * score - 1.0, 6)


def best_passage(source: dict, vector) -> int | None:
    """The number of a stored document's passage nearest ``vector`` by cosine, as the k-NN query ranked it (rows of
    zeros and damaged ones were not indexed: never chosen); None without one."""
    import numpy as np

    rows = matrix(source)
    if rows is None or rows.shape[1] != len(vector):
        return None
    with np.errstate(all="ignore"):
        scores = rows @ np.asarray(vector, dtype=np.float32) / np.linalg.norm(rows, axis=1)
    scores[~np.isfinite(scores)] = -np.inf
    return int(np.argmax(scores)) if np.isfinite(scores).any() else None
