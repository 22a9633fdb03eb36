"""The index as a Delta table (transforms/index/table.py, docs/table.md), read by readers that are not ours:
delta-rs, DuckDB (its own delta extension) and Polars must see exactly the documents an embedded-index crawl
of the same tree holds, after every step of the core scenario; time travel gives the previous documents; the
change data feed names what each crawl inserted, changed and deleted; a failed crawl commits nothing and a
retried bundle's files are never committed."""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb
import duckdb_extension_delta
import polars as pl
import pyarrow as pa
import pytest
from beamtrawl.pipeline.config import ConfigError, parse_config
from beamtrawl.transforms.index.sqlite import EmbeddedIndex
from beamtrawl.transforms.index.table import LEASES, SCHEMA, SCHEMA_PROPERTY, DeltaIndex
from beamtrawl.transforms.records import IndexDoc
from deltalake import DeltaTable

from tests.conftest import beamtrawl
from tests.test_clusters import _change as change
from tests.test_crawl_end_to_end import build_tree

#: What both targets store of a document, compared field by field (the embedded index keeps no summary;
#: indexed_at says when, not what).
FIELDS = ("id", "url", "root", "title", "content", "headlines", "metadata", "mimetype", "extension", "filename",
          "path", "size", "mtime_ns", "groups", "denied", "preparation_error", "content_hash", "prep_fingerprint")


def _row(row: dict) -> dict:
    row = {name: row[name] for name in FIELDS}
    row["headlines"] = "\n".join(row["headlines"] or ())
    row["groups"], row["denied"] = list(row["groups"] or ()), list(row["denied"] or ())
    return row


def embedded_documents(path: Path) -> dict[str, dict]:
    index = EmbeddedIndex(str(path))
    try:
        return {doc.id: _row(doc._asdict() | {"headlines": doc.headlines.split("\n") if doc.headlines else []})
                for doc in index.documents()}
    finally:
        index.close()


def delta_documents(uri: str, version: int | None = None) -> dict[str, dict]:
    """The table as delta-rs reads it."""
    return {row["id"]: _row(row) for row in DeltaTable(uri, version=version).to_pyarrow_table().to_pylist()}


def duckdb_documents(uri: str) -> dict[str, dict]:
    """The table as DuckDB's own delta extension (delta-kernel) reads it."""
    extension = Path(duckdb_extension_delta.__file__).parent / f"extensions/v{duckdb.__version__}/delta.duckdb_extension"
    db = duckdb.connect()
    db.execute(f"LOAD '{extension}'")
    rows = db.execute(f"SELECT * FROM delta_scan('{uri}')").to_arrow_table().to_pylist()
    return {row["id"]: _row(row) for row in rows}


def polars_documents(uri: str, version: int | None = None) -> dict[str, dict]:
    return {row["id"]: _row(row) for row in pl.read_delta(uri, version=version).to_dicts()}


def _changes(uri: str, since: int) -> dict[str, set[str]]:
    """{change type: file names} of the change data feed after version ``since``."""
    feed = pa.table(DeltaTable(uri).load_cdf(starting_version=since + 1)).to_pylist()
    found: dict[str, set[str]] = {}
    for row in feed:
        found.setdefault(row["_change_type"], set()).add(row["url"].rsplit("/", 1)[-1])
    return found


