"""Buckets as sources, against an S3 server on loopback (moto's standalone server, tests/servers/s3.py):
new, changed and removed objects across crawls, an unchanged re-crawl that reads nothing but listings,
prefixes handed on as folders, odd keys, an unreachable endpoint that keeps every document, and
`beamtrawl init s3://…` writing a file that crawls as written. Logins come from the environment only."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import boto3
import pytest
import yaml

from tests.conftest import CrawlRun, beamtrawl
from tests.servers.jvm import free_ports

OBJECTS = {"docs/puffin.txt": "the puffin nests on cliffs",
           "docs/birds/gannet.txt": "a gannet dives for fish",
           "docs/birds/sea/tern.md": "# Arctic tern\n\nthe tern migrates farthest",
           "docs/odd name ü+%&;=.txt": "an oddly named kittiwake",
           "docs/empty-folder/": "",  # a folder marker, as consoles write them: no document
           "elsewhere/skua.txt": "a skua outside the start prefix"}


@pytest.fixture
def bucket(s3_server, monkeypatch):
    """A fresh bucket holding OBJECTS; the login only in the environment, as a user's would be."""
    return new_bucket(s3_server, monkeypatch, OBJECTS)


def new_bucket(s3_server, monkeypatch, objects: dict[str, str]):
    """(name, client) of a fresh bucket holding ``objects`` (key: text), the login put in the environment."""
    for name, value in s3_server.storage_options().items():
        if name.startswith("AWS_") and name not in ("AWS_ENDPOINT_URL", "AWS_ALLOW_HTTP"):
            monkeypatch.setenv(name, value)
    name = f"bt-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=s3_server.endpoint)
    client.create_bucket(Bucket=name)
    for key, text in objects.items():
        client.put_object(Bucket=name, Key=key, Body=text.encode())
    return name, client


def crawl_file(tmp_path: Path, start: str, **settings) -> Path:
    """A crawl file for a bucket's prefix: one prefix per discovery step, into the embedded index, every delete
    allowed (tests/test_object_stores_gcs_azure.py writes its own with it too)."""
    config = {"start": [{"url": start, "parse": True, "index": False}], "index": {"path": "index.sqlite"},
              "walk_budget": 1, "max_delete_ratio": 1.0, **settings}
    path = tmp_path / "crawl.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _config(tmp_path: Path, start: str, endpoint: str, **settings) -> Path:
    return crawl_file(tmp_path, start, **{"s3": {"endpoint_url": endpoint, "max_attempts": 2}, **settings})


def indexed(tmp_path: Path) -> dict[str, str]:
    with sqlite3.connect(tmp_path / "index.sqlite") as db:
        return dict(db.execute("SELECT d.url, d.etag FROM docs d"))


def requests(log: Path, since: int) -> list[str]:
    return log.read_text(errors="replace").splitlines()[since:]


