"""A search reads nothing of what its searcher may not see (issue 26, item 5): with hidden documents
holding a word, an anonymous search for it took 8 times as long as for a word nobody has, since FTS5
read the hidden documents' postings. Each access partition's text is now a table of its own; these tests
check which tables a search's statements name (SQLite's trace of them), that moving access moves the
text, and that an index of schema version 3 is split when a crawl opens it. A semantic or hybrid search
(issue 31, item 4) reads the vector rows of the visible partitions only, searched exactly or through their
vector lists. The figures are bench/hidden_timing_bench.py's; its tiny mode runs here."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from beamtrawl.transforms.index import EmbeddedIndex, semantic, vector_lists
from beamtrawl.transforms.index.query import asking, parse_query

from tests.test_ranking import _docs

REPO = Path(__file__).resolve().parent.parent
PUBLIC = {"public/a.txt": "numbat survey at the creek"}
HIDDEN = {f"hr/{n}.txt": f"zanzibar salary review numbat memo{n}" for n in range(30)}  # distinct: copies are one hit


def _index(tmp_path: Path) -> EmbeddedIndex:
    index = EmbeddedIndex(str(tmp_path / "index.sqlite"))
    index.prepare()
    assert index.upsert(_docs(PUBLIC) + _docs(HIDDEN, ["hr"])) == []
    index.close()
    return EmbeddedIndex(str(tmp_path / "index.sqlite"))


def _tables_read(index: EmbeddedIndex, text: str, groups=()) -> tuple[set[str], int]:
    """The FTS tables a search's statements name (and the partitions whose names it reads, as their
    tables' names), and the total it finds."""
    statements = []
    index._reader().set_trace_callback(statements.append)
    page = index.search_page(parse_query(text, groups=groups), 20)
    index._reader().set_trace_callback(None)
    tables = {name for sql in statements for name in re.findall(r"\bfts_\d+\b", sql)}
    names = {f"fts_{n}" for sql in statements for n in re.findall(r"FROM names WHERE key = \? AND part = (\d+)", sql)}
    assert names <= tables, (names, tables)
    return tables, page.total


def _part(index: EmbeddedIndex, groups: str) -> str:
    (n,) = index._reader().execute("SELECT n FROM parts WHERE groups = ?", (groups,)).fetchone()
    return f"fts_{n}"


def test_a_search_reads_only_the_text_of_partitions_its_searcher_may_see(tmp_path):
    index = _index(tmp_path)
    public, hidden = _part(index, "[]"), _part(index, '["hr"]')
    for text in ("zanzibar", "numbat", "numb* -salary", "numbat OR zanzibar", '"salary review"', "zanzibar numbat"):
        tables, total = _tables_read(index, text)
        assert tables == {public}, (text, tables)
        assert total == (1 if text in ("numbat", "numb* -salary", "numbat OR zanzibar") else 0), (text, total)
        tables, total = _tables_read(index, text, groups=("board",))  # no partition of its own: the public one
        assert tables == {public}, (text, tables)
        tables, total = _tables_read(index, text, groups=("hr",))
        assert tables == {public, hidden}, (text, tables)
    assert _tables_read(index, "zanzibar", groups=("hr",))[1] == 30