def test_crawl_change_recrawl_into_a_table_equals_the_embedded_index_for_three_readers(tmp_path, make_config,
                                                                                      crawl):
    root = tmp_path / "docs"
    build_tree(root)
    table = str(tmp_path / "docs.delta")
    embedded = make_config(root, name="embedded.yaml")
    delta = make_config(root, name="table.yaml", index={"table": "docs.delta"})

    def step(code: int):
        done = {name: crawl(config) for name, config in (("embedded", embedded), ("table", delta))}
        for name, run in done.items():
            assert run.code == code, (name, run.report.get("problems"), run.stderr[-3000:])
        assert done["table"].counts == done["embedded"].counts
        assert done["table"].report["problems"] == done["embedded"].report["problems"]
        expected = embedded_documents(tmp_path / "index.sqlite")
        assert delta_documents(table) == expected
        assert duckdb_documents(table) == expected
        assert polars_documents(table) == expected
        return done["table"], expected

    first, first_documents = step(0)
    assert first.counts["written"] == 11
    assert DeltaTable(table).metadata().configuration[SCHEMA_PROPERTY] == "1"
    version = DeltaTable(table).version()

    change(root)
    try:
        changed, _ = step(1)
    finally:
        (root / "keep").chmod(0o755)
    assert (changed.counts["new"], changed.counts["changed"], changed.counts["deleted"]) == (1, 1, 1)
    feed = _changes(table, version)
    assert feed["insert"] == {"new.txt"} and feed["update_postimage"] == {"mod.txt"} and feed["delete"] == {"gone.txt"}
    # time travel: the version the first crawl committed holds its documents, for delta-rs and Polars alike
    assert delta_documents(table, version) == first_documents
    assert polars_documents(table, version) == first_documents

    before = DeltaTable(table).version()
    unchanged, _ = step(0)
    assert unchanged.counts["unchanged"] == 11 and unchanged.counts["written"] == 0
    assert DeltaTable(table).version() == before  # nothing to commit: no new version
    staged = {p.name for p in Path(table).iterdir() if re.match(r"part-\d{8}T", p.name)}
    assert staged == _files(table, version)  # the first crawl's files, committed as they were; none left over
    assert not list((Path(table) / LEASES).iterdir())  # no lease of a finished crawl


def _files(uri: str, version: int | None = None) -> set[str]:
    return set(pa.table(DeltaTable(uri, version=version).get_add_actions(flatten=True))["path"].to_pylist())


def test_a_failed_crawl_commits_nothing_and_readers_keep_the_last_version(tmp_path, make_config, crawl):
    root = tmp_path / "docs"
    build_tree(root)
    config = make_config(root, index={"table": "docs.delta"})
    table = tmp_path / "docs.delta"
    assert crawl(config).code == 0
    before, documents = DeltaTable(str(table)).version(), delta_documents(str(table))
    change(root)
    (root / "keep").chmod(0o755)
    table.chmod(0o555)  # the workers cannot stage their files (the crawl runs without DAC override)
    try:
        failed = crawl(config)
    finally:
        table.chmod(0o755)
    assert failed.code == 2, failed.stdout[-3000:]
    assert failed.counts["deleted"] == 0
    assert DeltaTable(str(table)).version() == before
    assert delta_documents(str(table)) == documents  # gone.txt is still there, mod.txt the old one
    rerun = crawl(config)
    assert rerun.code == 0 and (rerun.counts["new"], rerun.counts["changed"], rerun.counts["deleted"]) == (1, 1, 1)


def _doc(n: int, text: str = "first") -> IndexDoc:
    return IndexDoc(id=f"{n:064x}", url=f"file:///d/{n}.txt", root="file:///d/", title=f"t{n}", content=text,
                    summary=text, headlines="", metadata="", mimetype="text/plain", extension="txt",
                    filename=f"{n}.txt", path="/d/", size=len(text), mtime_ns=n, last_modified="2026-01-01T00:00:00+00:00",
                    groups=[], preparation_error="", content_hash="", etag="", http_last_modified="",
                    prep_fingerprint="f", outlinks=[], indexed_at="2026-01-01T00:00:00+00:00")


def _crawled(uri: str, docs: list[IndexDoc], access=()) -> None:
    """One crawl's writes into the table at ``uri``, committed as the driver does."""
    target = DeltaIndex(uri)
    target.prepare()
    target.upsert(docs)
    if access:
        target.set_access(access)
    target.commit(target.take_staged())
    target.finish(succeeded=True)