def test_s3_new_changed_removed_unchanged_and_unreachable(bucket, s3_server, tmp_path, crawl, search):
    name, client = bucket
    config = _config(tmp_path, f"s3://{name}/docs/", s3_server.endpoint)
    first = crawl(config)
    assert first.code == 0, first.stderr
    assert first.counts["written"] == 4 and first.counts["deleted"] == 0
    assert set(indexed(tmp_path)) == {f"s3://{name}/docs/puffin.txt", f"s3://{name}/docs/birds/gannet.txt",
                                       f"s3://{name}/docs/birds/sea/tern.md",
                                       f"s3://{name}/docs/odd%20name%20%C3%BC+%25&;=.txt"}
    assert all(indexed(tmp_path).values())  # each with its ETag
    assert [h["url"] for h in search(config, "kittiwake")] == [f"s3://{name}/docs/odd%20name%20%C3%BC+%25&;=.txt"]
    assert search(config, "tern")[0]["url"].endswith("/birds/sea/tern.md")
    assert not search(config, "skua")

    before = len(requests(s3_server.log, 0))
    again = crawl(config)
    assert again.code == 0 and again.counts["unchanged"] == 4 and again.counts["read"] == 0, again.stderr
    gets = [line for line in requests(s3_server.log, before) if f"GET /{name}/docs/" in line]
    assert gets == []  # an unchanged object costs its listing only

    client.put_object(Bucket=name, Key="docs/puffin.txt", Body=b"the puffin eats sand eels")
    client.delete_object(Bucket=name, Key="docs/birds/gannet.txt")
    client.put_object(Bucket=name, Key="docs/birds/fulmar.txt", Body=b"a fulmar glides")
    third = crawl(config)
    assert third.code == 0, third.stderr
    assert (third.counts["new"], third.counts["changed"], third.counts["deleted"]) == (1, 1, 1)
    assert search(config, "eels") and not search(config, "cliffs") and not search(config, "gannet")
    assert search(config, "fulmar")

    (closed,) = free_ports(1)
    gone = crawl(_config(tmp_path, f"s3://{name}/docs/", f"http://127.0.0.1:{closed}"))
    assert gone.code == 1 and gone.counts["deleted"] == 0 and gone.counts["kept"] == 4
    lines = [p for p in gone.report["problems"] if p["kind"] == "incomplete"]
    assert len(lines) == 1 and lines[0]["url"] == f"s3://{name}/docs/", gone.report["problems"]
    assert len(indexed(tmp_path)) == 4
    secret = s3_server.storage_options()["AWS_SECRET_ACCESS_KEY"]
    assert secret not in json.dumps(gone.report) + gone.stderr + gone.stdout


def test_s3_no_such_bucket_keeps_its_documents_and_an_object_vanishing_before_reading_is_one_line(
        bucket, s3_server, tmp_path, crawl):
    name, client = bucket
    config = _config(tmp_path, f"s3://{name}/docs/", s3_server.endpoint)
    assert crawl(config).code == 0
    for key in OBJECTS:
        client.delete_object(Bucket=name, Key=key)
    client.delete_bucket(Bucket=name)
    run = crawl(config)
    assert run.counts["deleted"] == 0 and len(indexed(tmp_path)) == 4
    assert run.problems("discover") == {f"s3://{name}/docs/": f"cannot list s3://{name}/docs/: NoSuchBucket (HTTP 404)"}


def test_s3_object_deleted_between_listing_and_reading(bucket, s3_server, tmp_path):
    """The read stage's side of the source, without a pipeline: a key gone after its listing is an OSError."""
    from beamtrawl.pipeline.config import load_config
    from beamtrawl.transforms.sources import Sources
    from beamtrawl.transforms.sources.settings import SourceSettings

    name, client = bucket
    config = load_config(str(_config(tmp_path, f"s3://{name}/docs/", s3_server.endpoint)))
    source = Sources(SourceSettings.from_config(config))(f"s3://{name}/docs/puffin.txt")
    with source.open_document(f"s3://{name}/docs/puffin.txt") as stream:
        assert stream.read() == b"the puffin nests on cliffs"
    client.delete_object(Bucket=name, Key="docs/puffin.txt")
    with pytest.raises(OSError, match="cannot open|read failed"), source.open_document(
            f"s3://{name}/docs/puffin.txt") as stream:
        stream.read()


