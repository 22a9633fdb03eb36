"""Google Cloud Storage and Azure Blob containers as sources, each against its emulator on loopback
(fake-gcs-server, tests/servers/gcs.py; Azurite, tests/servers/azurite.py), every test once per store: new,
changed and removed objects, a vanished prefix, an unchanged re-crawl that reads nothing but listings, listings
of several pages, odd keys, metadata as fields, an unreachable, throttling or refusing store that keeps every
document, an object deleted between listing and reading, configuration mistakes, and `beamtrawl init` writing
a file that crawls as written. The login is only in the environment, as a user's would be."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import beamtrawl
from tests.servers.jvm import free_ports
from tests.servers.refusing import Rule, refusing
from tests.test_object_stores import crawl_file, indexed, requests

OBJECTS = {"docs/puffin.txt": "the puffin nests on cliffs",
           "docs/birds/gannet.txt": "a gannet dives for fish",
           "docs/birds/sea/tern.md": "# Arctic tern\n\nthe tern migrates farthest",
           "docs/odd name ü+%&;=#?.txt": "an oddly named kittiwake",
           "docs/two//slashes.txt": "a key no URL can name",
           "docs/empty-folder/": "",  # a folder marker, as consoles write them: no document
           "elsewhere/skua.txt": "a skua outside the start prefix"}
FOUND = ("docs/puffin.txt", "docs/birds/gannet.txt", "docs/birds/sea/tern.md", "docs/odd%20name%20%C3%BC+%25&;=%23%3F.txt")


@dataclass
class Store:
    """One store as a test uses it: its URLs, the crawl file's section, and what its own client does."""

    scheme: str
    bucket: str
    section: dict
    log: Path
    put: Callable[[str, bytes, dict], None]
    delete: Callable[[str], None]
    drop: Callable[[], None]  # the bucket and everything in it
    reads: Callable[[str], bool]  # does a line of the server's log read (not list) an object?
    environment: tuple[str, str]  # the variable a user sets to reach the store
    elsewhere: Callable[[int], tuple[str, str]]  # that variable pointing at another port of this machine
    refused: tuple[str, str] | None = None  # that variable with a login the store refuses
    secret: str = ""  # what must never be printed

    def url(self, key: str = "") -> str:
        return f"{self.scheme}://{self.bucket}/{key}"


def _gcs(server, monkeypatch) -> Store:
    from google.cloud import storage

    environment = ("STORAGE_EMULATOR_HOST", server.endpoint)  # as a user of fake-gcs-server sets it
    monkeypatch.setenv(*environment)
    client = storage.Client()
    bucket = client.create_bucket(f"bt-{uuid.uuid4().hex[:12]}")

    def put(key: str, data: bytes, metadata: dict) -> None:
        blob = bucket.blob(key)
        blob.metadata = metadata or None
        blob.upload_from_string(data, content_type="text/plain" if data else "application/octet-stream")

    def drop() -> None:
        for blob in client.list_blobs(bucket.name):
            blob.delete()
        bucket.delete()

    return Store("gs", bucket.name, {"gs": {"page_size": 2, "retry_seconds": 2}}, server.log, put,
                 lambda key: bucket.blob(key).delete(), drop, lambda line: f"/b/{bucket.name}/o/" in line,
                 environment, lambda port: ("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}"))


def _azure(server, monkeypatch) -> Store:
    from azure.storage.blob import BlobServiceClient, ContentSettings

    from tests.servers.azurite import ACCOUNT, KEY

    variable = "AZURE_STORAGE_CONNECTION_STRING"
    environment = (variable, server.connection_string())  # as a user sets it
    monkeypatch.setenv(*environment)
    container = BlobServiceClient.from_connection_string(server.connection_string()).create_container(
        f"bt-{uuid.uuid4().hex[:12]}")

    def put(key: str, data: bytes, metadata: dict) -> None:
        container.upload_blob(key, data, metadata=metadata or None, overwrite=True,
                              content_settings=ContentSettings(content_type="text/plain" if data else None))

    def elsewhere(port: int) -> tuple[str, str]:
        return variable, server.connection_string().replace(server.account_url, f"http://127.0.0.1:{port}/{ACCOUNT}")

    wrong = KEY[:-10] + "AAAAAAAA=="
    return Store("az", container.container_name, {"az": {"page_size": 2, "max_attempts": 1}}, server.log, put,
                 container.delete_blob, container.delete_container,
                 lambda line: f"/{ACCOUNT}/{container.container_name}/docs" in line, environment, elsewhere,
                 (variable, server.connection_string(wrong)), KEY)