def test_only_the_files_of_successful_attempts_are_committed(tmp_path):
    """A bundle that failed and was retried staged its batch twice; the driver commits only the file the
    successful attempt named, so no document is there twice, and the orphan is removed at the end."""
    uri = str(tmp_path / "t.delta")
    target = DeltaIndex(uri)
    target.prepare()
    target.upsert([_doc(1), _doc(2)])
    target.take_staged()  # the failed attempt: its output (the file's name) never reaches the driver
    target.upsert([_doc(1), _doc(2)])
    named = target.take_staged()
    target.commit(named)
    target.finish(succeeded=True)
    assert sorted(r["id"] for r in DeltaTable(uri).to_pyarrow_table().to_pylist()) == [_doc(1).id, _doc(2).id]
    assert {p.name for p in Path(uri).glob("part-*")} == _files(uri)

    target = DeltaIndex(uri)  # the next crawl changes one document and fails before its commit
    target.prepare()
    target.upsert([_doc(1, "second")])
    target.take_staged()
    target.finish(succeeded=False)
    assert {r["content"] for r in DeltaTable(uri).to_pyarrow_table().to_pylist()} == {"first"}
    assert {p.name for p in Path(uri).glob("part-*")} == _files(uri)


def test_documents_and_access_changes_are_one_transaction(tmp_path):
    uri = str(tmp_path / "t.delta")
    _crawled(uri, [_doc(1), _doc(2), _doc(3)])
    version = DeltaTable(uri).version()

    _crawled(uri, [_doc(1, "changed"), _doc(4, "new")],
             [(_doc(2).id, ["staff"], []), (_doc(1).id, ["ignored"], []), ("0" * 64, ["absent"], [])])
    assert DeltaTable(uri).version() == version + 1
    rows = {row["id"]: row for row in DeltaTable(uri).to_pyarrow_table().to_pylist()}
    assert sorted(rows) == sorted(_doc(n).id for n in (1, 2, 3, 4))
    assert rows[_doc(1).id]["content"] == "changed" and rows[_doc(1).id]["groups"] == []
    assert rows[_doc(2).id]["groups"] == ["staff"] and rows[_doc(2).id]["content"] == "first"
    assert rows[_doc(4).id]["content"] == "new"


def test_maintain_compacts_and_never_removes_the_version_a_running_crawl_reads(tmp_path):
    uri = str(tmp_path / "t.delta")
    for n in range(3):  # three crawls, each a file
        _crawled(uri, [_doc(n)] if n != 1 else [_doc(0, "changed")])
    running = DeltaIndex(uri)
    running.prepare()  # a crawl reading this version is running
    leased = running.version
    done = DeltaIndex(uri).maintain(retention_hours=0)  # beside the running crawl
    assert done["versions_kept_for_crawls"] == [leased] and done["files_compacted"] >= 2
    assert len(_files(uri)) == 1
    assert len(DeltaTable(uri, version=leased).to_pyarrow_table()) == 2  # still readable
    running.finish(succeeded=True)
    again = DeltaIndex(uri).maintain(retention_hours=0)
    assert again["versions_kept_for_crawls"] == [] and again["files_removed"] > 0
    assert len(DeltaTable(uri).to_pyarrow_table()) == 2


