"""The embedded index: one SQLite file with an FTS5 table, BM25 ranking and highlighted snippets.

Several worker processes write at once: WAL journaling and one ``BEGIN IMMEDIATE`` transaction per
batch, taken under an exclusive lock on ``<index>.lock``. The lock hands the index over the moment a
writer is done, where SQLite's busy handler would poll with sleeps of up to 100 ms; readers (the
snapshot, searches) are never blocked. ``docs`` holds stored fields and freshness state;
``docs_fts`` (rowid = ``docs.rid``) holds the searchable text; ``aux`` holds auxiliary fields, one
row per field with its flags (and, for tokenized fields, its words in ``tokens``). A search probes
``aux`` by (rid, name) for each candidate document, so the table needs no index of its own.

Schema version 2 added ``aux``, version 3 the column ``denied`` (groups that may not see a document).
An older index is migrated when a crawl opens it (the table and column are added); its documents get
their auxiliary fields when they are re-prepared, which that crawl does because the preparation
fingerprint covers the field definitions.

Access groups and denies are enforced inside the one SQL statement of a search (``_visible``), so
ranking, snippets, exclusions and filters only ever see documents the searcher may read.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
from collections.abc import Iterator, Sequence

from transforms.enrich.auxfields import tokens
from transforms.index.base import MARK_OFF, MARK_ON, Hit, IndexTarget, IndexUnavailable, render_snippet
from transforms.index.query import Query
from transforms.records import EVERYONE, IndexDoc, SnapshotEntry

SCHEMA_VERSION = 3
SPLIT_ROWS = 50_000

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
    indexed_at TEXT NOT NULL
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
CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5(
    title, content, headlines, metadata, filename, location,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
"""
_STORED = ("id", "url", "root", "title", "mimetype", "extension", "filename", "path", "size", "mtime_ns",
           "last_modified", "groups", "denied", "preparation_error", "content_hash", "etag", "http_last_modified",
           "prep_fingerprint", "outlinks", "indexed_at")
_UPSERT = (f"INSERT INTO docs({', '.join(_STORED)}) VALUES ({', '.join('?' * len(_STORED))}) "
           f"ON CONFLICT(id) DO UPDATE SET {', '.join(f'{c}=excluded.{c}' for c in _STORED[1:])} RETURNING rid")
_BM25 = "bm25(docs_fts, 10.0, 1.0, 4.0, 2.0, 3.0, 1.0)"  # title weighs most, then headlines