@pytest.fixture(params=["gs", "az"])
def store(request, monkeypatch) -> Store:
    """A fresh bucket (container) of one store holding OBJECTS, each with user metadata."""
    if request.param == "gs":
        made = _gcs(request.getfixturevalue("gcs_server"), monkeypatch)
    else:
        made = _azure(request.getfixturevalue("azurite"), monkeypatch)
    for key, text in OBJECTS.items():
        made.put(key, text.encode(), {"Project": "Apollo", "Shelf_Mark": "A 1"} if text else {})
    return made


def _config(tmp_path: Path, store: Store) -> Path:
    return crawl_file(tmp_path, store.url("docs/"), **store.section)


def test_new_changed_removed_unchanged_over_pages_with_metadata_fields(store, tmp_path, crawl, search):
    config = _config(tmp_path, store)
    first = crawl(config)
    assert first.code == 0, first.stderr
    assert first.counts["written"] == 4 and first.counts["deleted"] == 0
    assert set(indexed(tmp_path)) == {store.url(key) for key in FOUND} and all(indexed(tmp_path).values())
    assert first.problems("discover") == {store.url("docs/two/"): "a prefix with an empty or dot segment cannot "
                                          "be a URL"}
    (odd,) = search(config, "kittiwake")
    assert odd["url"] == store.url(FOUND[3])
    assert {k: odd["extra"][k] for k in ("content_type", "meta_project", "meta_shelf_mark")} == {
        "content_type": "text/plain", "meta_project": "Apollo", "meta_shelf_mark": "A 1"}, odd
    assert not search(config, "skua")

    before = len(requests(store.log, 0))
    again = crawl(config)
    assert again.code == 0 and again.counts["unchanged"] == 4 and again.counts["read"] == 0, again.stderr
    assert [line for line in requests(store.log, before) if store.reads(line)] == []  # its listing only

    store.put("docs/puffin.txt", b"the puffin eats sand eels", {})
    store.put("docs/fulmar.txt", b"a fulmar glides", {})
    for key in ("docs/birds/gannet.txt", "docs/birds/sea/tern.md"):  # the prefix docs/birds/ vanishes
        store.delete(key)
    third = crawl(config)
    assert third.code == 0 and list(third.problems()) == [store.url("docs/two/")], third.report
    assert (third.counts["new"], third.counts["changed"], third.counts["deleted"]) == (1, 1, 2), third.stderr
    assert search(config, "eels") and not search(config, "cliffs") and not search(config, "tern")
    assert search(config, "fulmar")[0]["extra"].get("meta_project") is None


def test_unreachable_throttling_refusing_or_vanished_stores_keep_every_document(store, tmp_path, crawl,
                                                                                 monkeypatch):
    config = _config(tmp_path, store)
    assert crawl(config).code == 0  # the odd key is a line, no failure
    (closed,) = free_ports(1)
    with refusing(f"http://127.0.0.1:{closed}", store.scheme, Rule("", 503)) as slow:  # only ever 'slow down'
        cases = {"closed": store.elsewhere(closed), "throttled": store.elsewhere(slow.server_port),
                 "refused": store.refused}  # fake-gcs-server takes any login: no refusal there
        for name, environment in cases.items():
            if not environment:
                continue
            monkeypatch.setenv(*environment)
            run = crawl(config)
            assert run.code == 1 and run.counts["deleted"] == 0 and run.counts["kept"] == 4, (name, run.report)
            lines = [p for p in run.report["problems"] if p["kind"] == "incomplete"]
            assert len(lines) == 1 and lines[0]["url"] == store.url("docs/"), (name, run.report["problems"])
            assert not store.secret or store.secret not in json.dumps(run.report) + run.stderr + run.stdout
            assert len(indexed(tmp_path)) == 4
            assert {"throttled": "503", "refused": "AuthorizationFailure (HTTP 403)"}.get(name, "") in lines[0][
                "reason"], lines
        assert slow.refused >= 1
    monkeypatch.setenv(*store.environment)
    store.drop()
    gone = crawl(config)
    assert gone.counts["deleted"] == 0 and len(indexed(tmp_path)) == 4
    (reason,) = gone.problems("discover").values()
    assert reason.startswith(f"cannot list {store.url('docs/')}: ") and "(HTTP 404)" in reason, reason


def test_an_object_deleted_between_listing_and_reading_is_an_oserror(store, tmp_path):
    """The read stage's side of the source, without a pipeline."""
    from beamtrawl.pipeline.config import load_config
    from beamtrawl.transforms.sources import Sources
    from beamtrawl.transforms.sources.settings import SourceSettings

    config = load_config(str(_config(tmp_path, store)))
    url = store.url("docs/puffin.txt")
    source = Sources(SourceSettings.from_config(config))(url)
    for alias in {url, url.replace("az://", "abfss://", 1)}:  # adlfs's spelling of a container reads the same
        with Sources(SourceSettings.from_config(config))(alias).open_document(alias) as stream:
            assert stream.read() == b"the puffin nests on cliffs"
    store.delete("docs/puffin.txt")
    with pytest.raises(OSError, match=r"cannot open: .*\(HTTP 404\)|read failed"), source.open_document(url) as stream:
        stream.read()


