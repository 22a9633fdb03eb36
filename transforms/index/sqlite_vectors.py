"""The embedded index's passage vectors (issue 31): one row per embedded document in ``vectors``, beside its
text — the spans of its passages and their vectors as float16 BLOBs — keyed by (access partition, rid) so a
semantic search reads the rows of the partitions its searcher may see only, in one range scan each.

Plain BLOBs searched with numpy (:func:`semantic.best_documents`) rather than sqlite-vec: the pyenv Python's
``sqlite3`` cannot load extensions. A partition of MIN_ROWS passages or more also gets an inverted-file index
(:mod:`.vector_lists`): its passages again, in ``vector_list_rows``, grouped by their nearest of about √n
centroids (``vector_lists``), so a search reads and compares the passages of the lists nearest the query only.
Lists are built from one partition's vectors, so they, too, depend on nothing another searcher may see.

Lists are derived data, built by the crawl's end (:func:`refresh_lists`, the target's ``finish``), never trusted
when stale: triggers on ``vectors`` count every change of a partition in ``vector_changes``, the lists record
the count they were built at, and a partition whose counts differ is searched exactly (every passage) until
the next crawl builds its lists again — also when a beamtrawl that knows nothing of lists wrote the index.

A reader keeps what it read (a partition's matrix, its centroids, the lists it probed) while SQLite's
``data_version`` says nothing was written (``beamtrawl serve``).
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from collections.abc import Sequence

from beamtrawl.transforms.index import semantic, vector_lists

_COUNT = ("INSERT INTO vector_changes VALUES ({row}.part, 1) "
          "ON CONFLICT(part) DO UPDATE SET generation = generation + 1;")
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS vectors(part INTEGER NOT NULL, rid INTEGER NOT NULL, spans BLOB NOT NULL,
                                          vectors BLOB NOT NULL, PRIMARY KEY(part, rid)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS vectors_rid ON vectors(rid)",
    "CREATE TABLE IF NOT EXISTS vector_changes(part INTEGER PRIMARY KEY, generation INTEGER NOT NULL)",
    f"CREATE TRIGGER IF NOT EXISTS vectors_added AFTER INSERT ON vectors BEGIN {_COUNT.format(row='new')} END",
    f"CREATE TRIGGER IF NOT EXISTS vectors_removed AFTER DELETE ON vectors BEGIN {_COUNT.format(row='old')} END",
    (f"CREATE TRIGGER IF NOT EXISTS vectors_changed AFTER UPDATE ON vectors BEGIN {_COUNT.format(row='old')} "
     f"{_COUNT.format(row='new')} END"),
    """CREATE TABLE IF NOT EXISTS vector_lists(part INTEGER PRIMARY KEY, generation INTEGER NOT NULL,
                                               dimensions INTEGER NOT NULL, centroids BLOB NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS vector_list_rows(part INTEGER NOT NULL, list INTEGER NOT NULL, rids BLOB NOT NULL,
                                                   passages BLOB NOT NULL, vectors BLOB NOT NULL,
                                                   PRIMARY KEY(part, list))""",
)


def create(db: sqlite3.Connection) -> None:
    """The tables and triggers; every partition gets a count of changes (an index written before the triggers has
    vectors and no counts), so that the crawl's end builds its lists."""
    for statement in SCHEMA:
        db.execute(statement)
    db.execute("INSERT OR IGNORE INTO vector_changes SELECT n, 0 FROM parts")


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


#: A search whose filters admit at most this many documents compares all their passages (read by document), not
#: those of the lists nearest the query, which may hold none of them.
FEW_DOCUMENTS = 2_000


class Matrices:
    """The passage vectors a reader compares with a query: each partition's as one float32 matrix, or its
    centroids and the lists it probed; read once per change of the index (``PRAGMA data_version``, and
    :meth:`forget` after the connection's own writes). ``approximate=False`` ignores the lists (the benchmark's
    exact reference)."""

    def __init__(self, approximate: bool = True):
        self._held: dict = {}
        self._version = None
        self.approximate = approximate

    def forget(self) -> None:
        """After a write through the reading connection itself (its data_version stays the same)."""
        self._held, self._version = {}, None

    def candidates(self, db: sqlite3.Connection, shown: Sequence[int], vector, admitted=None,
                   left_out: int | None = None):
        """(score, rid, passage number) arrays of the passages a search compares with ``vector``: those of the
        partitions ``shown`` — every one, or the nearest lists' of a partition with fresh lists — or, when the
        query's filters ``admitted`` (rids; None: no filters) few documents, all of theirs; the passages of
        ``left_out`` and of documents the filters refuse score -inf. Read again if the index changed meanwhile."""
        dimensions = len(vector)
        for _ in range(3):
            version = self._current(db)
            found = self._compared(db, shown, dimensions, vector, admitted)
            if db.execute("PRAGMA data_version").fetchone()[0] == version:
                break
        return _scored(found, vector, admitted, left_out)

    def _current(self, db: sqlite3.Connection):
        version = db.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version:
            self._held, self._version = {}, version
        return version

    def _compared(self, db: sqlite3.Connection, shown: Sequence[int], dimensions: int, vector, admitted) -> list:
        """(matrix, rids, passages) blocks to compare with ``vector``."""
        if admitted is not None and len(admitted) <= FEW_DOCUMENTS:
            rows = db.execute(f"SELECT rid, vectors FROM vectors WHERE rid IN (SELECT value FROM json_each(?)) "
                              f"AND part IN ({', '.join(map(str, map(int, shown)))}) ORDER BY rid",
                              (json.dumps([int(rid) for rid in admitted]),))
            return [_stacked(rows, dimensions)]
        blocks = []
        for part in shown:
            centroids = self._centroids(db, part, dimensions) if self.approximate else None
            if centroids is None:
                blocks.append(self._partition(db, part, dimensions))
            else:
                blocks.extend(self._lists(db, part, vector_lists.probed(centroids, vector), dimensions))
        return blocks

    def _partition(self, db: sqlite3.Connection, part: int, dimensions: int):
        if part not in self._held:
            rows = db.execute("SELECT rid, vectors FROM vectors WHERE part = ? ORDER BY rid", (part,))
            self._held[part] = _stacked(rows, dimensions)
        return self._held[part]

    def _centroids(self, db: sqlite3.Connection, part: int, dimensions: int):
        """A partition's centroids if its lists are fresh (built at its current count of changes), else None."""
        key = ("centroids", part)
        if key not in self._held:
            self._held[key] = fresh_centroids(db, part, dimensions)
        return self._held[key]

    def _lists(self, db: sqlite3.Connection, part: int, numbers: list[int], dimensions: int) -> list:
        import numpy as np

        missing = [n for n in numbers if ("list", part, n) not in self._held]
        if missing:
            for n in missing:
                self._held["list", part, n] = _empty(dimensions)  # a list without passages, or a damaged one
            for n, rids, passages, blob in db.execute(
                    f"SELECT list, rids, passages, vectors FROM vector_list_rows WHERE part = ? AND list IN "
                    f"({', '.join(map(str, missing))})", (part,)):
                rows = len(rids) // 8
                if rows and len(passages) == 4 * rows and len(blob) == 2 * dimensions * rows:
                    self._held["list", part, n] = (
                        np.frombuffer(blob, dtype=np.float16).reshape(rows, dimensions).astype(np.float32),
                        np.frombuffer(rids, dtype=np.int64), np.frombuffer(passages, dtype=np.int32))
        return [self._held["list", part, n] for n in numbers]


def _empty(dimensions: int):
    import numpy as np

    return np.zeros((0, dimensions), np.float32), np.zeros(0, np.int64), np.zeros(0, np.int32)


def _stacked(rows, dimensions: int):
    """(matrix, rids, passage numbers) of (rid, float16 BLOB) rows, a document's passages together."""
    import numpy as np

    blobs, rids, counts = [], [], []
    for rid, blob in rows:
        count = len(blob) // (2 * dimensions)
        if count * 2 * dimensions != len(blob) or not count:
            continue  # another model's vectors: searched again once the documents are embedded again
        blobs.append(blob)
        rids.append(rid)
        counts.append(count)
    if not counts:
        return _empty(dimensions)
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float16).reshape(-1, dimensions).astype(np.float32)
    return (matrix, np.repeat(np.asarray(rids, dtype=np.int64), counts),
            np.concatenate([np.arange(c, dtype=np.int32) for c in counts]))


