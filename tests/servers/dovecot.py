"""A real Dovecot IMAP server (Debian's ``dovecot-imapd``) on free ports of 127.0.0.1, for tests and
benchmarks: plain IMAP with STARTTLS and IMAPS, a self-signed certificate for 127.0.0.1, maildirs,
users from a passwd-file. Everything lives in one folder; nothing is written under /etc, /var or /run.
Needs root and ``apt-get install dovecot-imapd openssl``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.servers import require

MAIL_USER = "beamtrawl-mail"


def free_port() -> int:
    from tests.servers.jvm import free_ports

    return free_ports(1)[0]


def _mail_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(MAIL_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", MAIL_USER],
                       check=True)
        return pwd.getpwnam(MAIL_USER)


@dataclass
class Dovecot:
    folder: Path
    imap_port: int
    imaps_port: int
    ca_file: Path
    process: subprocess.Popen | None = None

    def url(self, scheme: str = "imap", path: str = "") -> str:
        port = self.imaps_port if scheme == "imaps" else self.imap_port
        return f"{scheme}://127.0.0.1:{port}/{path}"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # the whole group: logged-in sessions too
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None


def _certificate(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out",
                    str(cert)], check=True, capture_output=True)
    return cert, key


def _conf(folder: Path, imap_port: int, imaps_port: int, cert: Path, key: Path) -> str:
    mail = _mail_user()
    return f"""
protocols = imap
listen = 127.0.0.1
base_dir = {folder}/run
state_dir = {folder}/state
instance_name = beamtrawl-{imap_port}
log_path = {folder}/dovecot.log
info_log_path = {folder}/dovecot.log
default_internal_user = dovecot
default_login_user = dovenull
mail_uid = {mail.pw_uid}
mail_gid = {mail.pw_gid}
first_valid_uid = 1
mail_location = maildir:{folder}/mail/%u
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
ssl = yes
ssl_cert = <{cert}
ssl_key = <{key}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {folder}/auth/users
}}
userdb {{
  driver = passwd-file
  args = username_format=%u {folder}/auth/users
}}
namespace inbox {{
  inbox = yes
  separator = /
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap_port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {imaps_port}
    ssl = yes
  }}
}}
service anvil {{
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
"""


@contextlib.contextmanager
def running_dovecot(users: dict[str, str]) -> Iterator[Dovecot]:
    """Start Dovecot with ``users`` ({name: password}); stops the whole process group on exit.
    Its folder is a fresh temporary one with the modes the mail and auth users need."""
    require("dovecot")
    folder = Path(tempfile.mkdtemp(prefix="beamtrawl-dovecot-"))
    os.chmod(folder, 0o755)  # the auth process (user dovecot) reads the passwd-file below it
    mail = _mail_user()
    for sub in ("run", "state", "auth", "mail"):
        (folder / sub).mkdir()
    os.chown(folder / "mail", mail.pw_uid, mail.pw_gid)
    (folder / "auth" / "users").write_text(
        "".join(f"{name}:{{PLAIN}}{password}::::::\n" for name, password in users.items()), encoding="utf-8")
    os.chmod(folder / "auth" / "users", 0o644)
    cert, key = _certificate(folder)
    imap_port, imaps_port = free_port(), free_port()
    conf = folder / "dovecot.conf"
    conf.write_text(_conf(folder, imap_port, imaps_port, cert, key), encoding="utf-8")
    server = Dovecot(folder, imap_port, imaps_port, cert)
    with open(folder / "dovecot.out", "wb") as log:  # the child keeps its own copy of the handle
        server.process = subprocess.Popen(["dovecot", "-F", "-c", str(conf)], stdout=subprocess.DEVNULL,
                                          stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", imap_port), timeout=1):
                break
            if server.process.poll() is not None or time.monotonic() > deadline:
                logs = [folder / name for name in ("dovecot.out", "dovecot.log") if (folder / name).exists()]
                text = " ".join(p.read_text(errors="replace") for p in logs)
                raise RuntimeError(f"dovecot did not start: {text}")
            time.sleep(0.05)
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