def test_export_of_the_embedded_index_and_commands_on_a_table(tmp_path, make_config, crawl):
    root = tmp_path / "docs"
    build_tree(root)
    config = make_config(root)
    assert crawl(config).code == 0
    done = beamtrawl("export", str(config), str(tmp_path / "export.delta"))
    assert done.returncode == 0 and "exported 11 documents" in done.stdout, done.stderr
    assert polars_documents(str(tmp_path / "export.delta")) == embedded_documents(tmp_path / "index.sqlite")
    again = beamtrawl("export", str(config), str(tmp_path / "export.delta"))
    assert again.returncode == 2 and "already" in again.stderr

    table = make_config(root, name="table.yaml", index={"table": "export.delta"})
    search = beamtrawl("search", "apples", "--config", str(table))
    lines = [line for line in (search.stdout + search.stderr).splitlines() if line.strip()]
    assert search.returncode == 2 and len(lines) == 1 and "delta_scan" in lines[0], lines
    serve = beamtrawl("serve", "--config", str(table), "--port", "8089")  # refused before it listens
    lines = [line for line in (serve.stdout + serve.stderr).splitlines() if line.strip()]
    assert serve.returncode == 2 and len(lines) == 1 and "delta_scan" in lines[0], lines
    maintain = beamtrawl("maintain", str(table), "--retention-hours", "0")
    assert maintain.returncode == 0 and "compacted" in maintain.stdout, maintain.stderr
    assert beamtrawl("maintain", str(config)).returncode == 2  # the embedded index needs none


def test_a_table_crawl_refuses_a_folder_that_is_not_its_table(tmp_path, make_config, crawl):
    root = tmp_path / "docs"
    build_tree(root)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "precious.txt").write_text("not a table")
    done = crawl(make_config(root, index={"table": "other"}))
    assert done.code == 2 and "not a Delta table" in done.stdout + done.stderr
    assert os.listdir(tmp_path / "other") == ["precious.txt"]


@pytest.mark.parametrize("index, problem", [
    ({"table": "t", "format": "iceberg"}, "index.format: must be delta"),
    ({"table": "t", "path": "x.sqlite"}, "index: needs 'kind' (one of sqlite, opensearch, delta)"),
    ({"table": "t", "name": "x"}, "index.name: unknown key (allowed: format, kind, storage_options, table)"),
    ({"table": "ftp://host/t"}, "index.table: must be a path"),
    ({"table": "s3://b/t", "storage_options": ["x"]}, "index.storage_options: must be a mapping"),
    ({"table": None}, "index.table: must be a non-empty string, got nothing"),
    ({"path": None}, "index.path: must be a non-empty string, got nothing"),
    ({"table": "s3://"}, "index.table: must be a path or a file://, s3://, gs:// or abfss:// URL with its bucket"),
    ({"table": "gs:///t"}, "index.table: must be a path or a file://"),
])
def test_table_configuration_errors_name_the_key(tmp_path, index, problem):
    raw = {"start": [{"url": f"file://{tmp_path}"}], "index": index}
    with pytest.raises(ConfigError) as err:
        parse_config(raw, str(tmp_path / "c.yaml"))
    assert problem in str(err.value)


def test_table_configuration(tmp_path):
    raw = {"start": [{"url": f"file://{tmp_path}"}],
           "index": {"table": "s3://bucket/docs", "storage_options": {"AWS_REGION": "eu-west-1"}}}
    index = parse_config(raw, str(tmp_path / "c.yaml")).index
    assert (index.table, index.format, dict(index.storage_options)) == ("s3://bucket/docs", "delta",
                                                                        {"AWS_REGION": "eu-west-1"})
    local = parse_config({**raw, "index": {"table": "docs.delta"}}, str(tmp_path / "c.yaml"))
    assert local.index.table == str(tmp_path / "docs.delta") and local.report == str(tmp_path / "docs.delta.report.json")


def test_export_of_an_opensearch_index(tmp_path, os_config, crawl, opensearch):
    from tests.test_opensearch import all_docs, index_name

    root = tmp_path / "docs"
    build_tree(root)
    config = os_config(root, index={"analyzer": "standard"})
    assert crawl(config).code == 0
    done = beamtrawl("export", str(config), str(tmp_path / "export.delta"))
    assert done.returncode == 0 and "exported 11 documents" in done.stdout, done.stderr
    exported = polars_documents(str(tmp_path / "export.delta"))
    stored = {i: _row({**doc, "headlines": doc["headlines"].split("\n") if doc["headlines"] else []})
              for i, doc in all_docs(opensearch, index_name(config)).items()}
    assert exported == stored
    summaries = {row["id"]: row["summary"] for row in pl.read_delta(str(tmp_path / "export.delta")).to_dicts()}
    assert all(summaries[i] == doc["summary"] for i, doc in all_docs(opensearch, index_name(config)).items())