class EmbeddedIndex(IndexTarget):
    local_only = True

    def __init__(self, path: str):
        self.path = path
        self._db: sqlite3.Connection | None = None

    def __getstate__(self):
        return {"path": self.path}

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

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

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
        with self._transaction() as db:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
        db = self._connect()
        row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            db.execute("INSERT INTO meta VALUES('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) in (1, 2):  # version 2 added the aux table (created above), 3 the denied column
            _add_denied_column(db)
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
        elif int(row[0]) != SCHEMA_VERSION:
            raise IndexUnavailable(f"{self.path}: index schema version {row[0]}, this beamtrawl reads version "
                              f"{SCHEMA_VERSION}; crawl into a new index file")

    def check(self) -> None:
        """For searching: the file must exist and be an index."""
        if not os.path.exists(self.path):
            raise IndexUnavailable(f"{self.path}: no index here yet; run beamtrawl crawl first")
        try:
            row = self._connect().execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as err:
            raise IndexUnavailable(f"{self.path}: not a beamtrawl index ({err})") from None
        if row is not None and int(row[0]) != SCHEMA_VERSION:
            raise IndexUnavailable(f"{self.path}: index schema version {row[0]}, this beamtrawl searches version "
                                   f"{SCHEMA_VERSION}; run beamtrawl crawl once to upgrade it")

    def read_state(self) -> dict | None:
        row = self._connect().execute("SELECT value FROM meta WHERE key = 'crawl_state'").fetchone()
        return json.loads(row[0]) if row else None

    def write_state(self, state: dict | None) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM meta WHERE key = 'crawl_state'")
            if state is not None:
                db.execute("INSERT INTO meta VALUES('crawl_state', ?)", (json.dumps(state, sort_keys=True),))

    def snapshot_splits(self) -> list[tuple[int, int]]:
        low, high = self._connect().execute("SELECT MIN(rid), MAX(rid) FROM docs").fetchone()
        if low is None:
            return []
        return [(start, min(start + SPLIT_ROWS, high + 1)) for start in range(low, high + 1, SPLIT_ROWS)]

    # -- workers -----------------------------------------------------------------------------
    def read_snapshot(self, split: tuple[int, int]) -> Iterator[SnapshotEntry]:
        rows = self._connect().execute(
            "SELECT id, url, size, mtime_ns, prep_fingerprint, content_hash, etag, http_last_modified, groups, "
            "outlinks, denied FROM docs WHERE rid >= ? AND rid < ?", split)
        for *row, groups, outlinks, denied in rows:
            yield SnapshotEntry(*row, json.loads(groups), json.loads(outlinks), json.loads(denied))

    def upsert(self, docs: Sequence[IndexDoc]) -> list[tuple[str, str]]:
        try:
            with self._transaction() as db:
                for doc in docs:
                    self._write(db, doc)
            return []
        except sqlite3.Error:
            pass
        failures = []  # the batch failed: write one by one to find which documents cannot be written
        for doc in docs:
            try:
                with self._transaction() as db:
                    self._write(db, doc)
            except sqlite3.Error as err:
                failures.append((doc.url, f"index write failed: {err}"))
        return failures

    @staticmethod
    def _write(db: sqlite3.Connection, doc: IndexDoc) -> None:
        values = doc._asdict()
        values["groups"] = json.dumps(list(doc.groups))
        values["denied"] = json.dumps(list(doc.denied))
        values["outlinks"] = json.dumps(list(doc.outlinks))
        (rid,) = db.execute(_UPSERT, [values[c] for c in _STORED]).fetchone()
        db.execute("DELETE FROM docs_fts WHERE rowid = ?", (rid,))
        db.execute("INSERT INTO docs_fts(rowid, title, content, headlines, metadata, filename, location) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)",
                   (rid, doc.title, doc.content, doc.headlines, doc.metadata, doc.filename, doc.url))
        db.execute("DELETE FROM aux WHERE rid = ?", (rid,))
        # A field neither stored nor matched exactly (regain's `location`) keeps only its words.
        db.executemany("INSERT OR REPLACE INTO aux VALUES (?, ?, ?, ?, ?, ?, ?)", [
            (rid, a.name, a.value if a.store or not a.tokenize else "", " ".join(tokens(a.value)) if a.tokenize else "",
             a.store, a.index, a.tokenize)
            for a in getattr(doc, "aux", ())])

    def set_access(self, changes: Sequence[tuple[str, Sequence[str], Sequence[str]]]) -> None:
        with self._transaction() as db:
            db.executemany("UPDATE docs SET groups = ?, denied = ? WHERE id = ?",
                           [(json.dumps(list(groups)), json.dumps(list(denied)), i) for i, groups, denied in changes])

    def delete(self, ids: Sequence[str]) -> None:
        marks = ", ".join("?" * len(ids))
        with self._transaction() as db:
            db.execute(f"DELETE FROM docs_fts WHERE rowid IN (SELECT rid FROM docs WHERE id IN ({marks}))", ids)
            db.execute(f"DELETE FROM aux WHERE rid IN (SELECT rid FROM docs WHERE id IN ({marks}))", ids)
            db.execute(f"DELETE FROM docs WHERE id IN ({marks})", ids)

    # -- searching ---------------------------------------------------------------------------
    def count(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM docs").fetchone()[0]

    def search(self, query: Query, limit: int) -> list[Hit]:
        where, params = [], []
        if query.has_text:
            where.append("docs_fts MATCH ?")
            params.append(_fts_expression(query.words, query.phrases))
        for excluded in query.excluded:
            where.append("docs.rid NOT IN (SELECT rowid FROM docs_fts WHERE docs_fts MATCH ?)")
            params.append(_fts_expression([excluded], []))
        for name, value, negated in query.filters:
            clause, values = _filter(name, value)
            where.append(f"NOT ({clause})" if negated else clause)
            params.extend(values)
        clause, values = _visible(query.groups)
        where.append(clause)
        params.extend(values)
        if query.has_text:
            select = (f"SELECT docs.rid, docs.url, docs.title, docs.filename, docs.mimetype, docs.size, "
                      f"docs.last_modified, "
                      f"snippet(docs_fts, -1, '{MARK_ON}', '{MARK_OFF}', '…', 24), -{_BM25} AS score "
                      f"FROM docs_fts JOIN docs ON docs.rid = docs_fts.rowid")
            order = "ORDER BY score DESC, docs.url"
        else:
            select = ("SELECT docs.rid, docs.url, docs.title, docs.filename, docs.mimetype, docs.size, "
                      "docs.last_modified, substr(docs_fts.content, 1, 200), 0.0 AS score "
                      "FROM docs JOIN docs_fts ON docs.rid = docs_fts.rowid")
            order = "ORDER BY docs.url"
        sql = f"{select} WHERE {' AND '.join(where)} {order} LIMIT ?"
        try:
            db = self._connect()
            rows = db.execute(sql, [*params, limit]).fetchall()
            stored: dict[int, dict[str, str]] = {}
            rids = [row[0] for row in rows]
            for rid, name, value in db.execute(
                    f"SELECT rid, name, value FROM aux WHERE stored AND rid IN ({', '.join('?' * len(rids))})", rids):
                stored.setdefault(rid, {})[name] = value
        except sqlite3.OperationalError as err:
            raise IndexUnavailable(f"cannot search {self.path}: {err}") from None
        return [_hit(*row[1:], extra=stored.get(row[0], {})) for row in rows]


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _fts_expression(words: list[str], phrases: list[str]) -> str:
    parts = [_quote(w[:-1]) + "*" if w.endswith("*") else _quote(w) for w in words]
    parts += [_quote(p) for p in phrases]
    return " AND ".join(parts)


def _filter(name: str, value: str) -> tuple[str, list]:
    if name == "mimetype":
        return "docs.mimetype GLOB ?", [value.lower()]
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


def _add_denied_column(db: sqlite3.Connection) -> None:
    """Schema version 3: an older ``docs`` table gets the ``denied`` column (every document: none)."""
    if "denied" not in {row[1] for row in db.execute("PRAGMA table_info(docs)")}:
        db.execute("ALTER TABLE docs ADD COLUMN denied TEXT NOT NULL DEFAULT '[]'")


def _hit(url, title, filename, mimetype, size, last_modified, snippet, score, extra=None) -> Hit:
    plain, marked = render_snippet(snippet or "")
    return Hit(url=url, title=title or filename, snippet=plain, snippet_html=marked, score=round(score, 4),
               mimetype=mimetype, size=size, last_modified=last_modified, extra=extra or {})
