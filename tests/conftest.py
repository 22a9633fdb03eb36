"""Shared test helpers: write a configuration, run ``beamtrawl`` as a user would, read its report.

Crawls run as a subprocess of the real command. As root, the subprocess gives up the capabilities
that bypass file permissions, so "unreadable" files and folders are unreadable to the crawler too.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

DROP_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
            "--inh-caps=-dac_override,-dac_read_search", "--"]


@dataclass
class CrawlRun:
    code: int
    report: dict
    stdout: str
    stderr: str

    @property
    def counts(self) -> dict:
        return self.report["counts"]

    def problems(self, stage: str | None = None) -> dict[str, str]:
        """{url: reason} of the report's problems, optionally of one stage."""
        return {p["url"]: p["reason"] for p in self.report["problems"] if stage in (None, p["stage"])}


def beamtrawl_command(*args: str, check_dac: bool = True) -> list[str]:
    command = [sys.executable, "-m", "beamtrawl.pipeline.cli", *args]
    return DROP_DAC + command if check_dac and os.geteuid() == 0 else command


def beamtrawl(*args: str, check_dac: bool = True, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(beamtrawl_command(*args, check_dac=check_dac), capture_output=True, text=True,
                          timeout=timeout, check=False, cwd=Path(__file__).resolve().parent.parent)


def report_path(config: Path) -> Path:
    """Where a crawl of ``config`` writes its report: beside the embedded index or the table, or beside the
    configuration for OpenSearch; or where its ``report`` key says."""
    settings = yaml.safe_load(config.read_text(encoding="utf-8"))
    if settings.get("report"):
        return config.parent / settings["report"]
    index = settings["index"]
    if "path" in index:
        return (config.parent / index["path"]).with_suffix(".report.json")
    if "table" in index:  # beside a table in a local folder
        return Path(str(config.parent / index["table"]).rstrip("/") + ".report.json")
    return config.parent / f"beamtrawl-{index['name']}.report.json"


@pytest.fixture
def make_config(tmp_path):
    """Write a crawl configuration for ``root`` (a folder) and return its path."""

    def make(root: Path, name: str = "crawl.yaml", **settings) -> Path:
        url = "file://" + str(root)
        config = {"start": [{"url": url, "parse": True, "index": False}],
                  "whitelist": [{"prefix": url}],
                  "blacklist": [{"regex": ".*/\\.git/.*"}],
                  "index": {"path": str(tmp_path / "index.sqlite")},
                  "max_delete_ratio": 1.0}
        config.update(settings)
        path = tmp_path / name
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        return path

    return make


@pytest.fixture
def crawl():
    """Run ``beamtrawl crawl CONFIG`` and return its exit code, report and output."""

    def run(config: Path, *extra: str) -> CrawlRun:
        done = beamtrawl("crawl", str(config), "--direct_num_workers=2", *extra)
        path = report_path(config)
        report = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        return CrawlRun(done.returncode, report, done.stdout, done.stderr)

    return run


@pytest.fixture
def shares_folder():
    """Where a Samba test's shares live: outside pytest's tmp folders, which any pytest run on this
    machine makes private to root again (smbd, acting as the share user, then answers "access denied")."""
    folder = Path(tempfile.mkdtemp(prefix="beamtrawl-smb-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def search():
    """``beamtrawl search QUERY --config CONFIG --json`` → list of hits."""

    def run(config: Path, query: str, limit: int = 1000, groups: str | None = None) -> list[dict]:
        extra = ["--groups", groups] if groups is not None else []
        done = beamtrawl("search", query, "--config", str(config), "--json", "--limit", str(limit), *extra,
                         check_dac=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    return run


@pytest.fixture(scope="session")
def node_dir():
    """A folder OpenSearch's service user can reach, so a node keeps its data across restarts."""
    folder = Path(tempfile.mkdtemp(prefix="beamtrawl-os-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def opensearch(node_dir):
    """One OpenSearch node (tests/servers/opensearch.py) shared by the session's tests; its URL. Its heap is 1 GB:
    one worker's files keep their indexes in it (the cluster test's too), and at 512 MB a full suite's run met the
    parent circuit breaker (429 "Data too large") in test_opensearch.py."""
    from tests.servers.opensearch import running_node

    with running_node(node_dir / "shared", heap="1g") as url:
        yield url


def unique_index_name(node_id: str, label: str = "") -> str:
    """An OpenSearch index name that no other test uses: the test's name, cut to stay readable, then a hash
    of its whole node id (module, class, name, parameters) and ``label``. Names cut from the test's name or
    its folder alone collide: pytest cuts folder names to 30 characters."""
    name = node_id.rsplit("::", 1)[-1]
    readable = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40].strip("-")
    digest = hashlib.sha256(f"{node_id}\0{label}".encode()).hexdigest()[:10]
    return "-".join(part for part in (readable, digest, label.lower()) if part)


def assert_no_index(url: str, name: str) -> None:
    """Fail unless the node at ``url`` has no index or alias ``name``: a test starts on an empty index."""
    try:
        with urllib.request.urlopen(urllib.request.Request(f"{url}/{name}", method="HEAD"), timeout=30):
            pytest.fail(f"the index {name!r} already exists on {url} before the test starts")
    except urllib.error.HTTPError as err:
        if err.code != 404:
            raise


@pytest.fixture
def fresh_index(request, opensearch):
    """``fresh_index(label="", url=opensearch)`` → an index name unique to this test (and label), checked
    absent from the node the first time it is asked for; asking again gives the same name."""
    checked: set[tuple[str, str]] = set()

    def make(label: str = "", url: str = opensearch) -> str:
        name = unique_index_name(request.node.nodeid, label)
        if (url, name) not in checked:
            assert_no_index(url, name)
            checked.add((url, name))
        return name

    return make


@pytest.fixture
def os_config(tmp_path, make_config, opensearch, fresh_index):
    """Write a crawl configuration for ``root`` into an OpenSearch index of this test's own (fresh_index)."""

    def make(root: Path, url: str = opensearch, **settings) -> Path:
        name = fresh_index(url=url)
        return make_config(root, name="os.yaml", index={"url": url, "name": name, **settings.pop("index", {})},
                           **settings)
    return make


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A server speaking S3 on loopback (tests/servers/s3.py): tests that name ``s3://`` address it."""
    from tests.servers.s3 import running_s3

    with running_s3(tmp_path_factory.mktemp("s3")) as server:
        yield server


@pytest.fixture(scope="session")
def gcs_server(tmp_path_factory):
    """fake-gcs-server on loopback (tests/servers/gcs.py): clients reach it through STORAGE_EMULATOR_HOST."""
    from tests.servers.gcs import running_gcs

    with running_gcs(tmp_path_factory.mktemp("gcs")) as server:
        yield server


@pytest.fixture(scope="session")
def azurite(tmp_path_factory):
    """Azurite on loopback (tests/servers/azurite.py): clients reach it through its connection string."""
    from tests.servers.azurite import running_azurite

    with running_azurite(tmp_path_factory.mktemp("azurite")) as server:
        yield server


def installed_for_crawls(tmp_path_factory, package: str) -> str:
    """A folder holding the test distribution ``tests/data/<package>`` (a preparator or plugin registered
    by entry points), for PYTHONPATH: crawls and their workers run in other processes."""
    target = tmp_path_factory.mktemp(package)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--no-build-isolation", "--no-deps", "--target", str(target),
                    str(Path(__file__).resolve().parent / "data" / package)], check=True, capture_output=True)
    return str(target)
