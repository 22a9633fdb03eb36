"""The embedded index file (issue 15, items 9-11): searching with read access only, another program's
database refused untouched, and one clear line naming the file for a garbage, mis-versioned or damaged
index, from ``beamtrawl crawl`` (before crawling) and from ``beamtrawl search``."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from beamtrawl.transforms.index import EmbeddedIndex
from beamtrawl.transforms.index import sqlite as sqlite_index

from tests.conftest import beamtrawl
from tests.test_ranking import PUBLIC, _docs


def _index(path: Path) -> Path:
    index = EmbeddedIndex(str(path))
    index.prepare()
    assert index.upsert(_docs(PUBLIC)) == []
    index.close()
    return path


@pytest.fixture
def files(tmp_path, make_config):
    """A folder to crawl and the configuration that crawls it into ``tmp_path/index.sqlite``."""
    root = tmp_path / "files"
    root.mkdir()
    (root / "a.txt").write_text("alpha merger notes\n")
    return make_config(root), tmp_path / "index.sqlite"


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def test_search_needs_read_access_only(tmp_path, make_config):
    folder = tmp_path / "shared"
    folder.mkdir()
    index = _index(folder / "index.sqlite")
    assert not Path(f"{index}-wal").exists()
    config = make_config(tmp_path, index={"path": str(index)})
    before = index.read_bytes()
    index.chmod(0o444)
    folder.chmod(0o555)
    try:  # as root without the capabilities that override permissions: a reader who may not write
        done = beamtrawl("search", "merger", "--config", str(config))
    finally:
        folder.chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert "public/merger.txt" in done.stdout
    assert index.read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["index.sqlite", "index.sqlite.checked", "index.sqlite.lock"]


def test_a_reader_leaves_the_index_as_the_crawl_stamped_it(files):
    """A read-only reader (``search``, a crawl's look at the index's owner) leaves an empty write-ahead log: the
    file is still as the last crawl left it, so the next crawl does not check all of it for damage again."""
    config, path = files
    assert beamtrawl("crawl", str(config)).returncode == 0
    assert beamtrawl("search", "merger", "--config", str(config)).returncode == 0
    EmbeddedIndex(str(path)).read_owner()
    assert Path(f"{path}-wal").stat().st_size == 0
    assert sqlite_index._stamp(str(path)) == sqlite_index._read_stamp(str(path))


def test_a_stamp_that_is_no_stamp_leaves_a_healthy_index_usable(files):
    """Whatever is in ``index.sqlite.checked`` (here JSON nested deeper than the decoder goes), the file is then
    checked, and a healthy one crawled; it refused it with "maximum recursion depth exceeded", exit 2."""
    config, path = files
    assert beamtrawl("crawl", str(config)).returncode == 0
    Path(f"{path}.checked").write_text("[" * 4000)
    assert sqlite_index._read_stamp(str(path)) is None
    crawled = beamtrawl("crawl", str(config))
    assert crawled.returncode == 0, crawled.stderr
    assert sqlite_index._stamp(str(path)) == sqlite_index._read_stamp(str(path))  # stamped again


def test_the_write_ahead_log_of_an_index_reached_by_a_symbolic_link_is_seen(tmp_path):
    """SQLite keeps the log beside the file a link at ``index.path`` leads to: a log with writes in it changes
    the stamp (the next crawl checks the file), and a reader does not open the file as immutable under it."""
    real, linked = _index(tmp_path / "real.sqlite"), tmp_path / "elsewhere" / "index.sqlite"
    linked.parent.mkdir()
    linked.symlink_to(real)
    quiet = sqlite_index._stamp(str(linked))
    writer = sqlite3.connect(real)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("UPDATE docs SET title = 'changed' WHERE rowid = (SELECT min(rowid) FROM docs)")
    writer.commit()
    try:
        assert Path(f"{real}-wal").stat().st_size > 0 and not Path(f"{linked}-wal").exists()
        assert sqlite_index._stamp(str(linked)) != quiet
        assert sqlite_index._log_of(str(linked)) == f"{real}-wal"
    finally:
        writer.close()


def test_a_crawl_refuses_another_programs_database_and_leaves_it_untouched(files):
    config, path = files
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
    db.executemany("INSERT INTO notes(body) VALUES (?)", [(f"note {n}",) for n in range(100)])
    db.commit()
    db.close()
    before = path.read_bytes()
    done = beamtrawl("crawl", str(config))
    assert done.returncode == 2
    line = _one_line(done.stderr)
    assert str(path) in line and "another program (tables: notes)" in line, line
    assert path.read_bytes() == before
    assert not Path(f"{path}-wal").exists() and not Path(f"{path}.lock").exists()


def _garbage(path: Path) -> None:
    path.write_bytes(b"these are someone's notes, not a database\n" * 200)


def _version_two(path: Path) -> None:
    _index(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = 'two' WHERE key = 'schema_version'")
    db.close()


def _zeroed_page(path: Path) -> None:
    _index(path)
    assert Path(f"{path}.checked").exists()  # the crawl's stamp: damage done after it is looked for all the same
    with sqlite3.connect(path) as db:
        (page,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'docs'").fetchone()
        (size,) = db.execute("PRAGMA page_size").fetchone()
    db.close()
    with open(path, "r+b") as file:
        file.seek((page - 1) * size)
        file.write(bytes(size))


def _zeroed_page_and_a_deep_stamp(path: Path) -> None:
    """The stamp replaced by JSON nested deeper than the decoder goes (RecursionError, not ValueError): the crawl
    ended with "beamtrawl: maximum recursion depth exceeded while decoding a JSON array…" instead of checking."""
    _zeroed_page(path)
    Path(f"{path}.checked").write_text("[" * 4000)


@pytest.mark.parametrize("damage, crawl_says, search_says", [
    (_garbage, "the file is not a SQLite database", "the file is not a SQLite database"),
    (_version_two, "schema version 'two' is not a number", "schema version 'two' is not a number"),
    (_zeroed_page, "the index is damaged", "the index is damaged"),
    (_zeroed_page_and_a_deep_stamp, "the index is damaged", "the index is damaged"),
])
def test_a_bad_index_file_is_one_line_naming_it(files, damage, crawl_says, search_says):
    config, path = files
    damage(path)
    before = path.read_bytes()
    crawled = beamtrawl("crawl", str(config))
    assert crawled.returncode == 2
    line = _one_line(crawled.stderr)
    assert line.startswith(f"beamtrawl: {path}: ") and crawl_says in line, line
    assert "crawling" not in crawled.stdout + crawled.stderr  # refused before crawling
    assert path.read_bytes() == before
    searched = beamtrawl("search", "merger", "--config", str(config))
    assert searched.returncode == 2
    line = _one_line(searched.stderr)
    assert f"{path}: " in line and search_says in line, line
    os.remove(path)


def test_an_index_from_before_ranking_statistics_is_upgraded_by_a_crawl(tmp_path):
    from beamtrawl.transforms.index import IndexUnavailable
    from beamtrawl.transforms.index.query import parse_query

    old, fresh = tmp_path / "old.sqlite", _index(tmp_path / "fresh.sqlite")
    _index(old)
    with sqlite3.connect(old) as db:
        for trigger in ("ranking_insert", "ranking_delete", "ranking_update"):
            db.execute(f"DROP TRIGGER {trigger}")
        db.execute("DROP TABLE ranking")
        db.execute("ALTER TABLE docs DROP COLUMN length")
        db.execute("DELETE FROM meta WHERE key = 'ranking_key'")
    db.close()
    with pytest.raises(IndexUnavailable, match="no ranking statistics yet .* run beamtrawl crawl once"):
        EmbeddedIndex(str(old)).check()
    upgraded = EmbeddedIndex(str(old))
    upgraded.prepare()  # what a crawl does first
    upgraded.check()
    query = parse_query("monday merger")
    assert [(h.url, h.score) for h in upgraded.search(query, 10)] == \
        [(h.url, h.score) for h in EmbeddedIndex(str(fresh)).search(query, 10)]


def test_a_folder_or_a_read_only_file_is_refused_before_any_work(files, tmp_path, make_config):
    """Issue 26, item 7: a folder as index.path said "disk I/O error"; a read-only index was refused only
    at its first write, after the whole crawl (14 s), with a "delete failed" line per document."""
    config, path = files
    assert beamtrawl("crawl", str(config)).returncode == 0
    before = path.read_bytes()
    path.chmod(0o444)
    try:
        crawled = beamtrawl("crawl", str(config))
        assert crawled.returncode == 2
        line = _one_line(crawled.stderr)
        assert line == f"beamtrawl: {path}: the index file is read-only; a crawl must write it (searching needs " \
                       f"read access only)", line
        assert "crawling" not in crawled.stdout + crawled.stderr  # refused before crawling
        assert path.read_bytes() == before
        assert beamtrawl("search", "merger", "--config", str(config)).returncode == 0  # reading is enough
    finally:
        path.chmod(0o644)
    folder = tmp_path / "a folder"
    folder.mkdir()
    named = make_config(tmp_path / "files", name="folder.yaml", index={"path": str(folder)})
    for args in (("crawl", str(named)), ("search", "merger", "--config", str(named))):
        done = beamtrawl(*args)
        assert done.returncode == 2
        assert _one_line(done.stderr) == (f"beamtrawl: {folder}: is a folder; index.path names the index file, "
                                          f"e.g. {folder}/index.sqlite"), done.stderr
    assert list(folder.iterdir()) == []
