"""Page furniture (menus, sidebars, a page's header and footer) in a field of its own: searchable with a low
weight, never in the text or a snippet, on the embedded index and in the Delta table; an index or table made
before the field gets it when a crawl opens it. OpenSearch: tests/test_opensearch.py (Python's docs)."""

from __future__ import annotations

import sqlite3

import pyarrow as pa
import pytest
from beamtrawl.pipeline.config.loader import load_config
from beamtrawl.pipeline.dry_run import _index_line
from beamtrawl.pipeline.report import EXIT_OK
from beamtrawl.transforms.index import EmbeddedIndex, IndexUnavailable
from beamtrawl.transforms.index.query import parse_query
from beamtrawl.transforms.index.table import SCHEMA, DeltaIndex
from beamtrawl.transforms.preparators.html import prepare_html
from beamtrawl.transforms.prepare import PrepareOptions, make_document
from beamtrawl.transforms.records import Entry, RawDocument
from beamtrawl.transforms.urls import doc_id
from deltalake import DeltaTable

from tests.package_files import python_library_docs

# os.path.html's sidebar names the next page, "fileinput — Iterate over lines from multiple input streams";
# os.html's text mentions the fileinput module. curses.panel.html has a footer and "Report a Bug".
PAGES = ("os.html", "os.path.html", "curses.panel.html")


def _document(name: str):
    page = python_library_docs() / name
    url = page.as_uri()
    data = page.read_bytes()
    entry = Entry(id=doc_id(url), url=url, root=python_library_docs().as_uri() + "/", depth=0, size=len(data),
                  mtime_ns=1_700_000_000_000_000_000, identity="", content=None, mimetype="", outlinks=[], etag="",
                  http_last_modified="", source_url="", link_text="")
    return make_document(RawDocument(entry, "text/html", data, ""), prepare_html(data, url, "text/html", {}),
                         PrepareOptions((), "fingerprint-1", 2**24, 1000))


def _names(index: EmbeddedIndex, text: str) -> list[str]:
    return [hit.url.rsplit("/", 1)[-1] for hit in index.search(parse_query(text), 10)]


def test_a_sphinx_pages_sidebar_and_footer_are_furniture_not_text():
    doc = _document("curses.panel.html")
    for words in ("Report a Bug", "Previous topic", "Show Source", "Please donate"):
        assert words in doc.furniture and words not in doc.content, words
    assert "Panels are windows with the added feature of depth" in doc.content
    assert doc.furniture.count("Previous topic") == 1  # Python's docs print the sidebar twice
    assert "¶" not in doc.furniture and "function" not in doc.furniture  # no permalinks, no script


def test_a_word_only_a_sidebar_holds_finds_the_page_below_pages_whose_text_holds_it(tmp_path):
    """os.html is 12 times as long as os.path.html, whose sidebar names fileinput once, as os.html's text does:
    the short page's furniture still ranks below the long page's text."""
    index = EmbeddedIndex(str(tmp_path / "index.sqlite"))
    index.prepare()
    docs = [_document(name) for name in PAGES]
    docs += [_document(p.name) for p in sorted(python_library_docs().glob("asyncio-*.html"))]  # a site's lengths
    assert "fileinput" in docs[1].furniture and "fileinput" not in docs[1].content.lower()
    assert index.upsert(docs) == []
    assert _names(index, "fileinput") == ["os.html", "os.path.html"]
    assert len(index.search(parse_query('"report a bug"'), 100)) == len(docs)  # every page's footer, at a low weight
    for hit in index.search(parse_query('fileinput OR "report a bug" OR donate'), 10):
        assert not any(w in hit.snippet.lower() for w in ("report a bug", "donate", "previous topic")), hit
    assert [d.furniture for d in index.documents()] == [d.furniture for d in docs]  # export keeps it
    index.close()


