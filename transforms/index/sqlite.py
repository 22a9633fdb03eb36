"""The embedded index: one SQLite file with an FTS5 table, BM25 ranking and highlighted snippets.

Several worker processes write at once: WAL journaling and one ``BEGIN IMMEDIATE`` transaction per
batch, taken under an exclusive lock on ``<index>.lock``. The lock hands the index over the moment a
writer is done, where SQLite's busy handler would poll with sleeps of up to 100 ms; readers (the
snapshot, searches) are never blocked. ``docs`` holds stored fields and freshness state; the
searchable text is in one FTS5 table per access partition, ``fts_<n>`` (rowid = ``docs.rid``, ``n`` =
``docs.part``, see :mod:`.sqlite_parts`: a search reads the tables of the partitions its searcher may see
only, so its time says nothing of the others; ``docs_fts`` is a view over them all, for reading text
back); ``aux`` holds auxiliary fields, one
row per field with its flags (and, for tokenized fields, its words in ``tokens``). A search probes
``aux`` by (rid, name) for each candidate document, so the table needs no index of its own.

Schema version 2 added ``aux``, version 3 the column ``denied`` (groups that may not see a document)
and ``names`` (what a query must equal to match a document's name exactly, query.name_keys; one row
per key, so the exact-name boost of a search is one indexed lookup), version 4 the text split by access
partition (``parts``, ``docs.part``), version 6 the text column ``furniture`` (page furniture: searched with
the lowest weight, never in snippets), version 7 the table ``vectors`` (passages' embeddings:
:mod:`.sqlite_vectors`; with them, and no version of their own, the vector lists a crawl's end derives from them
and the triggers that mark them stale), version 8 the column ``folder`` (each document's batch key,
transforms/batches.py, indexed: a listing compares a folder with its indexed documents by one look-up,
transforms/freshness.py). An older index is migrated when a
crawl opens it (the table and column are added, ``names`` filled from the stored documents); its
documents get their auxiliary fields when they are re-prepared, which that crawl does because the
preparation fingerprint covers the field definitions. An index made before ``ranking`` gets it and
``docs.length`` (from FTS5's own sizes) when a crawl opens it; a search refuses it until then, since its
scores would leak.

Access groups and denies are enforced inside the one SQL statement of a search (``_visible``), so
snippets, exclusions and filters only ever see documents the searcher may read. Ranking needs more:
FTS5's ``bm25()`` weighs a word by how many documents of its table (one partition) hold it, so the
score of a searcher who sees several partitions would depend on how they are split. A search therefore scores with the statistics of the documents the
searcher may see (``_score_column``): ``ranking`` keeps the documents and tokens of each access
partition (one row per distinct value of ``_ACCESS_COLUMNS``, kept by triggers), ``docs.length`` each
document's tokens, and the score equals what ``bm25()`` gives in an index holding only the visible
documents.

Searching needs read access only: a search opens the file read-only (``_open_read_only``). A crawl
refuses, untouched, a file that is not empty and not a beamtrawl index, and a damaged one
(``_inspect``), with one line naming the file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import itertools
import json
import logging
import math
import os
import re
import sqlite3
import stat
import tempfile
import urllib.parse
from collections.abc import Iterator, Sequence
from typing import Literal, NamedTuple

from beamtrawl.transforms import batches
from beamtrawl.transforms.enrich.auxfields import tokens
from beamtrawl.transforms.fields import Path
from beamtrawl.transforms.index import semantic
from beamtrawl.transforms.index import sqlite_parts as parts
from beamtrawl.transforms.index import sqlite_vectors as vectors
from beamtrawl.transforms.index.base import (
    ACCESS_FIELDS,
    DATE_FACET,
    FACET_FIELDS,
    MARK_OFF,
    MARK_ON,
    MAX_LOCATIONS,
    NEWEST,
    RECORD_FIELDS,
    RELEVANCE,
    Hit,
    Indexed,
    IndexTarget,
    IndexUnavailable,
    Page,
    Stored,
    TargetSettings,
    date_buckets,
    render_snippet,
)
from beamtrawl.transforms.index.query import (
    CHANGE_LOG_NAMES,
    CHANGE_LOG_WEIGHT,
    EXACT_NAME_BOOST,
    FURNITURE_WEIGHT,
    RANGE_COLUMNS,
    RANGE_FIELDS,
    Query,
    QueryError,
    Term,
    name_keys,
    range_of,
)
from beamtrawl.transforms.records import EVERYONE, AuxValue, IndexDoc, SnapshotEntry

SCHEMA_VERSION = 8  # 5: name keys of whole file names and manual pages (query.name_keys); 6: furniture; 7: vectors;
# 8: docs.folder (the batch key of its URL, transforms/batches.py) and its index, for the freshness comparison in place
SPLIT_ROWS = 50_000
STAMP_SUFFIX = ".checked"  # beside the index: the stamp of the file as the last crawl left it (_write_stamp)
#: What SQLite says when a query, not the index, is beyond its limits (parse_query bounds queries first).
_QUERY_TOO_COMPLEX = ("Expression tree is too large", "too many SQL variables", "pattern too complex",
                      "too many terms in compound", "parser stack overflow")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs(
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    url TEXT NOT NULL,
    root TEXT NOT NULL,
    title TEXT NOT NULL,
    mimetype TEXT NOT NULL,
    extension TEXT NOT NULL,
    filename TEXT NOT NULL,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    last_modified TEXT NOT NULL,
    groups TEXT NOT NULL,
    denied TEXT NOT NULL DEFAULT '[]',
    preparation_error TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    etag TEXT NOT NULL,
    http_last_modified TEXT NOT NULL,
    prep_fingerprint TEXT NOT NULL,
    outlinks TEXT NOT NULL,
    indexed_at TEXT NOT NULL,
    length INTEGER NOT NULL DEFAULT 0,
    part INTEGER NOT NULL DEFAULT 0,
    folder TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS aux(
    rid INTEGER NOT NULL,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    tokens TEXT NOT NULL,
    stored INTEGER NOT NULL,
    indexed INTEGER NOT NULL,
    tokenized INTEGER NOT NULL,
    PRIMARY KEY(rid, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS names(key TEXT NOT NULL, part INTEGER NOT NULL, rid INTEGER NOT NULL,
                                 PRIMARY KEY(key, part, rid)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS names_rid ON names(rid);
CREATE TABLE IF NOT EXISTS parts(n INTEGER PRIMARY KEY, groups TEXT NOT NULL, denied TEXT NOT NULL,
                                 UNIQUE(groups, denied));
"""
_STORED = ("id", "url", "root", "title", "mimetype", "extension", "filename", "path", "size", "mtime_ns",
           "last_modified", "groups", "denied", "preparation_error", "content_hash", "etag", "http_last_modified",
           "prep_fingerprint", "outlinks", "indexed_at")
# A document's row is written once, with its length (FTS5's count of its tokens), so the ranking triggers
# run once per document: the text goes in first, under the rid the row will have (its own, or the next).
_UPSERT = (f"INSERT INTO docs(rid, {', '.join(_STORED)}, length, part, folder) VALUES (?, "
           f"{', '.join('?' * len(_STORED))}, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
           f"{', '.join(f'{c}=excluded.{c}' for c in (*_STORED[1:], 'length', 'part', 'folder'))}")
#: bm25() column weights (sqlite_parts.COLUMNS): title weighs most, then headlines; page furniture least
_WEIGHTS = f"10.0, 1.0, 4.0, 2.0, 3.0, 1.0, {FURNITURE_WEIGHT}"
#: A change log's score factor (query.is_change_log, the same names and weight as OpenSearch's); constants of
#: this module only, never user text.
_CHANGE_LOG_FACTOR = (f"(CASE WHEN lower(substr(docs.filename, 1, instr(docs.filename || '.', '.') - 1)) IN "
                      f"({', '.join(repr(n) for n in CHANGE_LOG_NAMES)}) THEN {CHANGE_LOG_WEIGHT} ELSE 1.0 END)")
#: What makes documents copies of each other, shown as one hit: the same content hash (a document without
#: content is a copy of nothing but itself). OpenSearch keeps it in the field of the same name.
_COPIES = "(CASE WHEN docs.content_hash = '' THEN docs.id ELSE docs.content_hash END)"
_BM25_K1, _BM25_B = 1.2, 0.75  # the constants of FTS5's bm25()
_ACCESS_COLUMNS = ACCESS_FIELDS  # stored in docs under the same names; ``ranking`` has a row per partition