def test_s3_objects_read_ahead_each_keep_their_own_outcome(bucket, s3_server, tmp_path):
    """The read stage reads a bucket's objects several at once (reads_ahead), without a pipeline: each is handed
    on with its own bytes, one that grew since its listing is read whole (its read ahead stopped at the listed
    size), one deleted since is its own failed line, and nothing is held after the bundle."""
    from apache_beam.transforms.window import GlobalWindow
    from apache_beam.utils.timestamp import MIN_TIMESTAMP
    from beamtrawl.pipeline.config import load_config
    from beamtrawl.transforms.prepare import _Read
    from beamtrawl.transforms.records import Entry
    from beamtrawl.transforms.sources.settings import SourceSettings

    name, client = bucket
    config = load_config(str(_config(tmp_path, f"s3://{name}/docs/", s3_server.endpoint)))
    listed = {key: len(OBJECTS[key]) for key in ("docs/puffin.txt", "docs/birds/gannet.txt", "docs/birds/sea/tern.md")}
    listed["docs/puffin.txt"] = 10  # listed before it grew
    client.delete_object(Bucket=name, Key="docs/birds/gannet.txt")
    read = _Read(config.max_file_size, SourceSettings.from_config(config))
    read.setup()
    outputs = []
    for key, size in listed.items():
        url = f"s3://{name}/{key}"
        entry = Entry(url, url, f"s3://{name}/docs/", 1, size, 0, "", None, "", [], "", "", "", "")
        outputs += read.process(entry, GlobalWindow(), MIN_TIMESTAMP)
    outputs += read.finish_bundle()
    read.teardown()
    values = [getattr(o, "value", o) for o in outputs]
    values = [getattr(v, "value", v) for v in values]  # a tagged output holds a windowed value
    documents = {v.entry.url: v.data for v in values if hasattr(v, "data")}
    assert documents == {f"s3://{name}/docs/puffin.txt": b"the puffin nests on cliffs",
                         f"s3://{name}/docs/birds/sea/tern.md": OBJECTS["docs/birds/sea/tern.md"].encode()}
    failed = [(v.url, v.stage) for v in values if getattr(v, "kind", "") == "failed"]
    assert failed == [(f"s3://{name}/docs/birds/gannet.txt", "read")]
    assert not read.ahead


def test_init_for_a_bucket_writes_a_file_that_crawls_as_written(bucket, s3_server, tmp_path, monkeypatch):
    name, _client = bucket
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)  # as a user of an S3-compatible store sets it
    config = tmp_path / "crawl.yaml"
    done = beamtrawl("init", f"s3://{name}/docs/", "--output", str(config), check_dac=False)
    assert done.returncode == 0, done.stderr
    text = config.read_text(encoding="utf-8")
    assert "s3:" in text and "AWS_SECRET_ACCESS_KEY" in text and s3_server.storage_options()[
        "AWS_SECRET_ACCESS_KEY"] not in text
    run = beamtrawl("crawl", str(config), "--direct_num_workers=2")
    assert run.returncode == 0, run.stderr
    found = beamtrawl("search", "gannet", "--config", str(config), "--json", check_dac=False)
    assert [h["url"] for h in json.loads(found.stdout)] == [f"s3://{name}/docs/birds/gannet.txt"]


def _objects(client, bucket: str, prefix: str) -> list[str]:
    return [o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])]


def _crawled(config: Path) -> CrawlRun:
    """A crawl whose report is the configuration's ``report`` (the table lives in a bucket)."""
    done = beamtrawl("crawl", str(config), "--direct_num_workers=2")
    report = Path(yaml.safe_load(config.read_text(encoding="utf-8"))["report"])
    return CrawlRun(done.returncode, json.loads(report.read_text(encoding="utf-8")), done.stdout, done.stderr)