def _version_5_index(path) -> list:
    """An index as schema version 5 kept it, holding os.html: its hits for "fileinput"."""
    index = EmbeddedIndex(str(path))
    index.prepare()
    assert index.upsert([_document("os.html")]) == []
    before = index.search(parse_query("fileinput"), 10)
    index.close()
    with sqlite3.connect(path) as db:  # what version 5 kept: six text columns per partition
        db.execute("DROP VIEW docs_fts")
        rows = db.execute("SELECT rowid, title, content, headlines, metadata, filename, location FROM fts_1").fetchall()
        db.execute("DROP TABLE fts_1")
        db.execute("CREATE VIRTUAL TABLE fts_1 USING fts5(title, content, headlines, metadata, filename, location, "
                   "tokenize = 'porter unicode61 remove_diacritics 2')")
        db.executemany("INSERT INTO fts_1(rowid, title, content, headlines, metadata, filename, location) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        db.execute("CREATE VIEW docs_fts AS SELECT rowid AS rowid, title, content, headlines, metadata, filename, "
                   "location FROM fts_1")
        db.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    db.close()
    return before


def test_an_index_made_before_the_field_gets_it_when_a_crawl_opens_it(tmp_path):
    """A schema version 5 index (partition tables without ``furniture``) keeps its documents and their
    scores, and is searched again after the crawl's prepare; until then a search asks for that crawl."""
    path = tmp_path / "index.sqlite"
    before = _version_5_index(path)
    with pytest.raises(IndexUnavailable, match="index schema version 5, .* run beamtrawl crawl once to upgrade it"):
        EmbeddedIndex(str(path)).check()
    upgraded = EmbeddedIndex(str(path))
    upgraded.prepare()
    assert [h.score for h in upgraded.search(parse_query("fileinput"), 10)] == [h.score for h in before]
    assert upgraded.upsert([_document("os.path.html")]) == []
    assert _names(upgraded, "fileinput") == ["os.html", "os.path.html"]
    upgraded.close()


def test_a_dry_run_into_an_older_index_says_the_crawl_upgrades_it(tmp_path, make_config):
    """Not exit 2 with a search's "run beamtrawl crawl once": that crawl is what the dry run is checking."""
    _version_5_index(tmp_path / "index.sqlite")
    config = load_config(str(make_config(tmp_path)))
    line, code, documents = _index_line(config)
    assert (code, documents) == (EXIT_OK, 1)
    assert line.endswith("index.sqlite: reachable; made by an older beamtrawl, this crawl upgrades it"), line


def test_a_table_made_before_the_field_gets_the_column_and_keeps_its_rows(tmp_path):
    """A Delta table written without ``furniture`` (schema version 1 as first released): the next crawl adds
    the column in a transaction of its own; the old rows read as empty furniture, the new ones carry it."""
    from deltalake import write_deltalake

    uri = str(tmp_path / "t.delta")
    old_schema = pa.schema([f for f in SCHEMA if f.name != "furniture"])
    target = DeltaIndex(uri)
    target.prepare()  # a new table has the column
    assert "furniture" in {f.name for f in DeltaTable(uri).schema().fields}
    target.finish(succeeded=True)
    old = str(tmp_path / "old.delta")
    table = DeltaTable.create(old, old_schema, name="beamtrawl", configuration=dict(DeltaTable(uri).metadata().configuration),
                              raise_if_key_not_exists=False)
    first = _document("os.html")
    from beamtrawl.transforms.index.table import to_arrow

    write_deltalake(table, to_arrow([first], "old-crawl").select(old_schema.names), mode="append")
    target = DeltaIndex(old)
    target.prepare()
    target.upsert([_document("os.path.html")])
    target.commit(target.take_staged())
    target.finish(succeeded=True)
    rows = {r["filename"]: r for r in DeltaTable(old).to_pyarrow_table().to_pylist()}
    assert rows["os.html"]["furniture"] is None and rows["os.html"]["content"] == first.content
    assert "fileinput" in rows["os.path.html"]["furniture"]
    assert {d.filename: d.furniture for d in DeltaIndex(old).documents()}["os.html"] == ""
