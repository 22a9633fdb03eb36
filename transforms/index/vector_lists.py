"""An inverted-file (IVF) index of passage vectors, in numpy: the passages of one access partition clustered
around ``lists`` centroids (spherical k-means), so that a search compares the query with the centroids and then
with the passages of the PROBES nearest lists only, not with every passage (issue 31: an exact product over
1,000,000 passages took 50–85 ms, a hybrid search 6× a keyword one).

Why numpy and not faiss or hnswlib: the lists live in the SQLite file beside the text (one file, read a list at a
time, so a command-line search reads about PROBES lists, not every vector), they are built from one partition's
vectors only (so nothing about them depends on a document another searcher may see), and the whole structure is
forty lines. Scores stay exact cosines; only which passages are compared is approximate (recall@10 against the
exact search: bench/semantic_bench.py --scale).
"""

from __future__ import annotations

#: Passages a partition needs before it gets lists: below it an exact product costs a few milliseconds.
MIN_ROWS = 50_000
#: Lists probed per search, and k-means rounds and training rows per list when building.
PROBES = 40
ROUNDS = 8
TRAINING_PER_LIST = 40
_CHUNK = 16_384  # rows per product while assigning: bounds the memory of the scores to CHUNK × lists floats


def list_count(rows: int) -> int:
    """About √rows lists of about √rows passages: probing PROBES of them reads PROBES/√rows of the passages."""
    return max(16, min(4096, round(rows ** 0.5)))


def train(matrix, lists: int, seed: int = 0):
    """Unit-length centroids of ``lists`` clusters of the rows of ``matrix`` (unit-length float32 rows), from
    a sample of TRAINING_PER_LIST rows per list drawn with a fixed seed: the same rows give the same centroids."""
    import numpy as np

    rng = np.random.default_rng(seed)
    sample = matrix if len(matrix) <= lists * TRAINING_PER_LIST else \
        matrix[np.sort(rng.choice(len(matrix), lists * TRAINING_PER_LIST, replace=False))]
    centroids = sample[np.sort(rng.choice(len(sample), lists, replace=False))].copy()
    for _ in range(ROUNDS):
        nearest = assign(sample, centroids)
        sums = np.zeros_like(centroids)
        np.add.at(sums, nearest, sample)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        filled = norms[:, 0] > 0  # an empty cluster keeps its centroid
        centroids[filled] = sums[filled] / norms[filled]
    return centroids


def assign(matrix, centroids):
    """The list of each row: its nearest centroid (largest dot product)."""
    import numpy as np

    out = np.empty(len(matrix), dtype=np.int64)
    for start in range(0, len(matrix), _CHUNK):
        out[start:start + _CHUNK] = np.argmax(matrix[start:start + _CHUNK] @ centroids.T, axis=1)
    return out


def probed(centroids, query_vector, probes: int | None = None) -> list[int]:
    """The ``probes`` (PROBES, as the module holds it when called) lists whose centroids are nearest the query, in list
    order (SQLite reads them in one scan)."""
    import numpy as np

    probes = PROBES if probes is None else probes
    closeness = centroids @ query_vector
    if probes >= len(closeness):
        return list(range(len(closeness)))
    return sorted(int(n) for n in np.argpartition(-closeness, probes - 1)[:probes])