def _scored(blocks: list, vector, admitted, left_out: int | None):
    """The blocks' scores against ``vector``, with their rids and passage numbers, one array each."""
    import numpy as np

    query = np.asarray(vector, dtype=np.float32)
    scores = np.concatenate([matrix @ query for matrix, _, _ in blocks]) if blocks else np.zeros(0, np.float32)
    rids = np.concatenate([b[1] for b in blocks]) if blocks else np.zeros(0, np.int64)
    passages = np.concatenate([b[2] for b in blocks]) if blocks else np.zeros(0, np.int32)
    refused = np.zeros(len(rids), dtype=bool)
    if admitted is not None:
        refused |= ~np.isin(rids, np.asarray(admitted, dtype=np.int64))
    if left_out is not None:
        refused |= rids == left_out
    scores[refused] = -np.inf
    return scores, rids, passages


def _has_lists(db: sqlite3.Connection) -> bool:
    """An index written before lists existed has no tables for them (searched exactly until a crawl makes them)."""
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'vector_lists'").fetchone() is not None


def fresh_centroids(db: sqlite3.Connection, part: int, dimensions: int):
    """Partition ``part``'s centroids, if its lists were built at its current count of changes and width."""
    import numpy as np

    if not _has_lists(db):
        return None
    row = db.execute("SELECT l.centroids FROM vector_lists AS l JOIN vector_changes AS c ON c.part = l.part "
                     "WHERE l.part = ? AND l.generation = c.generation AND l.dimensions = ?",
                     (part, dimensions)).fetchone()
    if row is None or not row[0] or len(row[0]) % (4 * dimensions):
        return None
    return np.frombuffer(row[0], dtype=np.float32).reshape(-1, dimensions)


