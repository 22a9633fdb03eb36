"""The issue's bad input, once per store (s3://, gs://, az://), through a proxy in front of each store's server on
loopback that answers some requests as the cloud would (tests/servers/refusing.py): a 403 on one prefix, a 503
storm on one prefix, an object gone between its listing and its reading, a login the store refuses, and keys
with every odd character a store allows. Each is one report line and nothing else is lost. (A bucket gone
before the crawl: tests/test_object_stores.py and tests/test_object_stores_gcs_azure.py.)"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

import boto3
import pytest

from tests.servers.refusing import Rule, refusing
from tests.test_object_stores import crawl_file, indexed

OBJECTS = {"docs/puffin.txt": "the puffin nests on cliffs", "docs/birds/gannet.txt": "a gannet dives for fish",
           "docs/birds/tern.txt": "the tern migrates farthest", "docs/fish/cod.txt": "the cod swims deep"}
#: Printable characters each store takes in a key, a URL's reserved ones among them (GCS and S3 take a tab too).
ODD = " ü😀~!@$&'()*+,;=:%[]{}<>^`|\"#?"
SEGMENT = "docs/two//slashes.txt"  # a key no URL can name (Azure's client cannot even write a dot segment)


@dataclass
class Store:
    scheme: str
    bucket: str
    upstream: str  # the server's endpoint, which the proxy forwards to
    put: Callable[[str, bytes], None]
    section: Callable[[int], dict]  # the crawl file's section for the proxy's port
    odd: str  # the odd characters of this store

    def url(self, key: str) -> str:
        from beamtrawl.transforms.sources.object_store import object_url

        return object_url(self.scheme, self.bucket, key)


def _s3(server, monkeypatch) -> Store:
    for name, value in server.storage_options().items():
        if name.startswith(("AWS_ACCESS", "AWS_SECRET", "AWS_REGION")):
            monkeypatch.setenv(name, value)
    bucket = f"bt-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=server.endpoint)
    client.create_bucket(Bucket=bucket)
    return Store("s3", bucket, server.endpoint, lambda key, data: client.put_object(Bucket=bucket, Key=key, Body=data),
                 lambda port: {"s3": {"endpoint_url": f"http://127.0.0.1:{port}", "max_attempts": 2}}, ODD + "\t")


def _gs(server, monkeypatch) -> Store:
    from google.cloud import storage

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.endpoint)
    bucket = storage.Client().create_bucket(f"bt-{uuid.uuid4().hex[:12]}")
    return Store("gs", bucket.name, server.endpoint, lambda key, data: bucket.blob(key).upload_from_string(data),
                 lambda port: {"gs": {"endpoint_url": f"http://127.0.0.1:{port}", "retry_seconds": 2}}, ODD + "\t")


def _az(server, monkeypatch) -> Store:
    from azure.storage.blob import BlobServiceClient

    from tests.servers.azurite import ACCOUNT

    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", server.connection_string())
    container = BlobServiceClient.from_connection_string(server.connection_string()).create_container(
        f"bt-{uuid.uuid4().hex[:12]}")
    upstream = server.account_url.removesuffix(f"/{ACCOUNT}")

    def section(port: int) -> dict:  # the proxy's address in the connection string, as a user would point it
        monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", server.connection_string().replace(
            server.account_url, f"http://127.0.0.1:{port}/{ACCOUNT}"))
        return {"az": {"max_attempts": 2}}

    return Store("az", container.container_name, upstream,
                 lambda key, data: container.upload_blob(key, data, overwrite=True), section, ODD)


@pytest.fixture(params=["s3", "gs", "az"])
def store(request, monkeypatch) -> Store:
    """A fresh bucket of one store holding OBJECTS."""
    make, server = {"s3": (_s3, "s3_server"), "gs": (_gs, "gcs_server"), "az": (_az, "azurite")}[request.param]
    made = make(request.getfixturevalue(server), monkeypatch)
    for key, text in OBJECTS.items():
        made.put(key, text.encode())
    return made


def test_a_refused_or_throttled_prefix_or_a_vanished_object_is_one_line_and_nothing_else_is_lost(store, tmp_path,
                                                                                                 crawl):
    with refusing(store.upstream, store.scheme) as proxy:
        section = store.section(proxy.server_port)
        section[store.scheme]["page_size"] = 1  # a flat listing stops after one key, its folders listed on
        config = crawl_file(tmp_path, store.url("docs/"), **section)
        first = crawl(config)
        assert first.code == 0 and first.counts["written"] == 4, first.stderr
        store.put("docs/herring.txt", b"a herring shoals")
        store.put("docs/puffin.txt", b"the puffin eats sand eels")
        proxy.rules[:] = [Rule("prefix=docs/birds/", 403),  # a prefix this login may not list
                          Rule("prefix=docs/fish/", 503),  # a store throttling a prefix past the retries
                          Rule("/docs/herring.txt", 404)]  # an object deleted after its listing, before its
        # reading (its path: a listing's page may name it in its query, as where the listing goes on)
        run = crawl(config)
        assert proxy.refused >= 4  # the 503s were retried
    assert run.code == 1 and set(run.problems()) == {store.url("docs/birds"), store.url("docs/fish"),
                                                     store.url("docs/herring.txt")}, run.report["problems"]
    assert "(HTTP 403)" in run.problems()[store.url("docs/birds")], run.problems()
    assert "503" in run.problems()[store.url("docs/fish")], run.problems()
    # S3 and GCS list flat: docs/birds/gannet.txt came on the first page, before the refused request (docs/birds/
    # listed on from there), so it is found unchanged; Azure is walked, and the whole prefix is refused
    kept = 3 if store.scheme == "az" else 2
    assert (run.counts["changed"], run.counts["kept"], run.counts["deleted"]) == (1, kept, 0), run.counts
    assert set(indexed(tmp_path)) == {store.url(key) for key in OBJECTS}


@pytest.mark.parametrize("store", ["s3", "gs"], indirect=True)
def test_a_login_the_store_refuses_is_one_line_and_keeps_every_document(store, tmp_path, crawl):
    """S3 answers a bad key 403, GCS an expired token 401: moto and fake-gcs-server take any login, so the proxy
    answers as the cloud would (Azure's refusal of a wrong key is Azurite's own: test_object_stores_gcs_azure)."""
    with refusing(store.upstream, store.scheme) as proxy:
        config = crawl_file(tmp_path, store.url("docs/"), **store.section(proxy.server_port))
        assert crawl(config).code == 0
        status = {"s3": 403, "gs": 401}[store.scheme]
        proxy.rules[:] = [Rule("", status)]
        run = crawl(config)
    assert run.code == 1 and list(run.problems()) == [store.url("docs/")], run.report["problems"]
    assert {"s3": "AccessDenied (HTTP 403)", "gs": "Anonymous credentials cannot be refreshed"}[store.scheme] in (
        run.problems()[store.url("docs/")])  # the anonymous client of an emulator tries to refresh, then gives up
    assert (run.counts["kept"], run.counts["deleted"]) == (4, 0) and len(indexed(tmp_path)) == 4


def test_keys_with_every_odd_character_a_store_allows(store, tmp_path, crawl, search):
    """Every printable character the store takes (URL delimiters, quotes, brackets, an emoji) in a key: indexed,
    found and named by a URL that reads it back; a key with a dot segment no URL can name is one line."""
    odd = f"docs/odd {store.odd} end.txt"
    store.put(odd, b"an oddly named kittiwake")
    store.put(SEGMENT, b"a key with an empty segment")
    with refusing(store.upstream, store.scheme) as proxy:
        config = crawl_file(tmp_path, store.url("docs/"), **store.section(proxy.server_port))
        run = crawl(config)
        assert run.code == 0 and run.counts["written"] == 5, run.stderr
        assert list(run.problems()) == [store.url("docs/two/")], run.report["problems"]
        (hit,) = search(config, "kittiwake")
        assert hit["url"] == store.url(odd)
        from beamtrawl.pipeline.config import load_config
        from beamtrawl.transforms.sources import Sources
        from beamtrawl.transforms.sources.settings import SourceSettings

        source = Sources(SourceSettings.from_config(load_config(str(config))))(hit["url"])
        with source.open_document(hit["url"]) as stream:
            assert stream.read() == b"an oddly named kittiwake"
