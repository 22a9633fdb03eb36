"""The embedded index's text, one FTS5 table per access partition (issue 26, item 5).

FTS5 reads a word's whole posting list to answer a MATCH, so in one table a search for a word took longer
the more documents the searcher may not see held it (3,000 hidden documents: 0.33 ms against 0.04 ms for a
word nobody has). So each access partition — one distinct (``groups``, ``denied``) of ``docs``, numbered in
``parts`` — has its text in a table of its own, ``fts_<n>`` (rowid = ``docs.rid``), and a search names the
tables of the partitions its searcher may see only (:func:`visible_parts`): the postings of the others are
never read, as OpenSearch searches only the indices of the visible partitions. ``docs.part`` says which
table holds a document's text; a document whose access changes moves to its new partition's table.

``docs_fts`` is a view over every partition's table (for reading text back: tests, tools); searches never
use it. An index from before (one ``docs_fts`` table) is split when a crawl opens it (:func:`split_single`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

COLUMNS = ("title", "content", "headlines", "metadata", "filename", "location", "furniture")
_TOKENIZER = "porter unicode61 remove_diacritics 2"
#: SQLite's bound on the terms of one compound SELECT is 500: arms go in nested groups of this many.
ARMS_PER_GROUP = 400


def fts(part: int) -> str:
    """The name of partition ``part``'s text table."""
    return f"fts_{int(part)}"


def part_of(db: sqlite3.Connection, groups: str, denied: str) -> int:
    """The partition number of (``groups``, ``denied``) as ``docs`` stores them; a new one gets its table."""
    row = db.execute("SELECT n FROM parts WHERE groups = ? AND denied = ?", (groups, denied)).fetchone()
    if row is not None:
        return row[0]
    (part,) = db.execute("INSERT INTO parts(groups, denied) VALUES (?, ?) RETURNING n", (groups, denied)).fetchone()
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts(part)} USING fts5({', '.join(COLUMNS)}, "
               f"tokenize = '{_TOKENIZER}')")
    refresh_view(db)
    return part


def all_parts(db: sqlite3.Connection) -> list[int]:
    return [n for (n,) in db.execute("SELECT n FROM parts ORDER BY n")]


def refresh_view(db: sqlite3.Connection) -> None:
    """``docs_fts``: every partition's text under one name, for reading (never for searching)."""
    if is_single_table(db):  # being split (split_single): the view replaces the table afterwards
        return
    db.execute("DROP VIEW IF EXISTS docs_fts")
    arms = [f"SELECT rowid AS rowid, {', '.join(COLUMNS)} FROM {fts(n)}" for n in all_parts(db)]
    empty = f"SELECT NULL AS rowid, {', '.join(f'NULL AS {c}' for c in COLUMNS)} WHERE 0"
    db.execute(f"CREATE VIEW docs_fts AS {union(arms or [empty])}")


def visible_parts(db: sqlite3.Connection, visible: str, params: Sequence) -> list[int]:
    """The partitions whose documents a searcher may see, by the search's own visibility clause (written
    for ``docs``: ``parts`` has the same access columns)."""
    return [n for (n,) in db.execute(f"SELECT n FROM parts AS docs WHERE {visible} ORDER BY n", list(params))]


def union(arms: Sequence[str]) -> str:
    """``arms`` as one UNION ALL, nested in groups of ARMS_PER_GROUP so that any number of partitions fit."""
    if len(arms) <= ARMS_PER_GROUP:
        return " UNION ALL ".join(arms)
    groups = [arms[i:i + ARMS_PER_GROUP] for i in range(0, len(arms), ARMS_PER_GROUP)]
    return union([f"SELECT * FROM ({' UNION ALL '.join(group)})" for group in groups])


def each(parts: Sequence[int], arm: Callable[[int], tuple[str, list]]) -> tuple[str, list]:
    """(SQL, params) of ``arm(part)`` for every part, as one UNION ALL."""
    built = [arm(n) for n in parts]
    return union([sql for sql, _ in built]), [p for _, params in built for p in params]


def move(db: sqlite3.Connection, rid: int, old: int, new: int) -> None:
    """A document's text from partition ``old``'s table to ``new``'s (its access changed)."""
    columns = ", ".join(COLUMNS)
    db.execute(f"INSERT INTO {fts(new)}(rowid, {columns}) SELECT rowid, {columns} FROM {fts(old)} WHERE rowid = ?",
               (rid,))
    db.execute(f"DELETE FROM {fts(old)} WHERE rowid = ?", (rid,))


def is_single_table(db: sqlite3.Connection) -> bool:
    """Does the index keep its text in the one ``docs_fts`` table of schema version 3 and before?"""
    row = db.execute("SELECT type FROM sqlite_master WHERE name = 'docs_fts'").fetchone()
    return row is not None and row[0] == "table"


def columns_of(db: sqlite3.Connection, table: str) -> list[str]:
    """The text columns ``table`` has (an older index's lack the later ones of COLUMNS)."""
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def split_single(db: sqlite3.Connection) -> None:
    """Migration to schema version 4: the one ``docs_fts`` table's rows into their partitions' tables."""
    old = columns_of(db, "docs_fts")
    columns = ", ".join(old)
    for groups, denied in db.execute("SELECT DISTINCT groups, denied FROM docs").fetchall():
        part = part_of(db, groups, denied)
        db.execute(f"INSERT INTO {fts(part)}(rowid, {columns}) SELECT f.rowid, {', '.join('f.' + c for c in old)} "
                   f"FROM docs_fts AS f JOIN docs ON docs.rid = f.rowid WHERE docs.groups = ? AND docs.denied = ?",
                   (groups, denied))
        db.execute("UPDATE docs SET part = ? WHERE groups = ? AND denied = ?", (part, groups, denied))
    db.execute("DROP TABLE docs_fts")
    refresh_view(db)


def add_columns(db: sqlite3.Connection) -> None:
    """Migration to schema version 6 (``furniture``): FTS5 tables cannot gain a column, so a partition's
    table without one of COLUMNS is made again with all of them and its rows copied (the text once)."""
    db.execute("DROP VIEW IF EXISTS docs_fts")
    for n in all_parts(db):
        old = columns_of(db, fts(n))
        if old == list(COLUMNS):
            continue
        db.execute(f"CREATE VIRTUAL TABLE {fts(n)}_new USING fts5({', '.join(COLUMNS)}, tokenize = '{_TOKENIZER}')")
        db.execute(f"INSERT INTO {fts(n)}_new(rowid, {', '.join(old)}) SELECT rowid, {', '.join(old)} FROM {fts(n)}")
        db.execute(f"DROP TABLE {fts(n)}")
        db.execute(f"ALTER TABLE {fts(n)}_new RENAME TO {fts(n)}")
    refresh_view(db)


def docsizes(db: sqlite3.Connection):
    """(rid, FTS5 docsize record) of every document, from every partition's table."""
    for n in all_parts(db):
        yield from db.execute(f"SELECT id, sz FROM {fts(n)}_docsize")