def test_access_that_changes_moves_the_text_and_a_version_3_index_is_split(tmp_path):
    index = _index(tmp_path)
    docs = _docs({"hr/0.txt": HIDDEN["hr/0.txt"]}, ["hr"])
    writer = EmbeddedIndex(str(tmp_path / "index.sqlite"))
    writer.set_access([(docs[0].id, [], [])])  # made public
    writer.close()
    tables, total = _tables_read(EmbeddedIndex(str(tmp_path / "index.sqlite")), "zanzibar")
    assert total == 1 and tables == {_part(index, "[]")}
    # an index as schema version 3 kept it: one docs_fts table
    path = tmp_path / "index.sqlite"
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT rowid, title, content, headlines, metadata, filename, location FROM docs_fts").fetchall()
        for (n,) in db.execute("SELECT n FROM parts").fetchall():
            db.execute(f"DROP TABLE fts_{n}")
        db.execute("DROP VIEW docs_fts")
        db.execute("DROP TABLE parts")
        db.execute("CREATE VIRTUAL TABLE docs_fts USING fts5(title, content, headlines, metadata, filename, location, "
                   "tokenize = 'porter unicode61 remove_diacritics 2')")
        db.executemany("INSERT INTO docs_fts(rowid, title, content, headlines, metadata, filename, location) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        db.execute("UPDATE docs SET part = 0")
        db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    db.close()
    upgraded = EmbeddedIndex(str(path))
    upgraded.prepare()
    upgraded.close()
    again = EmbeddedIndex(str(path))
    assert _tables_read(again, "zanzibar")[1] == 1 and _tables_read(again, "zanzibar", groups=("hr",))[1] == 30
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM docs_fts").fetchone() == (31,)  # the view over every partition
    db.close()


# -- semantic and hybrid searches: the vector rows they read ---------------------------------------------------

NEAR = np.random.default_rng(3).standard_normal(256).astype(np.float32)
NEAR /= np.linalg.norm(NEAR)
_VECTOR_TABLES = re.compile(r"\b(?:FROM|JOIN)\s+(vectors|vector_list_rows|vector_lists|vector_changes)\b")


def _with_vectors(docs, close: bool, seed: int):
    """``docs`` with 5 passages each: random vectors, or (``close``) vectors near NEAR, the query's."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((len(docs), 5, 256)).astype(np.float32)
    rows = NEAR + 0.03 * rows if close else rows
    rows /= np.linalg.norm(rows, axis=2, keepdims=True)
    return [doc._replace(passages=[0, len(doc.content)] * 5, vectors=block.astype(np.float16).tobytes())
            for doc, block in zip(docs, rows, strict=True)]


@pytest.fixture(scope="module", params=["exact", "lists"])
def vector_index(request, tmp_path_factory):
    """Public documents, the group staff's, hr's (near the query's meaning, holding its words) and public ones
    that staff is denied: 200 passages a partition, searched exactly, or with lists built from 100 passages on."""
    docs = (_with_vectors(_docs({f"public/{n}.txt": f"numbat survey {n}" for n in range(40)}), False, 1)
            + _with_vectors(_docs({f"staff/{n}.txt": f"staff numbat memo {n}" for n in range(40)}, ["staff"]), False, 2)
            + _with_vectors(_docs({f"hr/{n}.txt": f"zanzibar salary numbat {n}" for n in range(40)}, ["hr"]), True, 3)
            + _with_vectors([d._replace(denied=["staff"]) for d in _docs(
                {f"notstaff/{n}.txt": f"zanzibar numbat notice {n}" for n in range(40)})], True, 4))
    path = tmp_path_factory.mktemp("vectors") / "index.sqlite"
    writer = EmbeddedIndex(str(path))
    writer.prepare()
    assert writer.upsert(docs) == []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vector_lists, "MIN_ROWS", 100 if request.param == "lists" else vector_lists.MIN_ROWS)
        writer.finish(succeeded=True)
    writer.close()
    with sqlite3.connect(path) as db:
        (lists,) = db.execute("SELECT count(DISTINCT part) FROM vector_list_rows").fetchone()
    db.close()
    assert lists == (4 if request.param == "lists" else 0)
    return path


def _vector_reads(path: Path, query):
    """(the statements of a search by a new reader that read a vector table, each with its values, from SQLite's
    trace of the reader's connection; the search's page)."""
    reader = EmbeddedIndex(str(path))
    db = reader._reader()
    statements = []
    db.set_trace_callback(statements.append)
    page = semantic.search_page(reader, query, lambda texts: [NEAR], 20)
    db.set_trace_callback(None)
    reader.close()
    return [sql for sql in statements if _VECTOR_TABLES.search(sql)], page


def _visible(path: Path, groups) -> tuple[set[str], set[int], set[int]]:
    """The URLs, documents (rids) and partitions a searcher holding ``groups`` may see, by a keyword search."""
    reader = EmbeddedIndex(str(path))
    urls = {hit.url for hit in reader.search(parse_query("numbat", groups=groups), 1000)}
    db = reader._reader()
    rids = {rid for rid, url in db.execute("SELECT rid, url FROM docs") if url in urls}
    parts = {part for (part,) in db.execute(f"SELECT DISTINCT part FROM docs WHERE rid IN ({','.join(map(str, rids))})")}
    reader.close()
    return urls, rids, parts


@pytest.mark.parametrize("groups", [("staff",), ()])
@pytest.mark.parametrize("mode", [semantic.SEMANTIC, semantic.HYBRID])
def test_a_search_by_meaning_reads_only_the_vector_rows_of_partitions_its_searcher_may_see(vector_index, mode,
                                                                                         groups, monkeypatch):
    """Every statement that reads ``vectors``, ``vector_list_rows``, ``vector_lists`` or ``vector_changes`` names
    the rows it reads by a visible partition or a visible document, and SQLite reads them by key (its plan searches,
    never scans, those tables): the rows of hidden partitions — the hr documents near the query, holding its word,
    and for staff the public ones it is denied — are never read, with or without lists. A search by filters admitting
    few documents, and more like this of a visible and of a hidden document, alike."""
    monkeypatch.setattr(vector_lists, "PROBES", 4)  # of a partition's 16 lists
    urls, rids, parts = _visible(vector_index, groups)
    assert len(urls) == 80 and len(parts) == 2  # public and staff, or public and those staff is denied
    reader = EmbeddedIndex(str(vector_index))
    db = reader._reader()
    hidden_id = db.execute("SELECT id FROM docs WHERE url LIKE '%/hr/0.txt'").fetchone()[0]
    seen_id = db.execute(f"SELECT id FROM docs WHERE rid = {min(rids)}").fetchone()[0]
    reader.close()
    queries = [(asking("zanzibar numbat", (), groups, "", mode), True),
               (asking("zanzibar numbat extension:txt -memo", (), groups, "", mode), False),  # few: read by document
               (asking("", (), groups, seen_id, mode), False)]
    planner = sqlite3.connect(vector_index)
    for query, every_part in queries:
        statements, page = _vector_reads(vector_index, query)
        assert statements and page.hits and {hit.url for hit in page.hits} <= urls, [hit.url for hit in page.hits]
        named_parts = set()
        for sql in statements:
            named_parts |= {int(n) for n in re.findall(r"\bpart = (\d+)", sql)}
            named_parts |= {int(n) for found in re.findall(r"\bpart IN \(([\d, ]+)\)", sql) for n in found.split(",")}
            named = {int(n) for n in re.findall(r"\brid = (\d+)", sql)}
            named |= {int(n) for found in re.findall(r"json_each\('(\[[\d, ]*\])'\)", sql) for n in json.loads(found)}
            assert re.search(r"\bpart (?:=|IN)", sql) or named, sql  # no statement reads a vector table unnamed
            assert named <= rids, (sql, named - rids)
            plan = " | ".join(row[-1] for row in planner.execute(f"EXPLAIN QUERY PLAN {sql}"))
            assert set(re.findall(r"\bSCAN (\w+)", plan)) <= {"json_each"}, (sql, plan)  # the rids it reads by
        assert named_parts <= parts, (named_parts, parts)
        if every_part:
            assert named_parts == parts, named_parts  # the trace sees the reads: each visible partition's
    planner.close()
    statements, page = _vector_reads(vector_index, asking("", (), groups, hidden_id, mode))
    assert statements == [] and page.hits == []  # like a document it may not see: its vectors are not read


def test_the_benchmark_runs_in_its_tiny_mode():
    done = subprocess.run([sys.executable, str(REPO / "bench" / "hidden_timing_bench.py"), "--tiny"],
                          capture_output=True, text=True, timeout=600, check=False, cwd=REPO)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    for mode in ("keyword", "semantic", "hybrid"):
        assert f"embedded, {mode}: p10 of an anonymous search" in done.stdout, done.stdout
    assert "vector lists (from 50,000 passages a partition): public 224, hidden none" in done.stdout