class SqliteSettings(TargetSettings):
    """The embedded SQLite/FTS5 index, one file (``kind: sqlite``; a section with ``path`` and no ``kind`` is one)."""

    kind: Literal["sqlite"] = "sqlite"
    """the embedded index"""
    path: Path
    """the index's file (relative to the configuration file)"""

    @property
    def label(self) -> str:
        return self.path

    def stem(self, base: str) -> str:
        return os.path.splitext(self.path)[0]


class EmbeddedIndex(IndexTarget):
    Settings = SqliteSettings
    local_only = True
    semantic = True  # searches by meaning too (transforms/index/semantic.py)

    @classmethod
    def from_config(cls, index_config: SqliteSettings) -> EmbeddedIndex:
        """The index an ``index: {path: ...}`` section names."""
        return cls(index_config.path)

    def __init__(self, path: str):
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._read_only: sqlite3.Connection | None = None
        self._matrices = vectors.Matrices()
        self._stamp_when_closed = False  # the driver of a crawl stamps the file it leaves (_write_stamp)

    def __getstate__(self):
        return {"path": self.path}

    def place_problem(self, create: bool) -> str:
        """The index file's folder must exist (a crawl makes it, as the index would) and take files: SQLite writes
        its journal beside the file. ``--dry-run`` asks the nearest folder there is, leaving nothing behind."""
        folder = os.path.dirname(os.path.abspath(self.path))
        try:
            if create:
                os.makedirs(folder, exist_ok=True)
            else:
                while not os.path.isdir(folder):
                    folder = os.path.dirname(folder)
        except OSError as err:
            return f"its folder {folder} cannot be created ({err.strerror}); choose another index.path"
        try:
            tempfile.TemporaryFile(dir=folder).close()
        except OSError as err:
            return (f"its folder {folder} cannot be written ({err.strerror}); choose another index.path" if create
                    else f"cannot be created in {folder}: {err.strerror}")
        return ""

    def __setstate__(self, state):
        self.__init__(state["path"])

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            # One DoFn instance uses it at a time, but Beam may tear down on another thread.
            db = sqlite3.connect(self.path, timeout=300, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._db = db
        return self._db

    def _reader(self) -> sqlite3.Connection:
        """A connection for searching: the writer's if this object has one, else a read-only one."""
        if self._db is not None:
            return self._db
        if self._read_only is None:
            self._read_only = _open_read_only(self.path)
        return self._read_only

    def close(self) -> None:
        for db in (self._db, self._read_only):
            if db is not None:
                db.close()
        self._db = self._read_only = None
        if self._stamp_when_closed:
            _write_stamp(self.path)

    @contextlib.contextmanager
    def _transaction(self):
        """An exclusive write transaction; rolled back if anything in it fails."""
        db = self._connect()
        with open(self.path + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    # -- driver ------------------------------------------------------------------------------
    def prepare(self) -> None:
        folder = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(folder, exist_ok=True)
        _refuse_a_folder(self.path)
        _refuse_read_only(self.path, folder)
        version = _inspect(self.path, _stamp(self.path) != _read_stamp(self.path))
        self._stamp_when_closed = True
        if version is not None and version not in (1, 2, 3, 4, 5, 6, 7, SCHEMA_VERSION):
            raise IndexUnavailable(f"{self.path}: index schema version {version}, this beamtrawl reads version "
                                   f"{SCHEMA_VERSION}; crawl into a new index file")
        try:
            with self._transaction() as db:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                if version in (1, 2):  # 2 added the aux table, 3 the denied column and names (tables: above)
                    _add_denied_column(db)
                _add_part_column(db)
                _add_folder_column(db)  # 8
                vectors.create(db)  # 7: documents get theirs when embeddings are on (the fingerprint re-prepares)
                _prepare_ranking(db)
                if parts.is_single_table(db):  # 4: the text of each access partition in a table of its own
                    parts.split_single(db)
                if version is not None and version < 6:  # 6: the furniture column
                    parts.add_columns(db)
                if version is not None and version < 7:  # 3: names; 4: names by partition; 5: more names
                    _partition_names(db)
                if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'docs_fts'").fetchone() is None:
                    parts.refresh_view(db)
                if version != SCHEMA_VERSION:
                    db.execute("INSERT OR REPLACE INTO meta VALUES('schema_version', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError as err:
            raise _unusable(self.path, err) from None

    def check(self) -> None:
        """For searching: the file must exist and be an index; read access is enough."""
        if not os.path.exists(self.path):
            raise IndexUnavailable(f"{self.path}: no index here yet; run beamtrawl crawl first")
        _refuse_a_folder(self.path)
        try:
            db = self._reader()
            row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            ranked = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'ranking'").fetchone()
        except sqlite3.DatabaseError as err:
            self.close()
            raise _unusable(self.path, err) from None
        if row is not None and _schema_version(self.path, row[0]) != SCHEMA_VERSION:
            raise IndexUnavailable(f"{self.path}: index schema version {row[0]}, this beamtrawl searches version "
                                   f"{SCHEMA_VERSION}; run beamtrawl crawl once to upgrade it")
        if not ranked:
            raise IndexUnavailable(f"{self.path}: the index has no ranking statistics yet (an older beamtrawl made "
                                   f"it); run beamtrawl crawl once to upgrade it")

    def read_state(self) -> dict | None:
        row = self._connect().execute("SELECT value FROM meta WHERE key = 'crawl_state'").fetchone()
        return json.loads(row[0]) if row else None

    def write_state(self, state: dict | None) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM meta WHERE key = 'crawl_state'")
            if state is not None:
                db.execute("INSERT INTO meta VALUES('crawl_state', ?)", (json.dumps(state, sort_keys=True),))

    def read_owner(self) -> dict | None:
        if not os.path.isfile(self.path):
            return None
        try:
            row = self._reader().execute("SELECT value FROM meta WHERE key = 'filled_by'").fetchone()
        except sqlite3.DatabaseError:  # not an index, or an old one: prepare() says what is wrong
            return None
        finally:
            self.close()
        return json.loads(row[0]) if row else None

    def write_owner(self, owner: dict) -> None:
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES('filled_by', ?)", (json.dumps(owner, sort_keys=True),))

    def snapshot_splits(self) -> list[tuple[int, int]]:
        low, high = self._connect().execute("SELECT MIN(rid), MAX(rid) FROM docs").fetchone()
        if low is None:
            return []
        return [(start, min(start + SPLIT_ROWS, high + 1)) for start in range(low, high + 1, SPLIT_ROWS)]

    # -- workers -----------------------------------------------------------------------------
    def read_snapshot(self, split: tuple[int, int]) -> Iterator[SnapshotEntry]:
        rows = self._connect().execute(f"SELECT {_SNAPSHOT} FROM docs WHERE rid >= ? AND rid < ?", split)
        return map(_snapshot_entry, rows)

    def read_snapshot_batches(self, split: tuple[int, int]) -> Iterator[batches.Batch]:
        """The split's rows in folder batches made from their columns, without a record per row: that cost
        9-10 us of an unchanged re-crawl's 50 per file (issue 27). Rows come in the order they were written,
        a folder's together; a folder that comes again later is added to its batch while fewer than MOST rows
        are held (beyond, a batch of a key that comes again is one of several, which the join brings together)."""
        rows = self._connect().execute(f"SELECT {_SNAPSHOT} FROM docs WHERE rid >= ? AND rid < ?", split)
        held: dict[str, list] = {}
        count = 0
        for folder, run in itertools.groupby(rows, _folder_of):
            run = list(run)
            count += len(run)
            if batches.batch_key(run[0][1]) == folder:
                held.setdefault(folder, []).extend(run)
            else:  # a web page's batch is its own (by host)
                for row in run:
                    held.setdefault(batches.batch_key(row[1]), []).append(row)
            if count >= batches.MOST:
                yield from _packed_rows(held)
                held, count = {}, 0
        yield from _packed_rows(held)

    def indexed_folders(self) -> Iterator[batches.Batch]:
        """Worker: one ``(folder, b"")`` per folder (batch key) that holds documents, from the folder column's
        index: what the freshness join needs of the folders a listing compared in place (transforms/freshness.py)."""
        for (folder,) in self._connect().execute("SELECT DISTINCT folder FROM docs"):
            yield folder, b""

    def folder_rows(self, folder: str, fields: tuple[int, ...] | None = None) -> list[tuple]:
        """Worker: the documents of one folder (batch key) as tuples of a SnapshotEntry's fields (``fields``: only
        those, by position, in that order: a listing's comparison reads seven of the twelve, and SQLite's fetch
        costs by the column), by the folder column's index. A row whose URL no longer has that key (a source
        that changed how its URLs are batched) is left out, so it is judged nowhere and kept; the upsert of its
        document sets its folder again."""
        if fields is not None:
            return self._folder_fields(folder, fields)
        rows = self._connect().execute(f"SELECT {_SNAPSHOT} FROM docs WHERE folder = ?", (folder,))
        if batches.batch_key(folder + "/") != folder:  # a web page's key is its URL (rare: a row per call)
            return [_snapshot_row(row) for row in rows if batches.batch_key(row[1]) == folder]
        prefix, cut = folder + "/", len(folder) + 1  # what batch_key(url) == folder means, without a call per row
        return [(*row[:8], [] if row[8] == "[]" else json.loads(row[8]), [] if row[9] == "[]" else json.loads(row[9]),
                 [] if row[10] == "[]" else json.loads(row[10]), row[11])
                for row in rows if row[1].startswith(prefix) and row[1].find("/", cut) < 0]

    def _folder_fields(self, folder: str, fields: tuple[int, ...]) -> list[tuple]:
        """:meth:`folder_rows` of only ``fields``: each row with its URL first, to leave out those of another key."""
        names = _SNAPSHOT.split(", ")
        rows = self._connect().execute(f"SELECT url, {', '.join(names[k] for k in fields)} FROM docs WHERE folder = ?",
                                       (folder,)).fetchall()
        prefix, cut = folder + "/", len(folder) + 1
        if batches.batch_key(prefix) == folder:  # as folder_rows says
            rows = [row for row in rows if row[0].startswith(prefix) and row[0].find("/", cut) < 0]
        else:
            rows = [row for row in rows if batches.batch_key(row[0]) == folder]
        columns = list(zip(*rows))[1:] or [() for _ in fields]
        columns = [[_json_list(v) for v in column] if k in _JSON_COLUMNS else column
                   for k, column in zip(fields, columns)]
        return list(zip(*columns))

    def upsert(self, docs: Sequence[IndexDoc]) -> list[tuple[str, str]]:
        self._matrices.forget()  # SQLite's data_version does not change for a connection's own writes
        try:
            with self._transaction() as db:
                self._write(db, docs)
            return []
        except sqlite3.Error:
            pass
        failures = []  # the batch failed: write one by one to find which documents cannot be written
        for doc in docs:
            try:
                with self._transaction() as db:
                    self._write(db, [doc])
            except sqlite3.Error as err:
                failures.append((doc.url, f"index write failed: {err}"))
        return failures

    @staticmethod
    def _write(db: sqlite3.Connection, docs: Sequence[IndexDoc]) -> None:
        """The texts of a batch first, then its rows. Each ``docs`` row runs the ranking triggers in a
        statement savepoint, which makes FTS5 flush the text it holds in memory: written document by
        document, every document became a segment of its own and the rows cost 20 times what they do
        after the batch's texts (0.17 against 0.008 ms of CPU each)."""
        placed: dict[str, tuple[int, int]] = {}  # id → (rid, partition) given in this batch: a document twice keeps one rid
        lengths = []
        next_rid = None
        for doc in docs:
            groups, denied = json.dumps(list(doc.groups)), json.dumps(list(doc.denied))
            part = parts.part_of(db, groups, denied)
            row = placed.get(doc.id) or db.execute("SELECT rid, part FROM docs WHERE id = ?", (doc.id,)).fetchone()
            if row is None:  # as SQLite would number it, past the new documents before it in this batch
                if next_rid is None:
                    (next_rid,) = db.execute("SELECT ifnull(max(rid), 0) + 1 FROM docs").fetchone()
                row, next_rid = (next_rid, part), next_rid + 1
            rid, old = row
            placed[doc.id] = (rid, part)
            # A new document's rid is cleared too: rows left by a docs row deleted by other means would break the write.
            for n in {old, part}:
                db.execute(f"DELETE FROM {parts.fts(n)} WHERE rowid = ?", (rid,))
            db.execute(f"INSERT INTO {parts.fts(part)}(rowid, {', '.join(parts.COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (rid, doc.title, doc.content, doc.headlines, doc.metadata, doc.filename, doc.url, doc.furniture))
            (size,) = db.execute(f"SELECT sz FROM {parts.fts(part)}_docsize WHERE id = ?", (rid,)).fetchone()
            lengths.append((rid, part, _length(size), groups, denied))
        for doc, (rid, part, length, groups, denied) in zip(docs, lengths, strict=True):
            values = doc._asdict()
            values.update(groups=groups, denied=denied, outlinks=json.dumps(list(doc.outlinks)))
            db.execute(_UPSERT, [rid, *(values[c] for c in _STORED), length, part, batches.batch_key(doc.url)])
            db.execute("DELETE FROM aux WHERE rid = ?", (rid,))
            db.execute("DELETE FROM names WHERE rid = ?", (rid,))
            db.executemany("INSERT OR IGNORE INTO names(key, part, rid) VALUES (?, ?, ?)",
                           [(key, part, rid) for key in name_keys(doc.filename, doc.extension, doc.title)])
            # A field neither stored nor matched exactly (regain's `location`) keeps only its words.
            db.executemany("INSERT OR REPLACE INTO aux VALUES (?, ?, ?, ?, ?, ?, ?)", [
                (rid, a.name, a.value if a.store or not a.tokenize else "", " ".join(tokens(a.value)) if a.tokenize else "",
                 a.store, a.index, a.tokenize)
                for a in getattr(doc, "aux", ())])
            vectors.write(db, rid, part, doc.passages, doc.vectors)
        dimensions = {len(d.vectors) // len(d.passages) for d in docs if d.vectors and d.passages}
        if dimensions:  # bytes per passage / 2 bytes per float16 value * 2 numbers per span
            db.execute("INSERT OR REPLACE INTO meta VALUES('vector_dimensions', ?)", (str(max(dimensions)),))

    def set_access(self, changes: Sequence[tuple[str, Sequence[str], Sequence[str]]]) -> None:
        """New access at once; a document whose partition changes takes its text to that partition's table."""
        self._matrices.forget()
        with self._transaction() as db:
            for doc_id, groups, denied in changes:
                groups, denied = json.dumps(list(groups)), json.dumps(list(denied))
                row = db.execute("SELECT rid, part FROM docs WHERE id = ?", (doc_id,)).fetchone()
                if row is None:
                    continue
                part = parts.part_of(db, groups, denied)
                if part != row[1]:
                    parts.move(db, row[0], row[1], part)
                    db.execute("UPDATE names SET part = ? WHERE rid = ?", (part, row[0]))
                    vectors.move(db, row[0], part)
                db.execute("UPDATE docs SET groups = ?, denied = ?, part = ? WHERE rid = ?", (groups, denied, part, row[0]))

    def delete(self, ids: Sequence[str]) -> None:
        self._matrices.forget()
        marks = ", ".join("?" * len(ids))
        with self._transaction() as db:
            for (part,) in db.execute(f"SELECT DISTINCT part FROM docs WHERE id IN ({marks})", ids).fetchall():
                db.execute(f"DELETE FROM {parts.fts(part)} WHERE rowid IN (SELECT rid FROM docs WHERE id IN ({marks}))",
                           ids)
            db.execute(f"DELETE FROM aux WHERE rid IN (SELECT rid FROM docs WHERE id IN ({marks}))", ids)
            db.execute(f"DELETE FROM names WHERE rid IN (SELECT rid FROM docs WHERE id IN ({marks}))", ids)
            db.execute(f"DELETE FROM vectors WHERE rid IN (SELECT rid FROM docs WHERE id IN ({marks}))", ids)
            db.execute(f"DELETE FROM docs WHERE id IN ({marks})", ids)

    def documents(self) -> Iterator[IndexDoc]:
        """Every document (``beamtrawl export``); the summary is not stored here, so it is empty."""
        db = self._reader()
        columns = [c for c in _STORED if c not in ("groups", "denied", "outlinks")]
        for part in parts.all_parts(db):
            yield from self._documents_of(db, part, columns)

    @staticmethod
    def _documents_of(db: sqlite3.Connection, part: int, columns: list[str]) -> Iterator[IndexDoc]:
        rows = db.execute(f"SELECT docs.rid, {', '.join('docs.' + c for c in columns)}, docs.groups, docs.denied, "
                          f"docs.outlinks, f.content, f.headlines, f.metadata, f.furniture "
                          f"FROM docs JOIN {parts.fts(part)} AS f ON f.rowid = docs.rid WHERE docs.part = ? "
                          f"ORDER BY docs.rid", (part,))
        while batch := rows.fetchmany(1000):
            aux: dict[int, list[AuxValue]] = {}
            rids = [row[0] for row in batch]
            for rid, *value in db.execute(
                    f"SELECT rid, name, value, stored, indexed, tokenized FROM aux WHERE rid IN "
                    f"({', '.join('?' * len(rids))}) ORDER BY rid, name", rids):
                aux.setdefault(rid, []).append(AuxValue(*value[:2], *map(bool, value[2:])))
            for rid, *values in batch:
                stored = dict(zip(columns, values, strict=False))
                groups, denied, outlinks, content, headlines, metadata, furniture = values[len(columns):]
                yield IndexDoc(**stored, groups=json.loads(groups), denied=json.loads(denied),
                               outlinks=json.loads(outlinks), content=content, headlines=headlines,
                               metadata=metadata, summary="", aux=aux.get(rid, []), furniture=furniture)

    def finish(self, succeeded: bool) -> None:
        """The vector lists of partitions whose vectors changed (sqlite_vectors.refresh_lists), after a failed
        crawl too: what it wrote is in the index all the same. Lists only make searches faster: one that cannot
        be built (a full disk, too little memory) is a warning, and searches compare every passage meanwhile."""
        self._matrices.forget()
        try:
            db = self._connect()
            row = db.execute("SELECT value FROM meta WHERE key = 'vector_dimensions'").fetchone()
            vectors.refresh_lists(db, self._transaction, int(row[0]) if row else 0)
        except (sqlite3.Error, MemoryError, ValueError) as err:
            logging.getLogger(__name__).warning("%s: vector lists not built (%s); searches by meaning compare every "
                                                "passage until a crawl builds them", self.path, err)

    # -- searching ---------------------------------------------------------------------------
    def count(self) -> int:
        return self._reader().execute("SELECT COUNT(*) FROM docs").fetchone()[0]

    def search(self, query: Query, limit: int) -> list[Hit]:
        return self._searching(lambda db: self._hits(db, query, (limit, 0), RELEVANCE, self._ranked(db, query)))

    def search_page(self, query: Query, limit: int, offset: int = 0, order: str = RELEVANCE,
                    facet_size: int = 10) -> Page:
        def page(db: sqlite3.Connection) -> Page:
            ranked = self._ranked(db, query)
            total, facets = _counts(db, query, facet_size, ranked)
            hits = self._hits(db, query, (limit, offset), order, ranked) if total > offset else []
            return Page(hits, total, facets)
        return self._searching(page)

    def _ranked(self, db: sqlite3.Connection, query: Query) -> Ranked | None:
        """A semantic or hybrid search's documents with their scores and best passages (None: keywords only)."""
        if query.mode not in (semantic.SEMANTIC, semantic.HYBRID):  # auto is settled before a target sees it
            return None
        row = db.execute("SELECT value FROM meta WHERE key = 'vector_dimensions'").fetchone()
        dimensions = int(row[0]) if row else len(query.vector) if query.vector is not None else 0
        vector, own = query.vector, None
        if query.like:  # "more like this": the document's own vectors, if the searcher may see it
            visible, params = _visible(query.groups)
            found = db.execute(f"SELECT rid FROM docs WHERE id = ? AND {visible}", [query.like, *params]).fetchone()
            own = found[0] if found else None
            vector = vectors.document_vector(db, own, dimensions) if own is not None else None
        if vector is None or len(vector) != dimensions:
            return Ranked([], {})
        scores, row_docs, passage = self._matrices.candidates(db, _visible_parts(db, query), vector, _admitted(db, query),
                                                             own)
        near = semantic.best_documents(scores, row_docs, semantic.DEPTH)
        passages = {rid: int(passage[row]) for rid, _, row in near}
        if query.mode == semantic.SEMANTIC or not query.has_text:
            return Ranked([(rid, score) for rid, score, _ in near], passages)
        telling = _telling(db, query)
        keyword = [row[0] for row in db.execute(*_keyword_ranking(db, telling, semantic.DEPTH))] \
            if telling.has_text else []
        named = frozenset(rid for (rid,) in db.execute(
            f"SELECT rid FROM names WHERE key = ? AND part IN ({', '.join(map(str, _visible_parts(db, query)))})",
            (query.name_key,))) if query.name_key else frozenset()
        fused = semantic.fuse(keyword, [rid for rid, _, _ in near], named)
        return Ranked([(rid, round(score, 6)) for rid, score in fused], passages)

    def document(self, doc_id: str, groups: Sequence[str]) -> Stored | None:
        visible, params = _visible(groups)
        row = self._searching(lambda db: db.execute(
            f"SELECT id, url, title, filename, mimetype, size, root, mtime_ns FROM docs WHERE id = ? AND {visible}",
            [doc_id, *params]).fetchone())
        return Stored(*row) if row else None

    def record(self, doc_id: str) -> dict | None:
        row = self._searching(lambda db: db.execute(
            f"SELECT {', '.join(RECORD_FIELDS)} FROM docs WHERE id = ?", [doc_id]).fetchone())
        if row is None:
            return None
        found = dict(zip(RECORD_FIELDS, row, strict=True))
        found["groups"], found["denied"] = json.loads(found["groups"]), json.loads(found["denied"])
        return found

    def indexed(self, doc_id: str, groups: Sequence[str]) -> Indexed | None:
        visible, params = _visible(groups)

        def read(db: sqlite3.Connection) -> Indexed | None:
            row = db.execute(f"SELECT rid, part, id, url, mimetype, size, last_modified, preparation_error FROM docs "
                             f"WHERE id = ? AND {visible}", [doc_id, *params]).fetchone()
            if row is None:
                return None
            rid, part, *stored, error = row
            text = db.execute(f"SELECT title, content, headlines, metadata FROM {parts.fts(part)} WHERE rowid = ?",
                              (rid,)).fetchone() or ("", "", "", "")
            aux = dict(db.execute("SELECT name, value FROM aux WHERE stored AND rid = ? ORDER BY name", (rid,)))
            identity, url, mimetype, size, modified = stored
            return Indexed(identity, url, text[0], mimetype, size, modified, text[1], text[2], text[3], error, aux)
        return self._searching(read)

    def _searching(self, work):
        """``work(connection)``, with SQLite's errors as a query too complex or an unusable index."""
        try:
            return work(self._reader())
        except sqlite3.DatabaseError as err:
            if any(cause in str(err) for cause in _QUERY_TOO_COMPLEX):
                raise QueryError(f"the query is too complex for the index ({err}); use fewer terms") from None
            raise _unusable(self.path, err, "cannot search") from None

    @staticmethod
    def _hits(db: sqlite3.Connection, query: Query, window: tuple[int, int], order: str,
              ranked: Ranked | None = None) -> list[Hit]:
        """Hits ``window`` = (limit, offset) of a search in ``order``."""
        sql, params, best = _matched(db, query, _HIT_COLUMNS, ranked)
        if not sql:
            return []
        order_by = "last_modified DESC, url" if order == NEWEST else best
        # Copies of one content are one hit, the best of them, listing where the others are (among the matches,
        # so among what the searcher may see): ``ranked`` numbers each content's matches in the page's order.
        # The other places are gathered for the page's hits only, in one pass over the matches (no per-hit scan).
        rows = db.execute(
            f"WITH matched AS MATERIALIZED ({sql}), ranked AS MATERIALIZED (SELECT *, row_number() OVER "
            f"(PARTITION BY copies ORDER BY {order_by}) AS n FROM matched), "
            f"page AS MATERIALIZED (SELECT * FROM ranked WHERE n = 1 ORDER BY {order_by} LIMIT ? OFFSET ?), "
            f"places AS (SELECT copies, json_group_array(url) AS urls FROM (SELECT copies, url FROM ranked "
            f"WHERE n > 1 AND copies IN (SELECT copies FROM page) ORDER BY url) GROUP BY copies) "
            f"SELECT rid, id, url, title, filename, mimetype, size, last_modified, coalesce(places.urls, '[]'), "
            f"snippet, score FROM page LEFT JOIN places USING (copies) ORDER BY {order_by}",
            [*params, *window]).fetchall()
        locations = {row[0]: json.loads(row[8])[:MAX_LOCATIONS] for row in rows}
        rows = [(*row[:8], *row[9:]) for row in rows]
        # Snippets of the page's hits only: the passage that matched its meaning, the text with its matches, or its
        # beginning (never the URL).
        rows = [(*row[:-2], _shown(db, row[0], query, ranked), row[-1]) for row in rows]
        stored: dict[int, dict[str, str]] = {}
        rids = [row[0] for row in rows]
        for rid, name, value in db.execute(
                f"SELECT rid, name, value FROM aux WHERE stored AND rid IN ({', '.join('?' * len(rids))})", rids):
            stored.setdefault(rid, {})[name] = value
        return [_hit(row[1:], stored.get(row[0], {}), locations[row[0]]) for row in rows]


#: The snippet of a hit: the text around its matches, else the headlines around theirs, else the beginning of
#: the text (FTS5's snippet of a column without a match). A match in the title, file name or URL alone never
#: makes them the snippet: the title and the location are shown beside it already.
_SNIPPET = ("CASE WHEN instr(snippet({t}, 1, '{on}', '{off}', '…', 24), '{on}') > 0 "
            "THEN snippet({t}, 1, '{on}', '{off}', '…', 24) "
            "WHEN instr(snippet({t}, 2, '{on}', '{off}', '…', 24), '{on}') > 0 "
            "THEN snippet({t}, 2, '{on}', '{off}', '…', 24) "
            "ELSE snippet({t}, 1, '{on}', '{off}', '…', 24) END")


_HIT_COLUMNS = ("docs.rid, docs.id, docs.url, docs.title, docs.filename, docs.mimetype, docs.size, "
                f"docs.last_modified, {_COPIES} AS copies")


class Ranked(NamedTuple):
    """A semantic or hybrid search's matches: (rid, score) best first, and rid → its best passage's number."""

    scores: list
    passages: dict


def _matched(db: sqlite3.Connection, query: Query, columns: str, ranked: Ranked | None) -> tuple[str, list, str]:
    """(SQL, params, best-first order) of the rows ``columns`` of every document a search matches, with its
    ``snippet`` (empty) and ``score``: the keyword arms of the visible partitions, the documents of a semantic or
    hybrid ranking (their scores carried in as JSON, never as SQL), or, without text, the filters' documents."""
    if ranked is not None:
        where, params = _conditions(db, dataclasses.replace(query, clauses=[]))
        sql = (f"SELECT {columns}, '' AS snippet, json_extract(s.value, '$[1]') AS score FROM json_each(?) AS s "
               f"JOIN docs ON docs.rid = json_extract(s.value, '$[0]') WHERE {' AND '.join(where)}")
        return sql, [json.dumps(ranked.scores), *params], "score DESC, url"
    if query.has_text:
        score = _score_column(db, query)

        def arm(part: int) -> tuple[str, list]:
            table = parts.fts(part)
            boost, boost_params = _exact_name_boost(query, part)
            where, params = _conditions(db, query, part)
            sql = (f"SELECT {columns}, '' AS snippet, "
                   f"({score(part)} + {boost}) * {_CHANGE_LOG_FACTOR} AS score FROM {table} "
                   f"JOIN docs ON docs.rid = {table}.rowid "
                   f"WHERE {' AND '.join(where)}")
            return sql, [*boost_params, *params]

        sql, params = parts.each(_visible_parts(db, query), arm)
        return sql, params, "score DESC, url"
    where, params = _conditions(db, query)
    return f"SELECT {columns}, '' AS snippet, 0.0 AS score FROM docs WHERE {' AND '.join(where)}", params, "url"


def _keyword_ranking(db: sqlite3.Connection, query: Query, depth: int) -> tuple[str, list]:
    """The statement of a query's ``depth`` best keyword matches' rids, best first (a hybrid search's half)."""
    sql, params, _ = _matched(db, dataclasses.replace(query, mode=semantic.KEYWORD), "docs.rid, docs.url", None)
    if not sql:
        return "SELECT 1 WHERE 0", []
    # scores rounded: copies (equal scores) keep their order by URL, whatever the float noise of rescoring
    return f"SELECT rid FROM ({sql}) ORDER BY round(score, 6) DESC, url LIMIT ?", [*params, depth]


def _telling(db: sqlite3.Connection, query: Query) -> Query:
    """The query a hybrid search ranks by keywords: without the words (clauses of one term, not a prefix) that too
    many of the searcher's documents hold (semantic.is_common), counted in the visible partitions up to that
    bound only, so a common word's long list is read once, in part."""
    visible, params = _visible(query.groups)
    (seen,) = db.execute(f"SELECT total(docs) FROM ranking AS docs WHERE {visible}", params).fetchone()
    shown, most = _visible_parts(db, query), int(semantic.COMMON_SHARE * seen)

    def holding(term: Term) -> int:
        found = 0
        for n in shown:
            found += db.execute(f"SELECT count(*) FROM (SELECT 1 FROM {parts.fts(n)} WHERE {parts.fts(n)} MATCH ? "
                                f"LIMIT ?)", (_fts_term(term), most + 1 - found)).fetchone()[0]
            if found > most:
                break
        return found
    kept = [clause for clause in query.clauses
            if len(clause) > 1 or clause[0].prefix or not semantic.is_common(holding(clause[0]), int(seen))]
    return dataclasses.replace(query, clauses=kept)


def _admitted(db: sqlite3.Connection, query: Query) -> list[int] | None:
    """The documents (rids) a semantic search's filters and exclusions admit among those its searcher may see;
    None without filters."""
    if not (query.filters or query.excluded):
        return None
    where, params = _conditions(db, dataclasses.replace(query, clauses=[]))
    return [rid for (rid,) in db.execute(f"SELECT docs.rid FROM docs WHERE {' AND '.join(where)}", params)]


def _shown(db: sqlite3.Connection, rid: int, query: Query, ranked: Ranked | None) -> str:
    """What a hit shows: the passage nearest its meaning (semantic, hybrid), else the text around its word matches,
    else the beginning of its text."""
    if ranked is not None and rid in ranked.passages:
        passage = _passage(db, rid, ranked.passages[rid])
        if passage:
            return passage
    if query.has_text:
        return _snippet(db, rid, query) or _beginning(db, rid)
    return _beginning(db, rid)


#: Characters of a passage a hit shows (a passage is about 80 words: the whole of it, nearly always).
PASSAGE_CHARS = 600


def _passage(db: sqlite3.Connection, rid: int, number: int) -> str:
    """A document's passage ``number`` from its stored text, cut at PASSAGE_CHARS."""
    found = vectors.span(db, rid, number)
    if not found or found[1] <= found[0]:
        return ""
    (part,) = db.execute("SELECT part FROM docs WHERE rid = ?", (rid,)).fetchone()
    start, stop = found[0], min(found[1], found[0] + PASSAGE_CHARS)
    row = db.execute(f"SELECT substr(content, ?, ?) FROM {parts.fts(part)} WHERE rowid = ?",
                     (start + 1, stop - start, rid)).fetchone()
    return (row[0] + ("…" if stop < found[1] else "")) if row and row[0] else ""


_SNAPSHOT = ("id, url, size, mtime_ns, prep_fingerprint, content_hash, etag, http_last_modified, groups, outlinks, "
             "denied, root")  # a SnapshotEntry's fields, in its order
_JSON_COLUMNS = (8, 9, 10)  # groups, outlinks, denied: stored as JSON lists


def _snapshot_row(row: tuple) -> tuple:
    """A row of :data:`_SNAPSHOT` as a tuple of a SnapshotEntry's fields."""
    return (*row[:8], _json_list(row[8]), _json_list(row[9]), _json_list(row[10]), row[11])


def _snapshot_entry(row: tuple) -> SnapshotEntry:
    """The record of a row of :data:`_SNAPSHOT` (made from the slice: unpacking it into names cost a third more)."""
    return tuple.__new__(SnapshotEntry, (*row[:8], _json_list(row[8]), _json_list(row[9]), _json_list(row[10]),
                                         row[11]))


def _folder_of(row: tuple) -> str:
    """The folder of a :data:`_SNAPSHOT` row's URL, as :func:`~beamtrawl.transforms.batches.batch_key` has it."""
    url = row[1]
    return url[:url.rfind("/")]


def _packed_rows(held: dict[str, list]) -> Iterator[batches.Batch]:
    """Rows of :data:`_SNAPSHOT` by batch key as batches of at most MOST rows each, packed from their columns."""
    for key, rows in held.items():
        for start in range(0, len(rows), batches.MOST):
            chunk = rows[start:start + batches.MOST]
            columns = list(zip(*chunk))
            for k in _JSON_COLUMNS:
                columns[k] = _json_column(columns[k])
            yield key, batches.pack_columns(len(chunk), columns)


def _json_column(texts: tuple) -> list | int:
    """A column of JSON lists decoded for :func:`~beamtrawl.transforms.batches.pack_columns`; nearly always
    all empty, which it stores as one mark."""
    if texts.count("[]") == len(texts):
        return batches.EMPTY_LISTS
    return [_json_list(text) for text in texts]


def _json_list(text: str) -> list:
    """A list the index stored as JSON; the empty one, nearly every document's, without the decoder (the
    snapshot decodes three per document: issue 27)."""
    return [] if text == "[]" else json.loads(text)


def _snippet(db: sqlite3.Connection, rid: int, query: Query) -> str:
    """One hit's snippet (``_SNIPPET``), from its partition's table."""
    (part,) = db.execute("SELECT part FROM docs WHERE rid = ?", (rid,)).fetchone()
    table = parts.fts(part)
    row = db.execute(f"SELECT {_SNIPPET.format(t=table, on=MARK_ON, off=MARK_OFF)} FROM {table} "
                     f"WHERE {table} MATCH ? AND rowid = ?", (_fts_match(query.clauses), rid)).fetchone()
    return row[0] if row else ""


def _beginning(db: sqlite3.Connection, rid: int, _query: Query | None = None) -> str:
    """The first 200 characters of a document's text, from its partition's table."""
    (part,) = db.execute("SELECT part FROM docs WHERE rid = ?", (rid,)).fetchone()
    row = db.execute(f"SELECT substr(content, 1, 200) FROM {parts.fts(part)} WHERE rowid = ?", (rid,)).fetchone()
    return row[0] if row else ""


def _visible_parts(db: sqlite3.Connection, query: Query) -> list[int]:
    """The partitions whose text a search of ``query``'s searcher reads (parts.visible_parts)."""
    visible, params = _visible(query.groups)
    return parts.visible_parts(db, visible, params)


def _conditions(db: sqlite3.Connection, query: Query, part: int | None = None) -> tuple[list[str], list]:
    """The WHERE conditions of a query (text, exclusions, filters, and who may see a document), for a
    statement over ``fts_<part> JOIN docs`` (a text search reads one partition's table per arm), or over
    ``docs`` alone without text: every hit, count and facet of a search goes through them."""
    where, params = [], []
    if query.has_text:
        where.append(f"{parts.fts(part)} MATCH ?")
        params.append(_fts_match(query.clauses))
    for excluded in query.excluded:  # only the tables the search reads, or the searcher may see
        tables = [part] if part is not None else _visible_parts(db, query)
        inner = parts.union([f"SELECT rowid FROM {parts.fts(n)} WHERE {parts.fts(n)} MATCH ?" for n in tables])
        where.append(f"docs.rid NOT IN ({inner})" if inner else "1")
        params.extend([_fts_match([(excluded,)])] * len(tables))
    for name, value, negated in query.filters:
        clause, values = _filter(name, value)
        where.append(f"NOT ({clause})" if negated else clause)
        params.extend(values)
    clause, values = _visible(query.groups)
    where.append(clause)
    params.extend(values)
    return where, params


def _counts(db: sqlite3.Connection, query: Query, facet_size: int,
            ranked: Ranked | None = None) -> tuple[int, dict[str, list[tuple[str, int]]]]:
    """(matching documents, the most frequent values of each FACET_FIELDS among them), in one pass
    over the matches: they are collected once (from the visible partitions' tables, or a semantic ranking's
    documents), then counted and grouped."""
    columns = ", ".join([*(f"docs.{n}" for n in (*FACET_FIELDS, "mtime_ns")), f"{_COPIES} AS copies"])
    if query.has_text and ranked is None:
        def arm(part: int) -> tuple[str, list]:
            table = parts.fts(part)
            where, params = _conditions(db, query, part)
            sql = f"SELECT {columns} FROM {table} JOIN docs ON docs.rid = {table}.rowid WHERE {' AND '.join(where)}"
            return sql, params

        matched, params = parts.each(_visible_parts(db, query), arm)
        if not matched:
            return 0, {name: [] for name in (*FACET_FIELDS, DATE_FACET)}
    else:  # filters only (no text is read), or the documents of a semantic ranking
        matched, params, _ = _matched(db, query, columns, ranked)
    counted = ["SELECT '', '', count(DISTINCT copies) FROM matched"]  # copies of one content are one hit
    for name in FACET_FIELDS:
        counted.append(f"SELECT * FROM (SELECT '{name}', {name}, count(*) AS n FROM matched WHERE {name} != '' "
                       f"GROUP BY {name} ORDER BY n DESC, {name} LIMIT {int(facet_size)})")
    for _label, value, low, high in date_buckets():  # bounds are whole numbers made here, never user text
        bounds = " AND ".join([*([f"mtime_ns >= {int(low)}"] if low is not None else []),
                               *([f"mtime_ns < {int(high)}"] if high is not None else [])])
        counted.append(f"SELECT '{DATE_FACET}', '{value}', count(*) FROM matched WHERE {bounds}")
    rows = db.execute(f"WITH matched AS MATERIALIZED ({matched}) " + " UNION ALL ".join(counted), params).fetchall()
    facets: dict[str, list[tuple[str, int]]] = {name: [] for name in (*FACET_FIELDS, DATE_FACET)}
    for name, value, n in rows[1:]:
        if n:
            facets[name].append((value, n))
    return rows[0][2], facets


def _quote(text: str) -> str:
    """An FTS5 string of ``text``; a NUL (which ends FTS5's string early: "unterminated string") is a space."""
    return '"' + text.replace('"', '""').replace("\x00", " ") + '"'


def _fts_phrases(query: Query) -> list[str]:
    """The FTS5 phrases of a query's text, each a MATCH expression of its own (scoring takes them one
    by one, as bm25() does): every term of every clause."""
    return [_fts_term(term) for clause in query.clauses for term in clause]


def _fts_term(term: Term) -> str:
    """A term as an FTS5 string (a phrase when it has several words), never FTS5 syntax."""
    return _quote(term.text) + ("*" if term.prefix else "")


def _fts_match(clauses) -> str:
    """The query's text as an FTS5 MATCH expression: every clause, each any of its terms."""
    return " AND ".join("(" + " OR ".join(_fts_term(t) for t in clause) + ")" for clause in clauses)


def _partition_names(db: sqlite3.Connection) -> None:
    """Migration to version 4: ``names`` keyed by partition too, so the exact-name boost of a search reads
    the names of the partitions its searcher may see only."""
    db.execute("DROP TABLE names")
    for statement in _SCHEMA.split(";"):
        if "names(" in statement:
            db.execute(statement)
    _fill_names(db)


def _fill_names(db: sqlite3.Connection) -> None:
    """Migration to versions 3 and 4: the name keys of every stored document, by partition."""
    db.execute("DELETE FROM names")
    for rid, part, filename, extension, title in db.execute(
            "SELECT rid, part, filename, extension, title FROM docs").fetchall():
        db.executemany("INSERT OR IGNORE INTO names(key, part, rid) VALUES (?, ?, ?)",
                       [(key, part, rid) for key in name_keys(filename, extension, title)])


def _exact_name_boost(query: Query, part: int) -> tuple[str, list]:
    """The score a document of partition ``part`` gets for a name equal to the query (query.name_keys), as
    SQL: the names of that partition only are read."""
    if not query.name_key:
        return "0", []
    sql = (f"(CASE WHEN docs.rid IN (SELECT rid FROM names WHERE key = ? AND part = {int(part)}) "
           f"THEN {EXACT_NAME_BOOST} ELSE 0 END)")
    return sql, [query.name_key]


def _glob_literal(text: str) -> str:
    """``text`` for GLOB with ``*`` as its only wildcard (``?`` and ``[`` match themselves)."""
    return re.sub(r"[?\[]", lambda m: f"[{m.group()}]", text)


def _filter(name: str, value: str) -> tuple[str, list]:
    if name in RANGE_FIELDS:
        low, high = range_of(name, value)
        column = RANGE_COLUMNS[name]
        bounds = [*([f"docs.{column} >= ?"] if low is not None else []), *([f"docs.{column} < ?"] if high is not None else [])]
        return "(" + " AND ".join(bounds or ["1"]) + ")", [b for b in (low, high) if b is not None]
    if name == "mimetype":
        return "docs.mimetype GLOB ?", [_glob_literal(value.lower())]
    if name == "extension":
        return "docs.extension = ?", [value.lower().lstrip(".")]
    if name == "path":  # a folder, by whole segments; the stored path has no scheme and ends with "/"
        return "instr(docs.path, ?) = 1", [value.rstrip("/") + "/"]
    if name == "url":
        return "instr(docs.url, ?) = 1", [value]
    # An auxiliary field: the exact value (as typed or lower-cased, since most fields are lower-cased),
    # or for a tokenized field every word of the value.
    words = tokens(value)
    word_match = " AND ".join(["instr(' ' || aux.tokens || ' ', ?) > 0"] * len(words)) or "0"
    clause = (f"EXISTS (SELECT 1 FROM aux WHERE aux.rid = docs.rid AND aux.name = ? AND aux.indexed AND "
              f"((NOT aux.tokenized AND aux.value IN (?, ?)) OR (aux.tokenized AND {word_match})))")
    return clause, [name, value, value.lower(), *(f" {w} " for w in words)]


def _visible(groups) -> tuple[str, list]:
    """Public documents and those sharing a group with the searcher, unless one of the searcher's
    groups (or EVERYONE, which every searcher holds) is denied."""
    held = [*groups, EVERYONE]
    marks = ", ".join("?" * len(held))
    not_denied = (f"(docs.denied = '[]' OR NOT EXISTS (SELECT 1 FROM json_each(docs.denied) AS d "
                  f"WHERE d.value IN ({marks})))")
    if not groups:
        return f"docs.groups = '[]' AND {not_denied}", held
    allowed = ", ".join("?" * len(groups))
    shared = f"EXISTS (SELECT 1 FROM json_each(docs.groups) AS g WHERE g.value IN ({allowed}))"
    return f"(docs.groups = '[]' OR {shared}) AND {not_denied}", [*groups, *held]


def _add_part_column(db: sqlite3.Connection) -> None:
    """Schema version 4: which partition's table holds a document's text (filled by parts.split_single)."""
    if "part" not in {row[1] for row in db.execute("PRAGMA table_info(docs)")}:
        db.execute("ALTER TABLE docs ADD COLUMN part INTEGER NOT NULL DEFAULT 0")


def _add_folder_column(db: sqlite3.Connection) -> None:
    """Schema version 8: each document's folder (its batch key), indexed, so that a listing finds the folder's
    documents with one look-up (:meth:`EmbeddedIndex.folder_rows`); an older index's rows get theirs here."""
    if "folder" not in {row[1] for row in db.execute("PRAGMA table_info(docs)")}:
        db.execute("ALTER TABLE docs ADD COLUMN folder TEXT NOT NULL DEFAULT ''")
        db.create_function("batch_key", 1, batches.batch_key, deterministic=True)
        db.execute("UPDATE docs SET folder = batch_key(url)")
    db.execute("CREATE INDEX IF NOT EXISTS docs_folder ON docs(folder)")


def _add_denied_column(db: sqlite3.Connection) -> None:
    """Schema version 3: an older ``docs`` table gets the ``denied`` column (every document: none)."""
    if "denied" not in {row[1] for row in db.execute("PRAGMA table_info(docs)")}:
        db.execute("ALTER TABLE docs ADD COLUMN denied TEXT NOT NULL DEFAULT '[]'")


# -- the index file ------------------------------------------------------------------------------

def _log_of(path: str) -> str:
    """The index's write-ahead log: SQLite keeps it beside the file a symbolic link at ``path`` leads to."""
    return os.path.realpath(path) + "-wal"


def _open_read_only(path: str) -> sqlite3.Connection:
    """Read access is enough to search. A WAL index needs its ``-shm`` file, which a reader who may not
    write the folder cannot create; when no ``-wal`` file exists (no crawl is writing, or one ended
    cleanly) nothing can change under the reader, so the file is opened as immutable."""
    uri = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"
    db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError:
        db.close()
        if os.path.exists(_log_of(path)):
            raise
    return sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None, check_same_thread=False)


def _refuse_a_folder(path: str) -> None:
    """``index.path`` names the index file; a folder there gave SQLite's "disk I/O error"."""
    if os.path.isdir(path):
        raise IndexUnavailable(f"{path}: is a folder; index.path names the index file, e.g. "
                               f"{os.path.join(path, 'index.sqlite')}")


def _refuse_read_only(path: str, folder: str) -> None:
    """Before a crawl does any work: it must write the index file and, beside it, its lock and journal
    files (SQLite opens a file it may not write read-only, without a word, and the crawl failed only at its
    first write, after all the listing and preparing)."""
    if os.path.exists(path) and not os.access(path, os.W_OK, effective_ids=True):
        raise IndexUnavailable(f"{path}: the index file is read-only; a crawl must write it (searching needs "
                               f"read access only)")
    if not os.access(folder, os.W_OK | os.X_OK, effective_ids=True):
        raise IndexUnavailable(f"{path}: the index's folder {folder} cannot be written; a crawl writes its lock "
                               f"and journal files beside the index")


def _stamp(path: str) -> list:
    """What tells that the index file is as a crawl left it: inode, size and modification time of the file and
    of its write-ahead log (none: a closed index has none, and an empty one holds nothing: a read-only reader,
    ``search`` or the crawl's own look at the index's owner, leaves one, which cost every crawl after it a
    ``quick_check`` of the whole file, ~2 s at 200,000 documents)."""
    stamp = []
    for name in (path, _log_of(path)):
        try:
            st = os.stat(name)
        except OSError:
            st = None
        empty_log = st is not None and name != path and st.st_size == 0
        stamp.append(None if st is None or empty_log else [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns])
    return stamp


def _read_stamp(path: str) -> list | None:
    """The stamp (:func:`_stamp`) the last crawl's driver left beside the index when it closed it, if any
    (anything else there, a folder, a pipe, a huge or garbled file, JSON nested too deep for the decoder
    (``[[[…``: RecursionError, which ended the crawl with a traceback), is no stamp: the file is checked)."""
    try:
        if not stat.S_ISREG(os.stat(path + STAMP_SUFFIX).st_mode):
            return None
        with open(path + STAMP_SUFFIX, "rb") as file:
            return json.loads(file.read(4096))
    except (OSError, ValueError, RecursionError):
        return None


def _write_stamp(path: str) -> None:
    """Leave the index file's stamp beside it: the next crawl checks the whole file only if it changed
    since (``PRAGMA quick_check`` reads every page: ~5 us per document, a tenth of an unchanged re-crawl's cost
    per file; issue 27). Written to a file of its own and renamed over the old one (a link there is
    replaced, not followed). Not writable: the next crawl checks it all."""
    stamp = _stamp(path)
    if stamp[0] is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".stamp-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(stamp, file)
        os.replace(name, path + STAMP_SUFFIX)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(name)


def _inspect(path: str, check: bool = True) -> int | None:
    """Before a crawl writes anything: the schema version of the index at ``path`` (None: no file, an
    empty file or an empty database). Raises :class:`IndexUnavailable`, leaving the file as it is,
    for a file that is not SQLite, a damaged one (looked for with ``check`` only: a file as the last crawl
    left it was whole then), or another program's database."""
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    try:
        db = _open_read_only(path)
    except sqlite3.DatabaseError as err:
        raise _unusable(path, err) from None
    try:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:
            return None
        if not ({"meta", "docs"} <= tables and {"docs_fts", "parts"} & tables):
            raise IndexUnavailable(f"{path}: a SQLite database of another program (tables: "
                                   f"{', '.join(sorted(tables)[:5])}), left as it is; beamtrawl indexes into "
                                   f"a new file or its own index")
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        damage = [line for (text,) in db.execute("PRAGMA quick_check(1)") for line in text.splitlines()
                  if not line.startswith("***")] if check else ["ok"]
    except sqlite3.DatabaseError as err:
        raise _unusable(path, err) from None
    finally:
        db.close()
    if damage != ["ok"]:  # the first problem, as one line
        raise IndexUnavailable(f"{path}: the index is damaged ({damage[0]}); left as it is: restore it from a "
                               f"backup or crawl into a new index file")
    if row is None:
        raise IndexUnavailable(f"{path}: the index has no schema version; left as it is")
    return _schema_version(path, row[0])


def _unusable(path: str, err: sqlite3.DatabaseError, doing: str = "") -> IndexUnavailable:
    """One line naming the file and what is wrong with it, for an error SQLite raised."""
    text = str(err)
    if "file is not a database" in text:
        why = "not a beamtrawl index (the file is not a SQLite database)"
    elif "malformed" in text:
        why = f"the index is damaged ({text}): restore it from a backup or crawl into a new index file"
    elif "unable to open" in text:
        why = (f"cannot open the index ({text}); a reader that may not write its folder can search it only "
               f"while no crawl is writing it")
    else:
        why = f"not a beamtrawl index ({text})"
    return IndexUnavailable(f"{path}: {doing + ': ' if doing else ''}{why}")


def _schema_version(path: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise IndexUnavailable(f"{path}: the index schema version {value[:40]!r} is not a number; "
                               f"left as it is") from None


# -- ranking over the documents a searcher may see -------------------------------------------------

def _prepare_ranking(db: sqlite3.Connection) -> None:
    """Create the per-partition statistics and the triggers that keep them, once for an index and again
    when ``_ACCESS_COLUMNS`` changed; an index from before them gets ``docs.length`` from FTS5."""
    key = ",".join(_ACCESS_COLUMNS)
    row = db.execute("SELECT value FROM meta WHERE key = 'ranking_key'").fetchone()
    if row is not None and row[0] == key:
        return
    for trigger in ("ranking_insert", "ranking_delete", "ranking_update"):
        db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    db.execute("DROP TABLE IF EXISTS ranking")
    if "length" not in {row[1] for row in db.execute("PRAGMA table_info(docs)")}:
        db.execute("ALTER TABLE docs ADD COLUMN length INTEGER NOT NULL DEFAULT 0")
    sizes = db.execute("SELECT id, sz FROM docs_fts_docsize") if parts.is_single_table(db) else parts.docsizes(db)
    db.executemany("UPDATE docs SET length = ? WHERE rid = ?", [(_length(size), rid) for rid, size in list(sizes)])
    columns = ", ".join(_ACCESS_COLUMNS)
    same = lambda row: " AND ".join(f"{c} = {row}.{c}" for c in _ACCESS_COLUMNS)
    add = (f"INSERT INTO ranking({columns}, docs, tokens) VALUES ({', '.join(f'NEW.{c}' for c in _ACCESS_COLUMNS)}, "
           f"1, NEW.length) ON CONFLICT({columns}) DO UPDATE SET docs = docs + 1, tokens = tokens + excluded.tokens;")
    remove = (f"UPDATE ranking SET docs = docs - 1, tokens = tokens - OLD.length WHERE {same('OLD')}; "
              f"DELETE FROM ranking WHERE docs = 0;")
    db.execute(f"CREATE TABLE ranking({', '.join(f'{c} TEXT NOT NULL' for c in _ACCESS_COLUMNS)}, "
               f"docs INTEGER NOT NULL, tokens INTEGER NOT NULL, PRIMARY KEY({columns}))")
    db.execute(f"INSERT INTO ranking SELECT {columns}, count(*), total(length) FROM docs GROUP BY {columns}")
    db.execute(f"CREATE TRIGGER ranking_insert AFTER INSERT ON docs BEGIN {add} END")
    db.execute(f"CREATE TRIGGER ranking_delete AFTER DELETE ON docs BEGIN {remove} END")
    db.execute(f"CREATE TRIGGER ranking_update AFTER UPDATE OF {columns}, length ON docs BEGIN {remove} {add} END")
    db.execute("INSERT OR REPLACE INTO meta VALUES('ranking_key', ?)", (key,))


def _varints(blob: bytes) -> list[int]:
    """The numbers of an FTS5 record: SQLite varints, big-endian groups of 7 bits, the high bit set on
    all but the last byte (FTS5's values stay far below the 9-byte form)."""
    numbers, value = [], 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            numbers.append(value)
            value = 0
    return numbers


def _length(size: bytes) -> int:
    """A document's tokens, all columns together, from its FTS5 ``docsize`` row."""
    return sum(_varints(size))


def _fts_totals(db: sqlite3.Connection, part: int) -> tuple[int, int]:
    """(rows, tokens) of a partition's FTS5 table, as bm25() reads them: its averages record (id 1)."""
    row = db.execute(f"SELECT block FROM {parts.fts(part)}_data WHERE id = 1").fetchone()
    numbers = (_varints(row[0]) if row else []) or [0]  # a table never written has an empty record
    return numbers[0], sum(numbers[1:])


def _score_column(db: sqlite3.Connection, query: Query):
    """part → the SQL of a text search's score column in that partition's arm: FTS5's bm25() with the
    document count, average length and per-phrase document counts of the documents the searcher may see.

    A phrase's weighted frequency in a document is read back from bm25() over its partition's table, whose
    statistics are known (``_fts_totals``, a count per phrase); the score is then computed again with the
    visible ones (``ranking``, and the phrase's count in every visible partition). With one phrase that
    happens in the search's own statement (``visible_bm25_<part>``); with more, bm25() sums over them, so
    each phrase is scored by a statement of its own and the sums are looked up by ``visible_score``. Only
    the tables of visible partitions are read."""
    visible, params = _visible(query.groups)
    seen_docs, seen_tokens = db.execute(
        f"SELECT total(docs), total(tokens) FROM ranking AS docs WHERE {visible}", params).fetchone()
    if not seen_docs:
        return lambda _part: "0.0"
    shown = parts.visible_parts(db, visible, params)
    totals = {n: _fts_totals(db, n) for n in shown}
    average_seen = seen_tokens / seen_docs
    phrases = _fts_phrases(query)
    holding = {(phrase, n): _holding(db, phrase, n) for phrase in phrases for n in shown}  # all of n: visible

    def rescorer(phrase: str, n: int):
        documents, tokens = totals[n]
        seen = sum(holding[(phrase, m)] for m in shown)
        return _rescorer(_idf(documents, holding[(phrase, n)]), _idf(seen_docs, seen), tokens / max(documents, 1),
                         average_seen)

    if len(phrases) == 1:
        for n in shown:
            db.create_function(f"visible_bm25_{n}", 2, rescorer(phrases[0], n), deterministic=True)
        return lambda n: f"visible_bm25_{n}(-bm25({parts.fts(n)}, {_WEIGHTS}), docs.length)"
    scores: dict[int, float] = {}
    matches = {n: json.dumps([rid for (rid,) in db.execute(f"SELECT rowid FROM {parts.fts(n)} WHERE {parts.fts(n)} "
                                                            f"MATCH ?", (_fts_match(query.clauses),))]) for n in shown}
    for phrase in phrases:
        for n in shown:
            rescore = rescorer(phrase, n)
            # only the documents the whole query matches are scored (the others are never looked up): a common
            # word's phrase holds nearly every document, and rescoring each in Python took seconds (issue 31).
            # ``+rowid``: a condition FTS5 leaves to SQLite, which it would otherwise run once per rowid listed,
            # counting the phrase's documents again each time.
            for rid, score, length in db.execute(
                    f"SELECT docs.rid, -bm25({parts.fts(n)}, {_WEIGHTS}), docs.length FROM {parts.fts(n)} JOIN docs "
                    f"ON docs.rid = {parts.fts(n)}.rowid WHERE {parts.fts(n)} MATCH ? AND +{parts.fts(n)}.rowid IN "
                    f"(SELECT value FROM json_each(?)) AND {visible}", [phrase, matches[n], *params]):
                scores[rid] = scores.get(rid, 0.0) + rescore(score, length)
    db.create_function("visible_score", 1, lambda rid: scores.get(rid, 0.0), deterministic=True)
    return lambda _part: "visible_score(docs.rid)"


def _holding(db: sqlite3.Connection, phrase: str, part: int) -> int:
    """Documents of a partition's table holding a phrase (bm25()'s count)."""
    table = parts.fts(part)
    return db.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (phrase,)).fetchone()[0]


def _rescorer(idf_all: float, idf_seen: float, average_all: float, average_seen: float):
    """(bm25() of one phrase over the whole table, document length) → the same with visible statistics."""
    def rescore(score: float, length: int) -> float:
        part = score / idf_all  # = f (k1 + 1) / (f + norm): f is the phrase's weighted frequency
        norm = _norm(length, average_all)
        frequency = part * norm / max(_BM25_K1 + 1 - part, 1e-12)
        return idf_seen * frequency * (_BM25_K1 + 1) / (frequency + _norm(length, average_seen))
    return rescore


def _idf(documents: float, holding: int) -> float:
    """FTS5's inverse document frequency, floored as bm25() floors it."""
    value = math.log((documents - holding + 0.5) / (holding + 0.5))
    return value if value > 0 else 1e-6


def _norm(length: int, average: float) -> float:
    return _BM25_K1 * (1 - _BM25_B + _BM25_B * length / average)


def _hit(row: Sequence, extra: dict, locations: list[str]) -> Hit:
    """A hit from a search's row (id, url, title, file name, MIME type, size, date, snippet, score)."""
    doc_id, url, title, filename, mimetype, size, last_modified, snippet, score = row
    plain, marked = render_snippet(snippet or "")
    return Hit(url=url, title=title or filename, snippet=plain, snippet_html=marked, score=round(score, 4),
               mimetype=mimetype, size=size, last_modified=last_modified, extra=extra, id=doc_id,
               locations=locations)