def test_a_bucket_into_a_delta_table_in_a_bucket_with_the_work_folder_there_too(bucket, s3_server, tmp_path,
                                                                                 monkeypatch):
    """No local disk holds crawl state: the table and the work folder are in a bucket (as on a cluster),
    written, read back, changed incrementally; a work folder in a bucket that is not there is refused
    before any work, by the crawl and by --dry-run."""
    from deltalake import DeltaTable

    name, client = bucket
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)  # Beam's S3 file system (the work folder) reads it
    lake = f"{name}-lake"
    client.create_bucket(Bucket=lake)
    options = {k: v for k, v in s3_server.storage_options().items() if not k.startswith(("AWS_ACCESS", "AWS_SECRET"))}
    config = _config(tmp_path, f"s3://{name}/docs/", s3_server.endpoint, work_dir=f"s3://{lake}/work",
                     report=str(tmp_path / "report.json"),
                     index={"table": f"s3://{lake}/table", "storage_options": options})
    first = _crawled(config)
    assert first.code == 0 and first.counts["written"] == 4, first.stderr
    table = DeltaTable(f"s3://{lake}/table", storage_options=s3_server.storage_options())
    assert len(table.to_pyarrow_table().to_pylist()) == 4
    kept = _objects(client, lake, "work/")  # the crawl's own folder is removed after it; its history stays
    assert len(kept) == 1 and kept[0].startswith("work/history/"), kept

    client.delete_object(Bucket=name, Key="docs/puffin.txt")
    client.put_object(Bucket=name, Key="docs/birds/gannet.txt", Body=b"a gannet dives for mackerel")
    second = _crawled(config)
    assert (second.counts["changed"], second.counts["deleted"], second.counts["unchanged"]) == (1, 1, 2), second.stderr
    rows = {r["url"]: r["content"] for r in DeltaTable(
        f"s3://{lake}/table", storage_options=s3_server.storage_options()).to_pyarrow_table().to_pylist()}
    assert len(rows) == 3 and "mackerel" in rows[f"s3://{name}/docs/birds/gannet.txt"]

    missing = _config(tmp_path, f"s3://{name}/docs/", s3_server.endpoint, work_dir=f"s3://{name}-none/work",
                      report=str(tmp_path / "report.json"),
                      index={"table": f"s3://{lake}/table", "storage_options": options})
    for extra in ((), ("--dry-run",)):
        done = beamtrawl("crawl", str(missing), *extra)
        assert done.returncode == 2 and f"s3://{name}-none/work: " in done.stderr + done.stdout, done.stderr
        assert "NoSuchBucket" in done.stderr + done.stdout
    from beamtrawl.pipeline import history

    assert history.crawls(f"s3://{lake}/work")[0]["deleted_urls"] == [f"s3://{name}/docs/puffin.txt"]


def test_a_table_in_a_bucket_keeps_its_owner_and_state_there_and_explain_reads_it(bucket, s3_server, tmp_path,
                                                                                   monkeypatch):
    """The table's owner and the sources' state are objects beside its log in the bucket: a second configuration
    is refused in one line before any work, the state written is read back, and explain finds the record."""
    from beamtrawl.transforms.index.table import DeltaIndex
    from beamtrawl.transforms.urls import doc_id

    name, client = bucket
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)  # Beam's and pyarrow's S3 file systems read it
    lake = f"{name}-lake"
    client.create_bucket(Bucket=lake)
    options = {k: v for k, v in s3_server.storage_options().items() if not k.startswith(("AWS_ACCESS", "AWS_SECRET"))}
    index = {"table": f"s3://{lake}/table", "storage_options": options}
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = _config(tmp_path / "one", f"s3://{name}/docs/", s3_server.endpoint, index=index,
                    report=str(tmp_path / "one" / "report.json"))
    second = _config(tmp_path / "two", f"s3://{name}/elsewhere/", s3_server.endpoint, index=index,
                     report=str(tmp_path / "two" / "report.json"))
    assert _crawled(first).code == 0
    assert "table/_beamtrawl/owner.json" in _objects(client, lake, "table/_beamtrawl/")
    refused = beamtrawl("crawl", str(second), "--direct_num_workers=1")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert str(first) in refused.stderr and "--force-other-config" in refused.stderr

    target = DeltaIndex(f"s3://{lake}/table", s3_server.storage_options())
    state = {"key": "k", "folders": {"imaps://mail/INBOX": [7, 12, 11]}, "documents": 4}
    target.write_state(state)
    assert DeltaIndex(f"s3://{lake}/table", s3_server.storage_options()).read_state() == state
    target.write_state(None)
    assert target.read_state() is None and "table/_beamtrawl/state.json" not in _objects(client, lake, "table/")
    gannet = f"s3://{name}/docs/birds/gannet.txt"
    assert target.record(doc_id(gannet))["url"] == gannet

    done = beamtrawl("explain", gannet, "--config", str(first))
    assert done.returncode == 0, done.stderr
    assert f"in the index s3://{lake}/table since " in done.stdout and f"found under s3://{name}/docs/" in done.stdout

