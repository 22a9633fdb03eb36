"""Bucket hits opened through ``beamtrawl serve``'s /document/<id>, for s3://, gs:// and az:// against their
servers on loopback (moto, fake-gcs-server, Azurite): streamed by default with the object's own content type,
or as a redirect to a short-lived signed URL where the store's login can sign (``delivery: signed``); a hidden
document is 404 and costs the store no request, a vanished object is a clear 410."""

from __future__ import annotations

import urllib.request
import uuid
from pathlib import Path

import boto3
import pytest
import yaml

from tests.conftest import beamtrawl
from tests.serve_site import Site, add_users, get, served

STORES = ("s3", "gs", "az")
PUBLIC = {"docs/public/guide.txt": (b"the puffin field guide", "text/plain"),
          "docs/public/counts.txt": (b"puffins,3\nterns,5\n", "text/csv"),  # the object's type, not the name's
          "docs/public/gone.txt": (b"a puffin that flew away", "text/plain"),
          "docs/public/flown.txt": (b"another puffin that flew away", "text/plain"),
          "docs/public/notes.txt": (b"puffin notes", "text/plain")}  # replaced by HTML after the crawl
HIDDEN = {"docs/hidden/salaries.txt": (b"puffin keepers' salaries", "text/plain")}


def _s3(server, bucket: str) -> tuple:
    client = boto3.client("s3", endpoint_url=server.endpoint)
    client.create_bucket(Bucket=bucket)
    return {"endpoint_url": server.endpoint}, lambda key, data, kind: client.put_object(
        Bucket=bucket, Key=key, Body=data, ContentType=kind), lambda key: client.delete_object(Bucket=bucket, Key=key)


def _gs(server, bucket: str) -> tuple:
    from google.cloud import storage

    made = storage.Client().create_bucket(bucket)
    return {"endpoint_url": server.endpoint}, lambda key, data, kind: made.blob(key).upload_from_string(data, content_type=kind), lambda key: made.blob(
        key).delete()


def _az(server, bucket: str) -> tuple:
    from azure.storage.blob import BlobServiceClient, ContentSettings

    made = BlobServiceClient.from_connection_string(server.connection_string()).create_container(bucket)
    return {}, lambda key, data, kind: made.upload_blob(key, data, overwrite=True, content_settings=ContentSettings(
        content_type=kind)), made.delete_blob


@pytest.fixture(scope="module")
def stores(s3_server, gcs_server, azurite, tmp_path_factory):
    """Three buckets holding PUBLIC and HIDDEN (hidden: group hr), crawled into one embedded index; the logins in
    the environment as a user's would be. Yields (the folder, {scheme: (bucket, section, delete, server log)})."""
    folder = tmp_path_factory.mktemp("delivery")
    bucket = f"bt-{uuid.uuid4().hex[:12]}"
    with pytest.MonkeyPatch.context() as environment:
        for name, value in s3_server.storage_options().items():
            if name.startswith(("AWS_ACCESS", "AWS_SECRET", "AWS_REGION")):
                environment.setenv(name, value)
        environment.setenv("STORAGE_EMULATOR_HOST", gcs_server.endpoint)
        environment.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string())
        made = {}
        for scheme, make, server in (("s3", _s3, s3_server), ("gs", _gs, gcs_server), ("az", _az, azurite)):
            section, put, delete = make(server, bucket)
            for key, (data, kind) in {**PUBLIC, **HIDDEN}.items():
                put(key, data, kind)
            made[scheme] = (section, delete, server.log, put)
        config = _config(folder, bucket, made, "stream")
        done = beamtrawl("crawl", str(config), "--direct_num_workers=1", "-q")
        assert done.returncode == 0, done.stderr
        yield folder, bucket, made


def _config(folder: Path, bucket: str, made: dict, delivery: str) -> Path:
    config = folder / f"{delivery}.yaml"
    config.write_text(yaml.safe_dump({
        "start": [{"url": f"{scheme}://{bucket}/docs/"} for scheme in STORES],
        "index": {"path": str(folder / "index.sqlite")}, "report": str(folder / "report.json"),
        **{scheme: {**section, "delivery": delivery} for scheme, (section, *_) in made.items()},
        "access_control": [{"url_rules": [{"prefix": f"{scheme}://{bucket}/docs/hidden/", "groups": ["hr"]}
                                          for scheme in STORES]}]}), encoding="utf-8")
    return config


