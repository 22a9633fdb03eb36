"""A server speaking Azure Blob Storage on a free port of 127.0.0.1: Azurite, Microsoft's emulator, run by node
as its own process from the copy ``tests/run.sh`` installs from npm (``python tests/servers/azurite.py install``:
``npm install --prefix ~/.cache/beamtrawl/azurite azurite@3.37.0``), its blobs in the test's folder. Clients reach it through a
connection string with Azurite's well-known development account, as they reach a real account.

With ``oauth=True`` Azurite also takes Azure AD tokens (``--oauth basic``: it checks a token's issuer, audience and
lifetime, not its signature) and so speaks HTTPS, with a certificate made here (clients trust it through
``AzuriteServer.cert``). :func:`managed_identity` hands out such tokens through the managed-identity endpoint
protocol of App Service (``IDENTITY_ENDPOINT``/``IDENTITY_HEADER``), which azure-identity's DefaultAzureCredential
and the Rust object_store (delta-rs) both speak: a stand-in for Entra ID, which cannot be reached from a test on
loopback (a real tenant needs the network and a registered identity; nothing else mints tokens Azurite accepts).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import ipaddress
import json
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

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
    cert: Path | None = None  # the authority that signed its HTTPS certificate (oauth=True), for the clients

    def connection_string(self, key: str = KEY) -> str:
        protocol = urlsplit(self.account_url).scheme
        return (f"DefaultEndpointsProtocol={protocol};AccountName={ACCOUNT};AccountKey={key};"
                f"BlobEndpoint={self.account_url};")


@contextlib.contextmanager
def running_azurite(folder: Path, oauth: bool = False) -> Iterator[AzuriteServer]:
    """The blob service, its blobs and log in ``folder`` (HTTPS taking Azure AD tokens too: ``oauth``); stopped on
    leaving."""
    from tests.servers.jvm import free_ports, start, stop, wait_port  # this file also runs alone: install

    node = shutil.which("node")
    if node is None or not MAIN.exists():
        raise RuntimeError("Azurite is not installed: run tests/run.sh once, or python tests/servers/azurite.py install")
    (port,) = free_ports(1)
    log = folder / "azurite.log"
    authority, cert, key = (_certificate(folder) if oauth else (None, None, None))
    tls = ["--oauth", "basic", "--cert", str(cert), "--key", str(key)] if oauth else []
    process = start([node, str(MAIN), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location",
                     str(folder / "blobs"), "--skipApiVersionCheck", "--loose", *tls], log, cwd=folder)
    try:
        wait_port(port, process, log, timeout=60)
        yield AzuriteServer(f"{'https' if oauth else 'http'}://127.0.0.1:{port}/{ACCOUNT}", log, authority)
    finally:
        stop(process)


def _certificate(folder: Path) -> tuple[Path, Path, Path]:
    """A certificate authority made here and a certificate for 127.0.0.1 it signed, with its key: PEM files in
    ``folder`` (the authority's, the server's, the key's). rustls (delta-rs) takes no authority's own certificate
    for a server's."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def made(subject: str, key, issuer: str, signer, authority: bool):
        return (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)])).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
                .not_valid_after(now + datetime.timedelta(days=2))
                .add_extension(x509.BasicConstraints(ca=authority, path_length=None), critical=True))

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    authority = made("beamtrawl tests CA", ca_key, "beamtrawl tests CA", ca_key, True).sign(ca_key, hashes.SHA256())
    server = made("127.0.0.1", key, "beamtrawl tests CA", ca_key, False).add_extension(
        x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False).sign(
        ca_key, hashes.SHA256())
    files = folder / "azurite-ca.pem", folder / "azurite-cert.pem", folder / "azurite-key.pem"
    files[0].write_bytes(authority.public_bytes(serialization.Encoding.PEM))
    files[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    files[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                           serialization.NoEncryption()))
    return files


def _token(lifetime: int) -> str:
    """An Azure AD access token for Azure Storage as Azurite's basic check reads it (unsigned: not checked)."""
    now = int(time.time())
    claims = {"aud": "https://storage.azure.com", "iss": "https://sts.windows.net/beamtrawl-tests/", "iat": now - 60,
              "nbf": now - 60, "exp": now + lifetime, "oid": "beamtrawl-crawler", "tid": "beamtrawl-tests"}

    def part(value: dict | bytes) -> str:
        raw = value if isinstance(value, bytes) else json.dumps(value).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.{part(b'unsigned')}"


@dataclass
class ManagedIdentity:
    """The endpoint's environment, what its tokens are, and the requests it answered."""
    environment: dict[str, str]
    lifetime: int = 3600  # of the tokens handed out; negative: expired as they are handed out
    refuse: bool = False  # answer 400 (no identity assigned) instead of a token
    asked: int = 0


@contextlib.contextmanager
def managed_identity() -> Iterator[ManagedIdentity]:
    """App Service's managed-identity endpoint on loopback: GET ?resource=…&api-version=… with the header
    ``X-IDENTITY-HEADER`` (or object_store's ``x-identity-header``) answers a token for that resource. Set
    ``environment`` (IDENTITY_ENDPOINT, IDENTITY_HEADER) for the clients; stopped on leaving."""
    secret = secrets.token_hex(16)
    identity = ManagedIdentity({})

    class Endpoint(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            identity.asked += 1
            resource = parse_qs(urlsplit(self.path).query).get("resource", [""])[0]
            if self.headers.get("X-IDENTITY-HEADER") != secret or identity.refuse or "storage" not in resource:
                return self._answer(400, {"error": "invalid_request", "error_description": "no identity here"})
            expires = int(time.time()) + max(identity.lifetime, 3600)  # the client believes it fresh either way
            return self._answer(200, {"access_token": _token(identity.lifetime), "expires_on": str(expires),
                                      "resource": resource, "token_type": "Bearer", "client_id": "beamtrawl"})

        def _answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:  # not the test's output
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    identity.environment.update(IDENTITY_ENDPOINT=f"http://127.0.0.1:{server.server_port}/msi/token",
                                IDENTITY_HEADER=secret)
    try:
        yield identity
    finally:
        server.shutdown()
        server.server_close()


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