def test_a_change_after_a_merge_commits(tmp_path):
    """The third crawl changes documents that the second crawl's MERGE rewrote: delta-rs writes those files
    itself (their statistics read as string_view), and the commit must still find the ids in them."""
    uri = str(tmp_path / "t.delta")
    for text in ("first", "second", "third", "fourth"):
        _crawled(uri, [_doc(1, text), _doc(2, text)], [(_doc(2).id, [text], [])])
        rows = DeltaTable(uri).to_pyarrow_table().to_pylist()
        assert sorted((r["id"], r["content"]) for r in rows) == [(_doc(1).id, text), (_doc(2).id, text)]


def test_table_failures_are_one_line_and_an_export_never_lands_inside_a_table(tmp_path, make_config, s3_server):
    """A bucket the object store does not have (a real S3 server on loopback: no test addresses a cloud),
    an export onto a file or an unwritable place: one line each, exit 2. An export into a folder inside a
    table is refused (that table's vacuum would remove it)."""
    root = tmp_path / "docs"
    build_tree(root)
    table = tmp_path / "a table ü.delta"
    DeltaIndex(str(table)).write_all(iter([_doc(1)]))
    config = make_config(root, name="t.yaml", index={"table": str(table)})
    s3 = make_config(root, name="s3.yaml", index={"table": "s3://beamtrawl-no-such-bucket/t",
                                                  "storage_options": s3_server.storage_options()})
    for args in (("crawl", str(s3)), ("maintain", str(s3)), ("export", str(config), str(tmp_path / "t.yaml")),
                 ("export", str(config), "/proc/no.delta"), ("export", str(config), str(table / "sub"))):
        done = beamtrawl(*args, timeout=120)
        lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("crawling")]
        assert done.returncode == 2 and len(lines) == 1 and "\x1b" not in lines[0], (args, done.stderr)
    assert "/beamtrawl-no-such-bucket" in s3_server.log.read_text()  # the store asked was the one on loopback
    assert not (table / "sub").exists()
    assert DeltaTable(str(table)).to_pyarrow_table().num_rows == 1


def test_a_table_of_another_schema_is_refused_before_the_crawl(tmp_path):
    """Someone else's table that claims our schema version but holds other columns: one line, untouched
    (the pipeline would otherwise fail reading the snapshot's columns, with a traceback)."""
    from beamtrawl.transforms.index.base import IndexUnavailable
    from deltalake import write_deltalake

    uri = str(tmp_path / "theirs.delta")
    theirs = DeltaTable.create(uri, pa.schema([("id", pa.string()), ("v", pa.int64())]),
                               configuration={SCHEMA_PROPERTY: "1"}, raise_if_key_not_exists=False)
    write_deltalake(theirs, pa.table({"id": ["x"], "v": [1]}), mode="append")
    with pytest.raises(IndexUnavailable, match="without the columns url, root"):
        DeltaIndex(uri).prepare()
    assert DeltaTable(uri).version() == 1 and not (tmp_path / "theirs.delta" / LEASES).exists()


def killed_while_staging(uri: str) -> None:
    """A crawl's driver and worker in one process, SIGKILLed right after staging a file of two documents."""
    import signal
    import subprocess
    import sys

    killed = subprocess.run([sys.executable, "-c", f"""
import os, signal
from beamtrawl.transforms.index.table import DeltaIndex
from tests.test_table import _doc
target = DeltaIndex({uri!r})
target.prepare()
target.upsert([_doc(1, "second"), _doc(2)])
os.kill(os.getpid(), signal.SIGKILL)
"""], cwd=Path(__file__).resolve().parent.parent, check=False)
    assert killed.returncode == -signal.SIGKILL


