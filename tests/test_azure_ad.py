"""Azure AD (Entra ID) logins: with no connection string, key or SAS, the az:// source, the Delta table in a
container and the work folder log in through Azure's credential chain (azure-identity's DefaultAzureCredential for
the source, the table's workers and Beam's azfs; delta-rs's own chain for the table's log), against Azurite taking
tokens over HTTPS (tests/servers/azurite.py, ``oauth=True``). The tokens come from a managed-identity endpoint on
loopback (IDENTITY_ENDPOINT/IDENTITY_HEADER, App Service's protocol): a stand-in for Entra ID, which no test on
loopback can reach. An expired or refused token is one report line, and nothing is lost."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import yaml
from deltalake import DeltaTable

from tests.conftest import beamtrawl
from tests.servers.azurite import ACCOUNT, KEY
from tests.test_object_stores import crawl_file, indexed
from tests.test_table import _row

OBJECTS = {"docs/puffin.txt": "the puffin nests on cliffs", "docs/birds/gannet.txt": "a gannet dives for fish",
           "docs/birds/sea/tern.md": "# Arctic tern\n\nthe tern migrates farthest"}


@pytest.fixture(scope="module")
def entra(tmp_path_factory):
    """(Azurite over HTTPS taking tokens, the managed-identity endpoint, a container holding OBJECTS)."""
    from azure.storage.blob import BlobServiceClient

    from tests.servers.azurite import managed_identity, running_azurite

    with running_azurite(tmp_path_factory.mktemp("azurite-oauth"), oauth=True) as azurite, \
            managed_identity() as identity, pytest.MonkeyPatch.context() as environment:
        environment.setenv("REQUESTS_CA_BUNDLE", str(azurite.cert))
        name = f"bt-{uuid.uuid4().hex[:12]}"
        container = BlobServiceClient.from_connection_string(azurite.connection_string()).create_container(name)
        for key, text in OBJECTS.items():
            container.upload_blob(key, text.encode())
        yield azurite, identity, container


@pytest.fixture
def logged_in(entra, monkeypatch):
    """The environment of a crawl on an Azure machine with a managed identity: no connection string, no key; the
    emulator's certificate trusted (Python's requests and OpenSSL, rustls)."""
    azurite, identity, container = entra
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING", raising=False)
    for variable, value in {**identity.environment, "REQUESTS_CA_BUNDLE": str(azurite.cert),
                            "SSL_CERT_FILE": str(azurite.cert)}.items():
        monkeypatch.setenv(variable, value)
    identity.lifetime, identity.refuse = 3600, False
    yield azurite, identity, container
    identity.lifetime, identity.refuse = 3600, False


def _crawl(config: Path, *extra: str) -> tuple[int, dict, str]:
    done = beamtrawl("crawl", str(config), "--direct_num_workers=2", *extra)
    report = Path(yaml.safe_load(config.read_text(encoding="utf-8"))["report"])
    return (done.returncode, json.loads(report.read_text(encoding="utf-8")) if report.exists() else {},
            done.stdout + done.stderr)


def test_the_source_the_table_and_the_work_folder_log_in_with_azure_ad(logged_in, tmp_path):
    azurite, identity, container = logged_in
    table = f"az://{container.container_name}/lake-{uuid.uuid4().hex[:6]}"
    options = {"azure_storage_account_name": ACCOUNT, "azure_storage_endpoint": azurite.account_url}
    config = crawl_file(tmp_path, f"az://{container.container_name}/docs/", az={"account_url": azurite.account_url},
                        index={"table": table, "storage_options": options}, report=str(tmp_path / "report.json"),
                        work_dir=f"abfss://{container.container_name}@{ACCOUNT}.dfs.core.windows.net/work")
    asked = identity.asked
    code, report, output = _crawl(config, f"--blob_service_endpoint={azurite.account_url}")
    assert code == 0 and report["counts"]["written"] == 3, (report.get("problems"), output[-3000:])
    assert identity.asked > asked and KEY not in output
    rows = DeltaTable(table, storage_options={**options, "msi_endpoint": identity.environment["IDENTITY_ENDPOINT"]})
    assert sorted(_row(row)["url"] for row in rows.to_pyarrow_table().to_pylist()) == sorted(
        f"az://{container.container_name}/{key}" for key in OBJECTS)
    kept = [blob.name for blob in container.list_blobs(name_starts_with="work/")]
    assert all(name.startswith("work/history/") for name in kept), kept
    bearer = [line for line in azurite.log.read_text(errors="replace").splitlines() if "/lake-" in line]
    assert bearer, "the table was not written through Azurite"


def test_an_expired_or_refused_token_is_one_report_line_and_nothing_is_lost(logged_in, tmp_path):
    azurite, identity, container = logged_in
    config = crawl_file(tmp_path, f"az://{container.container_name}/docs/", az={"account_url": azurite.account_url},
                        report=str(tmp_path / "report.json"))
    code, report, output = _crawl(config)
    assert code == 0 and report["counts"]["written"] == 3, (report.get("problems"), output[-3000:])
    before = indexed(tmp_path)
    for failure in ("expired", "refused"):
        if failure == "expired":
            identity.lifetime = -600  # Azurite: "Lifetime validation failed. The token is expired."
        else:
            identity.lifetime, identity.refuse = 3600, True  # the endpoint: no identity assigned
        code, report, output = _crawl(config)
        assert code == 1 and len(report["problems"]) == 1, (failure, report.get("problems"), output[-3000:])
        assert report["problems"][0]["url"] == f"az://{container.container_name}/docs/"
        assert ("AuthenticationFailed (HTTP 403)" if failure == "expired" else
                "no Azure AD token: ManagedIdentityCredential") in report["problems"][0]["reason"], report["problems"]
        assert report["counts"]["deleted"] == 0 and indexed(tmp_path) == before
        assert "Traceback" not in output and identity.environment["IDENTITY_HEADER"] not in output
