"""OpenSearch as a secured cluster meets its clients: HTTPS with a certificate of its own CA and basic
auth, from Debian's nginx as a reverse proxy on a free port of 127.0.0.1 in front of the tests' node
(the node itself runs without the security plugin: Maven Central's needs a node of its exact version).
Everything lives in one folder; the log names each request's method, path, status, Content-Encoding and
size (head and body).
Needs root and ``apt-get install nginx openssl`` (tests/run.sh).
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.servers import require
from tests.servers.dovecot import _certificate
from tests.servers.jvm import free_ports, stop, wait_port


@dataclass(frozen=True)
class TlsProxy:
    url: str  # https://127.0.0.1:PORT
    ca_file: Path  # the proxy's own certificate, self-signed: the CA to trust
    log: Path


@contextlib.contextmanager
def tls_proxy(folder: Path, upstream: str, username: str, password: str) -> Iterator[TlsProxy]:
    """nginx serving ``upstream`` (http://host:port) over TLS to those who log in as ``username``."""
    require("nginx", "openssl")
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = _certificate(folder)
    hashed = subprocess.run(["openssl", "passwd", "-apr1", password], capture_output=True, text=True,
                            check=True).stdout.strip()
    (folder / "htpasswd").write_text(f"{username}:{hashed}\n")
    (port,) = free_ports(1)
    log = folder / "access.log"
    (folder / "nginx.conf").write_text(f"""
daemon off;
master_process off;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 64; }}
http {{
  log_format requests '$request_method $uri $status encoding=$http_content_encoding bytes=$request_length';
  access_log {log} requests;
  client_body_temp_path {folder}/body;
  proxy_temp_path {folder}/proxy;
  fastcgi_temp_path {folder}/fastcgi;
  uwsgi_temp_path {folder}/uwsgi;
  scgi_temp_path {folder}/scgi;
  client_max_body_size 200m;
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    auth_basic "OpenSearch";
    auth_basic_user_file {folder}/htpasswd;
    location / {{
      proxy_pass {upstream};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Authorization "";
    }}
  }}
}}
""")
    with (folder / "nginx.out").open("wb") as out:
        process = subprocess.Popen(["nginx", "-c", str(folder / "nginx.conf"), "-p", str(folder)], stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_port(port, process, folder / "error.log", timeout=30)
        yield TlsProxy(f"https://127.0.0.1:{port}", cert, log)
    finally:
        stop(process)