def refresh_lists(db: sqlite3.Connection, transaction, dimensions: int) -> list[int]:
    """Build the lists of every partition of MIN_ROWS passages or more whose vectors changed since its lists were
    built, and drop those of smaller ones; ``transaction()`` opens a write transaction. The vectors are read
    outside it (building 1,000,000 passages' lists takes a minute); a partition that changed meanwhile keeps no
    lists (searched exactly) until the next crawl. Returns the partitions given lists."""
    import numpy as np

    if not _has_lists(db) or not dimensions:
        return []
    built = []
    for part, generation in db.execute(
            "SELECT c.part, c.generation FROM vector_changes AS c LEFT JOIN vector_lists AS l ON l.part = c.part "
            "WHERE l.generation IS NOT c.generation OR l.dimensions IS NOT ?", (dimensions,)).fetchall():
        (size,) = db.execute("SELECT coalesce(sum(length(vectors)), 0) FROM vectors WHERE part = ?", (part,)).fetchone()
        lists = None
        if size // (2 * dimensions) >= vector_lists.MIN_ROWS:
            matrix, rids, passages = _stacked(
                db.execute("SELECT rid, vectors FROM vectors WHERE part = ? ORDER BY rid", (part,)), dimensions)
            centroids = vector_lists.train(matrix, vector_lists.list_count(len(matrix)))
            owner = vector_lists.assign(matrix, centroids)
            order = np.argsort(owner, kind="stable")
            bounds = np.searchsorted(owner[order], np.arange(len(centroids) + 1))
            lists = (centroids, [(n, order[bounds[n]:bounds[n + 1]]) for n in range(len(centroids))
                                 if bounds[n + 1] > bounds[n]], matrix, rids, passages)
        with transaction() as write:
            now = write.execute("SELECT generation FROM vector_changes WHERE part = ?", (part,)).fetchone()
            write.execute("DELETE FROM vector_list_rows WHERE part = ?", (part,))
            write.execute("DELETE FROM vector_lists WHERE part = ?", (part,))
            if lists is None or now is None or now[0] != generation:
                continue
            centroids, members, matrix, rids, passages = lists
            write.executemany("INSERT INTO vector_list_rows VALUES (?, ?, ?, ?, ?)", (
                (part, n, rids[rows].tobytes(), passages[rows].astype(np.int32).tobytes(),
                 matrix[rows].astype(np.float16).tobytes()) for n, rows in members))
            write.execute("INSERT INTO vector_lists VALUES (?, ?, ?, ?)",
                          (part, generation, dimensions, centroids.astype(np.float32).tobytes()))
            built.append(part)
    return built


def document_vector(db: sqlite3.Connection, rid: int, dimensions: int):
    """The mean of a document's passage vectors, unit length ("more like this"); None without vectors."""
    import numpy as np

    row = db.execute("SELECT vectors FROM vectors WHERE rid = ?", (rid,)).fetchone()
    if row is None or not row[0] or len(row[0]) % (2 * dimensions):
        return None
    return semantic.unit_mean(np.frombuffer(row[0], dtype=np.float16).reshape(-1, dimensions))
