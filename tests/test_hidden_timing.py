"""A search reads nothing of what its searcher may not see (issue 26, item 5): with hidden documents
holding a word, an anonymous search for it took 8 times as long as for a word nobody has, since FTS5
read the hidden documents' postings. Each access partition's text is now a table of its own; these tests
check which tables a search's statements name (SQLite's trace of them), that moving access moves the
text, and that an index of schema version 3 is split when a crawl opens it. The figures are
bench/hidden_timing_bench.py's; its tiny mode runs here."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from beamtrawl.transforms.index import EmbeddedIndex
from beamtrawl.transforms.index.query import parse_query

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


def test_the_benchmark_runs_in_its_tiny_mode():
    done = subprocess.run([sys.executable, str(REPO / "bench" / "hidden_timing_bench.py"), "--tiny"],
                          capture_output=True, text=True, timeout=600, check=False, cwd=REPO)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "embedded: p10 of an anonymous search" in done.stdout
