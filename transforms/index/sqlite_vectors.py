"""The embedded index's passage vectors (issue 31): one row per embedded document in ``vectors``, beside its
text — the spans of its passages and their vectors as float16 BLOBs — keyed by (access partition, rid) so a
semantic search reads the rows of the partitions its searcher may see only, in one range scan each.

Plain BLOBs searched with numpy (:func:`semantic.nearest`) rather than sqlite-vec: the pyenv Python's ``sqlite3``
cannot load extensions, and a brute-force product over every visible passage is exact, so a score never
depends on an approximate structure built over documents the searcher may not see. A reader keeps each
partition's matrix while SQLite's ``data_version`` says nothing was written (``beamtrawl serve``).
"""

from __future__ import annotations

import sqlite3
from array import array
from collections.abc import Sequence

SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors(part INTEGER NOT NULL, rid INTEGER NOT NULL, spans BLOB NOT NULL,
                                   vectors BLOB NOT NULL, PRIMARY KEY(part, rid)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS vectors_rid ON vectors(rid);
"""


def create(db: sqlite3.Connection) -> None:
    for statement in SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)


def write(db: sqlite3.Connection, rid: int, part: int, spans: Sequence[int], vectors: bytes) -> None:
    """A document's passages (none: it has no vectors, and the old ones go)."""
    db.execute("DELETE FROM vectors WHERE rid = ?", (rid,))
    if vectors and spans:
        db.execute("INSERT INTO vectors VALUES (?, ?, ?, ?)", (part, rid, array("i", spans).tobytes(), vectors))


def move(db: sqlite3.Connection, rid: int, part: int) -> None:
    db.execute("UPDATE vectors SET part = ? WHERE rid = ?", (part, rid))


def span(db: sqlite3.Connection, rid: int, passage: int) -> tuple[int, int] | None:
    row = db.execute("SELECT spans FROM vectors WHERE rid = ?", (rid,)).fetchone()
    if row is None:
        return None
    spans = array("i", row[0][:len(row[0]) // 4 * 4])  # a damaged row shows less, never fails the search
    return (spans[2 * passage], spans[2 * passage + 1]) if 2 * passage + 1 < len(spans) else None


class Matrices:
    """Each partition's passage vectors as one float32 matrix, with the document of each row, read once per
    change of the index (``PRAGMA data_version``, and :meth:`forget` after the connection's own writes)."""

    def __init__(self):
        self._held: dict[int, tuple] = {}
        self._version = None

    def forget(self) -> None:
        """After a write through the reading connection itself (its data_version stays the same)."""
        self._held, self._version = {}, None

    def of(self, db: sqlite3.Connection, shown: Sequence[int], dimensions: int):
        """(matrix, row → rid, row → passage number) over the partitions ``shown``, rows of a document together."""
        import numpy as np

        version = db.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version:
            self._held, self._version = {}, version
        key = ("all", *shown)  # the searcher's partitions together, kept too: joining them copies every vector
        if key not in self._held:
            parts = [self._held.get(n) or self._read(db, n, dimensions) for n in shown]
            self._held[key] = (parts[0] if len(parts) == 1 else tuple(np.concatenate([p[i] for p in parts])
                                                                     for i in range(3))) if parts else \
                (np.zeros((0, dimensions), np.float32), np.zeros(0, np.int64), np.zeros(0, np.int64))
        return self._held[key]

    def _read(self, db: sqlite3.Connection, part: int, dimensions: int):
        import numpy as np

        blobs, rids, counts = [], [], []
        for rid, blob in db.execute("SELECT rid, vectors FROM vectors WHERE part = ? ORDER BY rid", (part,)):
            rows = len(blob) // (2 * dimensions)
            if rows * 2 * dimensions != len(blob) or not rows:
                continue  # another model's vectors: searched again once the documents are embedded again
            blobs.append(blob)
            rids.append(rid)
            counts.append(rows)
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float16).reshape(-1, dimensions).astype(np.float32)
        row_docs = np.repeat(np.asarray(rids, dtype=np.int64), counts)
        passage = np.concatenate([np.arange(c) for c in counts]) if counts else np.zeros(0, np.int64)
        self._held[part] = (matrix, row_docs, passage)
        return self._held[part]


def document_vector(db: sqlite3.Connection, rid: int, dimensions: int):
    """The mean of a document's passage vectors, unit length ("more like this"); None without vectors."""
    import numpy as np

    row = db.execute("SELECT vectors FROM vectors WHERE rid = ?", (rid,)).fetchone()
    if row is None or not row[0] or len(row[0]) % (2 * dimensions):
        return None
    mean = np.frombuffer(row[0], dtype=np.float16).reshape(-1, dimensions).astype(np.float32).mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm else None