def test_a_killed_crawl_neither_blocks_maintenance_nor_leaves_its_files(tmp_path):
    """A crawl SIGKILLed after staging a file leaves its lease and the file. The table stays at its last
    version; the lease of a process gone from this machine is dropped by `maintain`, whose vacuum then
    removes the orphan (before, the dead lease held the retention open for a week)."""
    uri = str(tmp_path / "t.delta")
    _crawled(uri, [_doc(1)])
    killed_while_staging(uri)
    assert len(list(Path(uri, LEASES).iterdir())) == 1 and len(list(Path(uri).glob("part-*"))) == 2
    assert [r["content"] for r in DeltaTable(uri).to_pyarrow_table().to_pylist()] == ["first"]
    done = DeltaIndex(uri).maintain(retention_hours=0)
    assert done["versions_kept_for_crawls"] == [] and not list(Path(uri, LEASES).iterdir())
    assert {p.name for p in Path(uri).glob("part-*")} == _files(uri)


def test_two_crawls_at_once_finding_the_same_new_document_leave_it_once(tmp_path):
    """Two crawls pin the same version and both find a new document; the second commits after the first.
    Its check of which ids the table holds must see the first's commit (not the version it pinned), or its
    files are appended as they are and the document is in the table twice."""
    uri = str(tmp_path / "t.delta")
    _crawled(uri, [_doc(1)])
    one, two = DeltaIndex(uri), DeltaIndex(uri)
    one.prepare()
    two.prepare()
    one.upsert([_doc(5)])
    two.upsert([_doc(5, "seen later")])
    for crawl in (one, two):
        crawl.commit(crawl.take_staged())
        crawl.finish(succeeded=True)
    rows = DeltaTable(uri).to_pyarrow_table().to_pylist()
    assert sorted((r["id"], r["content"]) for r in rows) == [(_doc(1).id, "first"), (_doc(5).id, "seen later")]


def test_export_of_an_index_not_crawled_yet_and_bad_retention_hours_are_one_line(tmp_path, make_config):
    root = tmp_path / "docs"
    build_tree(root)
    for index in ({"table": "none.delta"}, {"path": "none.sqlite"}):
        config = make_config(root, name="c.yaml", index=index)
        done = beamtrawl("export", str(config), str(tmp_path / "out.delta"))
        assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "crawl first" in done.stderr
        assert not (tmp_path / "out.delta").exists()
    for hours in ("-5", "nan", "inf", "x"):
        done = beamtrawl("maintain", str(config), f"--retention-hours={hours}")
        assert done.returncode == 2 and "--retention-hours" in done.stderr, done.stderr


def test_an_export_whose_source_fails_midway_leaves_no_table(tmp_path):
    """The index being exported fails after 1,500 documents (an OpenSearch node going away): the error
    propagates and DEST holds no empty table that the export's second try would refuse."""
    def failing():
        for n in range(1500):
            yield _doc(n)
        raise RuntimeError("the index went away")

    dest = tmp_path / "out.delta"
    with pytest.raises(RuntimeError, match="went away"):
        DeltaIndex(str(dest)).write_all(failing())
    assert not dest.exists()
    assert DeltaIndex(str(dest)).write_all(iter([_doc(1)])) == 1


