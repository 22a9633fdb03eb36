"""A server speaking Azure Blob Storage on a free port of 127.0.0.1: Azurite, Microsoft's emulator, run by node
as its own process from the copy ``tests/run.sh`` installs from npm (``python tests/servers/azurite.py install``:
``npm install --prefix ~/.cache/beamtrawl/azurite azurite@3.37.0``), its blobs in the test's folder. Clients reach it through a
connection string with Azurite's well-known development account, as they reach a real account.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

VERSION = "3.37.0"
HOME = Path.home() / ".cache" / "beamtrawl" / "azurite"
MAIN = HOME / "node_modules" / "azurite" / "dist" / "src" / "blob" / "main.js"
INSTALL = ["npm", "install", "--prefix", str(HOME), "--no-audit", "--no-fund", f"azurite@{VERSION}"]
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
    from tests.servers.jvm import free_ports, start, stop, wait_port  # this file also runs alone: install

    node = shutil.which("node")
    if node is None or not MAIN.exists():
        raise RuntimeError("Azurite is not installed: run tests/run.sh once, or python tests/servers/azurite.py install")
    (port,) = free_ports(1)
    log = folder / "azurite.log"
    process = start([node, str(MAIN), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location",
                     str(folder / "blobs"), "--skipApiVersionCheck", "--loose"], log, cwd=folder)
    try:
        wait_port(port, process, log, timeout=60)
        yield AzuriteServer(f"http://127.0.0.1:{port}/{ACCOUNT}", log)
    finally:
        stop(process)


def install() -> str:
    """Azurite from npm into the cache, once (a copy of another version is replaced); its main module."""
    package = MAIN.parents[3] / "package.json"
    if not package.exists() or json.loads(package.read_text(encoding="utf-8")).get("version") != VERSION:
        subprocess.run(INSTALL, check=True, stdout=subprocess.DEVNULL)
    return str(MAIN)


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        sys.exit("usage: python tests/servers/azurite.py install")
    print(install())