@pytest.fixture(scope="module")
def streamed(stores):
    folder, bucket, made = stores
    with served(Site(folder, _config(folder, bucket, made, "stream"), add_users(folder))) as base:
        yield base, bucket, made


def _document(base: str, url: str, user: str | None = None):
    from beamtrawl.transforms.urls import doc_id

    return get(f"{base}/document/{doc_id(url)}", user)


@pytest.mark.parametrize("scheme", STORES)
def test_an_object_streams_through_serve_with_its_own_content_type(streamed, scheme):
    base, bucket, _ = streamed
    for key, shown in (("docs/public/guide.txt", "inline"), ("docs/public/counts.txt", "attachment")):
        status, headers, body = _document(base, f"{scheme}://{bucket}/{key}")
        assert (status, body) == (200, PUBLIC[key][0]), body
        assert headers["Content-Type"] == PUBLIC[key][1]  # as the object was stored, though its name says .txt
        assert headers["Content-Disposition"].startswith(f'{shown}; filename="{key.rsplit("/", 1)[1]}"')
        assert "sandbox" in headers["Content-Security-Policy"] and headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize("scheme", STORES)
def test_a_hidden_object_is_404_and_costs_its_store_no_request(streamed, scheme):
    base, bucket, made = streamed
    log = made[scheme][2]
    before = len(log.read_text(errors="replace").splitlines())
    for user in (None, "bob"):
        status, _, body = _document(base, f"{scheme}://{bucket}/docs/hidden/salaries.txt", user)
        assert status == 404 and b"salar" not in body.lower() and bucket.encode() not in body
    assert not [line for line in log.read_text(errors="replace").splitlines()[before:] if "hidden" in line]
    status, _, body = _document(base, f"{scheme}://{bucket}/docs/hidden/salaries.txt", "alice")
    assert (status, body) == (200, HIDDEN["docs/hidden/salaries.txt"][0])


def test_a_vanished_object_is_a_clear_410(streamed, stores):
    base, bucket, made = streamed
    for scheme, (_, delete, *_) in made.items():
        delete("docs/public/gone.txt")
        status, _, body = _document(base, f"{scheme}://{bucket}/docs/public/gone.txt")
        assert status == 410 and b"no longer where it was indexed" in body, (scheme, status, body[:300])


def test_signed_delivery_redirects_to_a_short_lived_url_of_the_store(stores, gcs_server, monkeypatch):
    """S3 (a presigned GET), GCS (a V4 signed URL, signed with a service account's key) and Azure (a read-only
    SAS) redirect to their store, which sends the object (moto and Azurite with serve's disposition;
    fake-gcs-server ignores it). A hidden object is still 404 and a vanished one still 410, with no address."""
    from tests.servers.gcs import service_account

    folder, bucket, made = stores
    monkeypatch.delenv("STORAGE_EMULATOR_HOST")  # gs.endpoint_url names the server: the login is the key file's
    with service_account(folder) as key:
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
        with served(Site(folder, _config(folder, bucket, made, "signed"), folder / "users")) as base:
            _signed(base, bucket, made)


def _signed(base: str, bucket: str, made: dict) -> None:
    for scheme in STORES:
        _html_uploaded_since_the_crawl_is_not_sent_as_html(base, bucket, made, scheme)
        status, headers, body = _document(base, f"{scheme}://{bucket}/docs/public/guide.txt")
        assert status == 303, (scheme, status, body[:300])
        address = headers["Location"]
        assert address.startswith("http://127.0.0.1:"), address
        assert headers["Cache-Control"] == "no-store"
        with urllib.request.urlopen(address, timeout=30) as answer:
            assert answer.read() == PUBLIC["docs/public/guide.txt"][0]
            assert scheme == "gs" or answer.headers["Content-Disposition"].startswith(
                'inline; filename="guide.txt"'), scheme
        status, headers, _ = _document(base, f"{scheme}://{bucket}/docs/hidden/salaries.txt")
        assert status == 404 and "Location" not in headers
        made[scheme][1]("docs/public/flown.txt")
        status, headers, body = _document(base, f"{scheme}://{bucket}/docs/public/flown.txt")
        assert status == 410 and "Location" not in headers, (scheme, status, body[:300])