def test_an_export_to_a_path_delta_rs_misreads_leaves_nothing_and_a_damaged_log_is_one_line(tmp_path, make_config):
    """Issue 26, item 7: an export to ``…%20…`` (delta-rs reads it as a space) failed with "Kernel error: File
    not found" and left its ``_delta_log`` behind, so the retry said a table is there; a damaged log reached
    the user raw ("Json error … 0: <unknown> 1: <unknown> …")."""
    root = tmp_path / "docs"
    build_tree(root)
    config = make_config(root)
    assert beamtrawl("crawl", str(config), timeout=300).returncode <= 1
    for name in ("a%20b.delta", "back\\slash.delta"):
        for _attempt in range(2):  # the retry says the same
            done = beamtrawl("export", str(config), str(tmp_path / name), timeout=120)
            assert done.returncode == 2 and done.stderr.strip().splitlines() == [(
                f"beamtrawl: {tmp_path / name}: delta-rs reads '%' and '\\' in a local path as URL escapes, so it "
                f"cannot keep a table there; choose a folder name without them")], done.stderr
        assert not (tmp_path / name).exists()
    damaged = tmp_path / "damaged.delta"
    (damaged / "_delta_log").mkdir(parents=True)
    (damaged / "_delta_log" / "00000000000000000000.json").write_text('{"protocol":{"minReaderVersion":1}}\n')
    table_config = make_config(root, name="damaged.yaml", index={"table": str(damaged)})
    done = beamtrawl("crawl", str(table_config), timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "<unknown>" not in lines[0], done.stderr
    assert "its log cannot be read, a commit in _delta_log is damaged or not a Delta log" in lines[0], lines[0]


def _records(target, ids) -> dict[str, dict]:
    """{id: record} of ``target`` (IndexTarget.record), when each was indexed left out (two crawls' times)."""
    try:
        found = {i: target.record(i) for i in ids}
    finally:
        target.close()
    for record in found.values():
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", record.pop("indexed_at")), record
    return found


def test_explain_reads_the_tables_record_as_the_embedded_index_gives_it(tmp_path, make_config, crawl):
    """Issue 28, item 15, on the table: one crawl into the embedded index and one into a table give the same
    record of every document (whoever may see it: the hr file too), and ``beamtrawl explain`` answers from it."""
    root = tmp_path / "docs"
    build_tree(root)
    (root / "hr").mkdir()
    (root / "hr" / "pay.txt").write_text("walrus pay rises", encoding="utf-8")
    access = [{"url_rules": [{"prefix": str(root / "hr"), "groups": ["hr"]}]}]
    embedded = make_config(root, name="embedded.yaml", access_control=access)
    delta = make_config(root, name="table.yaml", index={"table": "docs.delta"}, access_control=access)
    assert crawl(embedded).code == 0 and crawl(delta).code == 0
    ids = list(embedded_documents(tmp_path / "index.sqlite"))
    expected = _records(EmbeddedIndex(str(tmp_path / "index.sqlite")), ids)
    assert _records(DeltaIndex(str(tmp_path / "docs.delta")), ids) == expected
    pay = next(r for r in expected.values() if r["url"].endswith("/hr/pay.txt"))
    assert pay["groups"] == ["hr"] and pay["root"] == root.as_uri() and pay["size"] == 16
    assert DeltaIndex(str(tmp_path / "docs.delta")).record("0" * 64) is None

    done = beamtrawl("explain", str(root / "hr" / "pay.txt"), "--config", str(delta))
    assert done.returncode == 0, done.stderr
    assert f"in the index {tmp_path / 'docs.delta'} since " in done.stdout and f"found under {root.as_uri()}" in done.stdout
    assert "unchanged since it was indexed" in done.stdout and "last preparation by text: prepared completely" in done.stdout
    assert ", the current configuration's" in done.stdout and "visible to members of hr" in done.stdout
    (root / "late.txt").write_text("walrus, after the crawl", encoding="utf-8")
    late = beamtrawl("explain", str(root / "late.txt"), "--config", str(delta))
    assert late.returncode == 0 and f"not in the index {tmp_path / 'docs.delta'}" in late.stdout, late.stderr


def test_a_table_remembers_the_configuration_that_filled_it(tmp_path, make_config, crawl):
    """Issue 28, item 1, on the table: the owner is a file beside the table's log, which no version holds (so
    maintenance keeps it); a second configuration is refused before any work, in one line, unless forced."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.txt").write_text(f"walrus {folder}", encoding="utf-8")
    first = make_config(tmp_path / "a", name="a.yaml", index={"table": "shared.delta"})
    second = make_config(tmp_path / "b", name="b.yaml", index={"table": "shared.delta"})
    assert crawl(first).code == 0
    table = tmp_path / "shared.delta"
    version = DeltaTable(str(table)).version()
    for extra in ((), ("--dry-run",)):
        refused = beamtrawl("crawl", str(second), "--direct_num_workers=1", *extra)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        if not extra:
            assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert str(first) in refused.stdout + refused.stderr and "--force-other-config" in refused.stdout + refused.stderr
    assert DeltaTable(str(table)).version() == version and not list((table / LEASES).iterdir())  # nothing was done
    assert beamtrawl("maintain", str(first), "--retention-hours", "0").returncode == 0
    assert DeltaIndex(str(table)).read_owner()["config"] == str(first)  # vacuum left it
    forced = crawl(second, "--force-other-config")
    assert forced.code == 0, forced.stderr
    assert DeltaIndex(str(table)).read_owner()["config"] == str(second)
    assert crawl(second).code == 0 and crawl(first).code == 2


def _embedded_doc(n: int, text: str = "first", rows: int = 2) -> IndexDoc:
    """A document with ``rows`` passages and 256-value float16 vectors (as the embedding stage makes them)."""
    import numpy as np

    vectors = np.random.default_rng(n).standard_normal((rows, 256)).astype(np.float16)
    return _doc(n, text)._replace(passages=[v for k in range(rows) for v in (k, k + 1)], vectors=vectors.tobytes())


def test_passage_vectors_are_a_list_column_of_float32_rows_an_older_table_gains(tmp_path):
    """Issue 31: a table made before the passage columns (no furniture, passages, vectors) gets them from the next
    crawl; the vectors come back the same through a first commit, a MERGE and export, and read as float32 rows
    of the model's length in DuckDB; a document without vectors, or with damaged ones, has none."""
    from deltalake import write_deltalake

    uri = str(tmp_path / "old.delta")
    old = pa.schema([f for f in SCHEMA if f.name not in ("furniture", "passages", "vectors")])
    table = DeltaTable.create(uri, old, configuration={SCHEMA_PROPERTY: "1", "delta.enableChangeDataFeed": "true"},
                              raise_if_key_not_exists=False)
    write_deltalake(table, pa.Table.from_pylist([{**_doc(9)._asdict(), "headlines": [], "last_modified": None,
                                                  "indexed_at": None, "aux": []}], schema=old), mode="append")
    _crawled(uri, [_embedded_doc(1), _doc(2)._replace(passages=[0, 1], vectors=b"\0\0\0")])
    _crawled(uri, [_embedded_doc(1, "changed", rows=3), _embedded_doc(3)])  # a MERGE rewrites the rows
    assert {f.name for f in DeltaTable(uri).schema().fields} >= {"furniture", "passages", "vectors"}
    docs = {d.id: d for d in DeltaIndex(uri).documents()}
    assert docs[_doc(1).id].vectors == _embedded_doc(1, rows=3).vectors and docs[_doc(1).id].passages == [0, 1, 1, 2, 2, 3]
    assert docs[_doc(3).id].vectors == _embedded_doc(3).vectors
    assert docs[_doc(2).id].vectors == b"" and docs[_doc(9).id].vectors == b""
    extension = Path(duckdb_extension_delta.__file__).parent / f"extensions/v{duckdb.__version__}/delta.duckdb_extension"
    db = duckdb.connect()
    db.execute(f"LOAD '{extension}'")
    rows, width = db.execute(f"SELECT len(vectors), len(vectors[1]) FROM delta_scan('{uri}') WHERE id = ?",
                             [_doc(1).id]).fetchone()
    assert (rows, width) == (3, 256)
