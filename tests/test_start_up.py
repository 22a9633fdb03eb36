"""What a command loads: Beam (0.7 s) only once a pipeline is built, and a source's client only for
its scheme, so searching and a crawl that needs no pipeline (pipeline/unchanged.py) start fast."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from beamtrawl.transforms.sources import schemes, source_for


def test_the_driver_reads_a_config_and_searches_an_index_without_beam(tmp_path):
    """``beamtrawl search``'s own steps (load the configuration, open the index, search it), in a process
    that also imports the crawl's driver and the IMAP source: Beam is never loaded."""
    from tests.test_query_and_search import build_index

    build_index(tmp_path / "index.sqlite").close()
    config = tmp_path / "crawl.yaml"
    config.write_text(f"start: [{{url: {tmp_path}}}]\nindex: {{path: {tmp_path / 'index.sqlite'}}}\n")
    code = f"""import argparse, sys
import beamtrawl.pipeline.cli, beamtrawl.pipeline.crawl, beamtrawl.pipeline.unchanged
import beamtrawl.transforms.sources.imap, beamtrawl.transforms.records
from beamtrawl.pipeline.cli import _search
from beamtrawl.pipeline.config import load_config
assert _search(load_config({str(config)!r}, crawling=False), argparse.Namespace(
    query="spectrometer lamp", limit=10, json=True, mode="auto", like="")) == 0
sys.exit('apache_beam' in sys.modules)"""
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert [hit["url"].rsplit("/", 1)[-1] for hit in json.loads(done.stdout)] == ["notes.txt"]


def _index_of(path, urls: list[str]) -> None:
    """An embedded index at ``path`` with one public document per URL, each saying "tern" and its own number (the
    same content twice would be one hit)."""
    from beamtrawl.transforms.index import EmbeddedIndex
    from beamtrawl.transforms.preparators import Prepared
    from beamtrawl.transforms.prepare import PrepareOptions, make_document
    from beamtrawl.transforms.records import Entry, RawDocument
    from beamtrawl.transforms.urls import doc_id

    index = EmbeddedIndex(str(path))
    index.prepare()
    docs = [make_document(RawDocument(Entry(
        id=doc_id(url), url=url, root=url.rsplit("/", 1)[0], depth=0, size=9, mtime_ns=1_700_000_000_000_000_000,
        identity="", content=None, mimetype="", outlinks=[], etag="", http_last_modified="", source_url="",
        link_text=""), "text/plain", f"tern {i}".encode(), ""), Prepared(content=f"tern {i}"),
        PrepareOptions((), "fingerprint-1", 2**20, 1000)) for i, url in enumerate(urls)]
    assert index.upsert(docs) == []
    index.close()


def test_a_search_with_smb_and_imap_hits_imports_neither_client(tmp_path):
    """issue 29: ``beamtrawl search`` asks each hit's source about it (its local path, its own address), which
    imports the SMB and IMAP sources' modules — but not smbprotocol (~70 ms) or imapclient (~20 ms): they are
    imported where a connection is made."""
    urls = ["smb://fs/share/a.txt", "imap://mail/INBOX;UIDVALIDITY=1/;UID=2", "imaps://mail/INBOX;UIDVALIDITY=1/;UID=3",
            f"file://{tmp_path}/b.txt", "https://www.example.org/c.html"]
    _index_of(tmp_path / "index.sqlite", urls)
    config = tmp_path / "crawl.yaml"
    config.write_text(f"start: [{{url: {tmp_path}}}]\nindex: {{path: {tmp_path / 'index.sqlite'}}}\n")
    code = f"""import json, sys
from beamtrawl.pipeline.cli import main
status = main(["search", "tern", "--config", {str(config)!r}, "--limit", "10"])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("smbprotocol", "smbclient", "spnego",
      "imapclient") or m.startswith("beamtrawl.transforms.sources."))), file=sys.stderr)
sys.exit(status)"""
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert all(url.removeprefix("file://") in done.stdout for url in urls), done.stdout  # each hit where it lives
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert {"beamtrawl.transforms.sources.smb", "beamtrawl.transforms.sources.imap"} <= set(loaded)  # asked
    assert [m for m in loaded if not m.startswith("beamtrawl.")] == []
    assert "beamtrawl.transforms.sources.smb_client" not in loaded


@pytest.mark.parametrize("scheme", ["file", "http", "https", "smb", "imap", "imaps"])
def test_each_scheme_has_the_source_that_names_it(scheme):
    assert scheme in schemes()
    assert scheme in source_for(f"{scheme}://host/x").schemes


def test_beam_is_imported_without_mongodb_and_a_plugin_can_still_import_it():
    """runners/beam_import.py: Beam's MongoDB IO (pymongo, bson) is refused while Beam loads, quietly, and
    importable again afterwards; the workers' and the command's crawl path call it first."""
    code = """import sys
from beamtrawl.runners.beam_import import import_beam
import_beam()
assert "apache_beam" in sys.modules and "pymongo" not in sys.modules and "bson" not in sys.modules
import pymongo
print(pymongo.version)"""
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "bson" not in done.stderr  # Beam's warning that it found no bson is not shown
    assert done.stdout.strip()