def _html_uploaded_since_the_crawl_is_not_sent_as_html(base: str, bucket: str, made: dict, scheme: str) -> None:
    """The URL forces the type serve decided at the crawl (text, inline): a page written over the object since
    cannot run its script on the store's origin (fake-gcs-server ignores what a URL asks to be sent with)."""
    made[scheme][3]("docs/public/notes.txt", b"<script>alert(document.domain)</script>", "text/html")
    status, headers, _ = _document(base, f"{scheme}://{bucket}/docs/public/notes.txt")
    assert status == 303, (scheme, status)
    with urllib.request.urlopen(headers["Location"], timeout=30) as answer:
        assert scheme == "gs" or answer.headers["Content-Type"].startswith("text/plain"), (scheme, answer.headers)


def test_a_login_that_cannot_sign_streams_instead(stores):
    """fake-gcs-server's anonymous login (STORAGE_EMULATOR_HOST) holds no key: no address, serve streams."""
    from beamtrawl.pipeline.config import load_config
    from beamtrawl.transforms.index.base import Stored
    from beamtrawl.transforms.sources import Sources
    from beamtrawl.transforms.sources.settings import SourceSettings

    folder, bucket, made = stores
    url = f"gs://{bucket}/docs/public/guide.txt"
    source = Sources(SourceSettings.from_config(load_config(str(_config(folder, bucket, made, "signed")))))(url)
    stored = Stored(id="", url=url, title="", filename="guide.txt", mimetype="text/plain", size=22)
    assert source.signed_address(stored, "inline", "text/plain") == ""




def test_a_store_that_hangs_is_a_504_within_the_bound_and_serve_answers_meanwhile(stores, s3_server, gcs_server,
                                                                                  azurite, monkeypatch):
    """Stores that accept the connection and never answer (tests/servers/refusing.py, HANG) end the requests for
    their documents within serve's --document-seconds with a 504, the reason in the log only (before: 502 after
    303 s for S3, 324 s for Azure, 61 s for GCS); meanwhile serve answers searches, and once the stores' clients
    gave up at the same bound, the documents serve's threads for them were all busy with are sent too."""
    import threading
    import time

    from beamtrawl.pipeline.serve.deliveries import DELIVERY_THREADS

    from tests.servers.azurite import ACCOUNT
    from tests.servers.refusing import HANG, Rule, refusing

    folder, bucket, _ = stores
    hang = Rule("docs/public/guide.txt", HANG)
    with refusing(s3_server.endpoint, "s3", hang) as s3, refusing(gcs_server.endpoint, "gs", hang) as gs, \
            refusing(azurite.account_url.removesuffix(f"/{ACCOUNT}"), "az", hang) as az:
        monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite.connection_string().replace(
            azurite.account_url, f"http://127.0.0.1:{az.server_port}/{ACCOUNT}"))
        sections = {"s3": ({"endpoint_url": f"http://127.0.0.1:{s3.server_port}"},),
                    "gs": ({"endpoint_url": f"http://127.0.0.1:{gs.server_port}"},), "az": ({},)}
        config = _config(folder, bucket, sections, "stream").rename(folder / "hanging.yaml")
        with served(Site(folder, config, folder / "users"), "--document-seconds", "4") as base:
            for scheme in STORES:  # each store's client made (boto3 alone takes seconds to import on a busy machine:
                # a first request may be a 504 while its thread goes on making the client)
                tries = [_document(base, f"{scheme}://{bucket}/docs/public/counts.txt")[0] for _ in range(3)]
                assert 200 in tries, tries
            answers = []

            def ask(scheme: str) -> None:
                started = time.monotonic()
                status, _, body = _document(base, f"{scheme}://{bucket}/docs/public/guide.txt")
                answers.append((scheme, status, time.monotonic() - started, body))

            askers = [threading.Thread(target=ask, args=(STORES[i % 3],)) for i in range(DELIVERY_THREADS + 2)]
            for asker in askers:
                asker.start()
            assert get(f"{base}/api/search?q=puffin")[0] == 200
            for asker in askers:
                asker.join()
            for scheme, status, seconds, body in answers:
                assert status == 504 and seconds < 10 and b"did not answer in time" in body, (scheme, status, seconds)
                assert b"guide" not in body and b"within" not in body
            assert [_document(base, f"{scheme}://{bucket}/docs/public/counts.txt")[0] for scheme in STORES] == [200] * 3
        said = (folder / f"serve-{base.rsplit(':', 1)[1]}.log").read_text(encoding="utf-8")
        for scheme in STORES:
            assert f"{scheme}://{bucket}/docs/public/guide.txt: not opened for a searcher in time: " in said, said
        assert "Traceback" not in said
