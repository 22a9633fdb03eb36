"""A server speaking Azure Blob Storage on a free port of 127.0.0.1: Azurite, Microsoft's emulator, run by node
as its own process from the copy ``tests/run.sh`` installs from npm (``npm install --prefix
~/.cache/beamtrawl/azurite azurite@3.37.0``), its blobs in the test's folder. Clients reach it through a
connection string with Azurite's well-known development account, as they reach a real account.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.servers.jvm import free_ports, start, stop, wait_port

VERSION = "3.37.0"
HOME = Path.home() / ".cache" / "beamtrawl" / "azurite"
MAIN = HOME / "node_modules" / "azurite" / "dist" / "src" / "blob" / "main.js"
INSTALL = f"npm install --prefix {HOME} azurite@{VERSION}"
#: Azurite's development account and its key, the same in every copy (published in Azurite's README).
ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@dataclass(frozen=True)
class AzuriteServer:
    account_url: str  # the blob service of the development account
    log: Path  # the server's access log: one line per request it answered

    def connection_string(self, key: str = KEY) -> str:
        return (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={key};"
                f"BlobEndpoint={self.account_url};")


@contextlib.contextmanager
def running_azurite(folder: Path) -> Iterator[AzuriteServer]:
    """The blob service, its blobs and log in ``folder``; stopped on leaving."""
    node = shutil.which("node")
    if node is None or not MAIN.exists():
        raise RuntimeError(f"Azurite is not installed: run tests/run.sh once, or `{INSTALL}` (needs node)")
    (port,) = free_ports(1)
    log = folder / "azurite.log"
    process = start([node, str(MAIN), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location",
                     str(folder / "blobs"), "--skipApiVersionCheck", "--loose"], log, cwd=folder)
    try:
        wait_port(port, process, log, timeout=60)
        yield AzuriteServer(f"http://127.0.0.1:{port}/{ACCOUNT}", log)
    finally:
        stop(process)