def test_init_for_a_bucket_writes_a_file_that_crawls_as_written(store, tmp_path):
    config = tmp_path / "crawl.yaml"
    done = beamtrawl("init", store.url("docs/"), "--output", str(config), check_dac=False)
    assert done.returncode == 0, done.stderr
    text = config.read_text(encoding="utf-8")
    assert f"{store.scheme}:" in text and (not store.secret or store.secret not in text)
    run = beamtrawl("crawl", str(config), "--direct_num_workers=2")
    assert run.returncode == 0, run.stderr
    found = beamtrawl("search", "gannet", "--config", str(config), "--json", check_dac=False)
    assert [h["url"] for h in json.loads(found.stdout)] == [store.url("docs/birds/gannet.txt")]


@pytest.mark.parametrize(("section", "problem"), [
    ({"gs": {"page_size": 0}}, "gs.page_size: must be at least 1, got 0"),
    ({"gs": {"endpoint_url": "ftp://127.0.0.1/"}}, "gs.endpoint_url: must be an http:// or https:// URL"),
    ({"az": {"account_url": "https://key@acct.blob.core.windows.net"}}, "az.account_url: must be an http"),
    ({"az": {"max_attempts": 21}}, "az.max_attempts: must be at most 20, got 21"),
    ({"az": {"retry_seconds": 1}}, "az.retry_seconds: unknown key"),
    ({"start": [{"url": "gs://B/"}]}, "start[0].url: a gs:// start URL is gs://bucket/[prefix/] (a bucket name is"),
    ({"start": [{"url": "az://a--b/"}]}, "start[0].url: a az:// start URL is az://bucket/[prefix/] (a container"),
    ({"start": [{"url": "abfss://xy/"}]}, "start[0].url: a abfss:// start URL is abfss://bucket/[prefix/]"),
])
def test_a_configuration_mistake_names_file_key_and_problem(tmp_path, section, problem):
    from beamtrawl.pipeline.config import load_config
    from beamtrawl.pipeline.config.loader import ConfigError

    path = tmp_path / "crawl.yaml"
    path.write_text(yaml.safe_dump({"start": [{"url": "gs://bucket/docs/"}], "index": {"path": "i.sqlite"},
                                    **section}), encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(str(path))
    assert str(raised.value).startswith(f"{path}: {problem}"), str(raised.value)


@pytest.mark.parametrize("store", ["az"], indirect=True)
def test_an_azure_login_from_a_credentials_entry(store, tmp_path, crawl, search, monkeypatch):
    """The account and its key from a credentials entry for the container (the key from the environment), the
    service at az.account_url; no connection string."""
    from tests.servers.azurite import ACCOUNT

    monkeypatch.delenv(store.environment[0])
    monkeypatch.setenv("BT_AZURE_KEY", store.secret)
    endpoint = store.environment[1].split("BlobEndpoint=")[1].rstrip(";")
    config = crawl_file(tmp_path, store.url("docs/"), az={"account_url": endpoint}, credentials=[
        {"url": store.url(), "username": ACCOUNT, "password": "${BT_AZURE_KEY}"}])
    run = crawl(config)
    assert run.code == 0 and run.counts["written"] == 4, run.stderr
    assert search(config, "gannet")[0]["url"] == store.url("docs/birds/gannet.txt")


@pytest.mark.parametrize("store", ["az"], indirect=True)
def test_a_container_at_account_url_as_hadoop_spells_it(store, tmp_path, crawl, search):
    """``abfss://container@account.dfs.core.windows.net/`` (as Hadoop and Spark spell it) is crawled under its own
    URLs, the account the connection string's; the emulator at az.account_url."""
    from tests.servers.azurite import ACCOUNT

    home = f"abfss://{store.bucket}@{ACCOUNT}.dfs.core.windows.net/"
    endpoint = store.environment[1].split("BlobEndpoint=")[1].rstrip(";")
    config = crawl_file(tmp_path, home.replace("abfss://", "ABFSS://", 1) + "docs/", az={"account_url": endpoint})
    first = crawl(config)
    assert first.code == 0 and first.counts["written"] == 4, first.stderr
    assert set(indexed(tmp_path)) == {home + key for key in FOUND}
    assert search(config, "gannet")[0]["url"] == home + "docs/birds/gannet.txt"
    before = len(requests(store.log, 0))
    again = crawl(config)
    assert again.code == 0 and again.counts["unchanged"] == 4 and again.counts["read"] == 0, again.stderr
    assert [line for line in requests(store.log, before) if store.reads(line)] == []


@pytest.mark.parametrize(("url", "problem"), [
    ("abfss://docs@devstoreaccount2.dfs.core.windows.net/", ("account 'devstoreaccount2' is not the one of "
                                                            "AZURE_STORAGE_CONNECTION_STRING ('devstoreaccount1')")),
    ("abfss://docs@my-acct.dfs.core.windows.net/", "'my-acct': an account name is 3-24 lower case letters or digits"),
    ("abfs://a--b@devstoreaccount1.blob.core.windows.net/", "'a--b': a container name is 3-63 lower case"),
    ("abfss://docs@devstoreaccount1.example.com/", "a abfss:// start URL with an account is abfss://container@acc"),
    ("abfss://docs:KEY@devstoreaccount1.dfs.core.windows.net/", "must not hold a user or password"),
    ("abfss://docs@devstoreaccount1.dfs.core.windows.net/?sv=2024&sig=abc", "a abfss:// start URL holds no query"),
    ("s3://docs@bucket/", "must not hold a user or password"),
])
def test_a_container_at_account_url_mistake_names_file_key_and_problem(tmp_path, monkeypatch, url, problem):
    from beamtrawl.pipeline.config import load_config
    from beamtrawl.pipeline.config.loader import ConfigError

    from tests.servers.azurite import ACCOUNT, KEY

    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", f"AccountName={ACCOUNT};AccountKey={KEY}")
    path = tmp_path / "crawl.yaml"
    path.write_text(yaml.safe_dump({"start": [{"url": url}], "index": {"path": "i.sqlite"}}), encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(str(path))
    assert str(raised.value).startswith(f"{path}: start[0].url: {problem}"), str(raised.value)
    assert "abc" not in str(raised.value) and KEY not in str(raised.value)


@pytest.mark.parametrize("store", ["az"], indirect=True)
def test_the_delta_table_at_a_container_at_account_url(store, tmp_path, crawl, monkeypatch):
    """The table in the container as Hadoop spells it (delta-rs reads the account there), its key from the
    environment; an unchanged re-crawl writes no new version (the table's own file system for Azure,
    transforms/index/table_store.py: pyarrow's from_uri cannot log in there)."""
    from deltalake import DeltaTable

    from tests.servers.azurite import ACCOUNT

    monkeypatch.setenv("BT_AZURE_KEY", store.secret)
    endpoint = store.environment[1].split("BlobEndpoint=")[1].rstrip(";")
    home = f"abfss://{store.bucket}@{ACCOUNT}.dfs.core.windows.net/"
    options = {"account_key": "${BT_AZURE_KEY}", "azure_storage_endpoint": endpoint, "allow_http": "true"}
    config = crawl_file(tmp_path, home + "docs/", index={"table": home + "lake/docs", "storage_options": options},
                        report=str(tmp_path / "table.report.json"))  # the table's own is in the container
    first = crawl(config)
    assert first.code == 0 and first.counts["written"] == 4, first.stderr
    opened = {**options, "account_key": store.secret}
    table = DeltaTable(home + "lake/docs", storage_options=opened)
    assert sorted(table.to_pyarrow_table(columns=["url"])["url"].to_pylist()) == sorted(home + key for key in FOUND)
    version = table.version()
    again = crawl(config)
    assert again.code == 0 and again.counts["unchanged"] == 4, again.stderr
    assert DeltaTable(home + "lake/docs", storage_options=opened).version() == version


@pytest.mark.parametrize("store", ["az"], indirect=True)
def test_a_container_at_account_url_with_a_credentials_entry(store, tmp_path, crawl, monkeypatch):
    """The login of a container@account URL from its credentials entry; an entry of another account is one
    incomplete line that keeps every document."""
    from tests.servers.azurite import ACCOUNT

    monkeypatch.delenv(store.environment[0])
    monkeypatch.setenv("BT_AZURE_KEY", store.secret)
    endpoint = store.environment[1].split("BlobEndpoint=")[1].rstrip(";")
    home = f"abfss://{store.bucket}@{ACCOUNT}.dfs.core.windows.net/"

    def config(account: str) -> Path:
        return crawl_file(tmp_path, home + "docs/", az={"account_url": endpoint}, credentials=[
            {"url": home, "username": account, "password": "${BT_AZURE_KEY}"}])

    run = crawl(config(ACCOUNT))
    assert run.code == 0 and run.counts["written"] == 4, run.stderr
    other = crawl(config("otheraccount"))
    assert other.code == 1 and other.counts["deleted"] == 0 and len(indexed(tmp_path)) == 4, other.report
    assert other.problems("discover") == {home + "docs/": f"cannot list {home}docs/: the credentials entry's account "
                                                          f"'otheraccount' is not the URL's '{ACCOUNT}'"}
    assert store.secret not in json.dumps(other.report) + other.stderr