def test_beam_is_imported_without_pyarrow_and_a_delta_table_store_still_imports_it():
    """runners/beam_import.py: pyarrow (Beam's Parquet IO and Arrow typehints) is refused while Beam loads, and
    neither the work folder's check nor Beam brings it; a Delta table's file system imports it when made."""
    code = """import sys
from beamtrawl.runners.beam_import import import_beam
import beamtrawl.pipeline.config.work_folder
import_beam()
assert "apache_beam" in sys.modules and "pyarrow" not in sys.modules
from beamtrawl.transforms.index.table_store import arrow_fs
print(type(arrow_fs("/tmp/table", {})[0]).__name__)"""
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["LocalFileSystem"]


def test_beam_is_imported_without_the_cloud_storage_clients_and_beartype_and_each_user_imports_them():
    """runners/beam_import.py: ``azure.core``, ``azure.storage.blob``, ``azure.identity``, ``google.cloud.storage``,
    beartype and BigQuery's IO (half of Beam's import) are left out while Beam loads; Beam's ``azfs://`` file
    system imports the first three when it makes its first client (with the exception its ``except``s name), its ``gs://`` file system is imported when a
    ``gs://`` path is first asked for, beartype at the first ``is_consistent_with(use_beartype=True)``, and
    BigQuery's IO by whoever imports it."""
    code = """import sys
from beamtrawl.runners.beam_import import import_beam
import_beam()
clients = ("azure.core", "azure.storage.blob", "azure.identity", "google.cloud.storage", "beartype",
           "apache_beam.io.gcp.bigquery")
assert "apache_beam" in sys.modules and not any(name in sys.modules for name in clients)
from apache_beam.io.azure.blobstorageio import BlobStorageIO
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
assert type(FileSystems.get_filesystem("azfs://account/container/x")).__name__ == "BlobStorageFileSystem"
key = "DefaultEndpointsProtocol=https;AccountName=account;AccountKey=a2V5;EndpointSuffix=core.windows.net"
client = BlobStorageIO(pipeline_options=PipelineOptions([f"--azure_connection_string={key}"])).client
from apache_beam.internal.azure import auth
assert auth._AZURE_AUTH_AVAILABLE
from apache_beam.io.azure import blobstorageio
from azure.core.exceptions import ResourceNotFoundError
assert blobstorageio.ResourceNotFoundError is ResourceNotFoundError
from apache_beam.typehints.typehints import is_consistent_with
assert is_consistent_with(int, int | str, use_beartype=True) and not is_consistent_with(int, str, use_beartype=True)
from apache_beam.io.gcp.bigquery import WriteToBigQuery  # noqa: F401 - importable as ever
print(type(client).__name__, type(FileSystems.get_filesystem("gs://bucket/x")).__name__,
      all(name in sys.modules for name in clients))"""
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["BlobServiceClient", "GCSFileSystem", "True"]


def test_beam_is_imported_without_fastavro_and_cryptography_and_their_users_still_work():
    """runners/beam_import.py: the names Beam's Avro coder and IO and its ``GroupByEncryptedKey`` take from fastavro
    and cryptography at start-up are stand-ins that import them at first use and are then replaced by them
    (identity, pickling); a plugin's own import gets them."""
    code = """import io, json, sys
from beamtrawl.runners.beam_import import import_beam
import_beam()
assert "apache_beam" in sys.modules and not any(name in sys.modules for name in ("fastavro", "cryptography"))
from apache_beam.coders.avro_record import AvroRecord
from apache_beam.coders.coders import AvroGenericCoder
from apache_beam.io import avroio
from apache_beam.transforms import util
schema = {"type": "record", "name": "r", "fields": [{"name": "a", "type": "string"}]}
coder = AvroGenericCoder(json.dumps(schema))
print(coder.decode(coder.encode(AvroRecord({"a": "coded"}))).record["a"])
out = io.BytesIO()
writer = avroio.Writer(out, schema, "null")
writer.write({"a": "written"})
writer.flush()
out.seek(0)
print(*(record["a"] for block in avroio.block_reader(out) for record in block))
fernet = util.Fernet(util.Secret.generate_secret_bytes())
print(fernet.decrypt(fernet.encrypt(b"sealed")).decode())
import pickle
import fastavro
from apache_beam.coders import coder_impl
from cryptography.fernet import Fernet
print(type(fastavro.parse_schema).__name__, util.Fernet is Fernet, coder_impl.parse_schema is fastavro.parse_schema,
      pickle.loads(pickle.dumps(avroio.Writer)) is fastavro.write.Writer)"""
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["coded", "written", "sealed", "cython_function_or_method", "True", "True", "True"]


def test_a_view_of_the_pipeline_options_is_made_once_and_shares_their_values():
    from apache_beam.options.pipeline_options import DirectOptions, TypeOptions
    from beamtrawl.runners import pipeline_options
    from beamtrawl.runners.view_once import ViewOnceOptions

    options = pipeline_options(None, ["--direct_num_workers=3"], target=type("T", (), {"local_only": True}))
    assert isinstance(options, ViewOnceOptions)
    assert options.view_as(TypeOptions) is options.view_as(TypeOptions)
    options.view_as(DirectOptions).direct_running_mode = "in_memory"
    assert options.view_as(DirectOptions).direct_running_mode == "in_memory"
    assert options.get_all_options()["direct_running_mode"] == "in_memory"
    assert options.view_as(DirectOptions).direct_num_workers == 3
