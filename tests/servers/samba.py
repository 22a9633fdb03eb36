"""A real Samba server (Debian's ``smbd``) on a free port of 127.0.0.1, for tests and benchmarks.

Everything lives in one folder: a self-contained ``smb.conf``, the passdb, locks, state, cache and
logs; nothing is written under /etc, /var or /run. Every SMB user needs a unix user behind it
(``useradd``, kept between runs). Shares use ``vfs objects = acl_xattr`` so Windows ACLs (deny
entries included) set over SMB are stored and enforced, as on a Windows file server.
Needs root (``smbd`` switches to the share user) and ``apt-get install samba smbclient``.

With ``rpc=True`` Samba's RPC services (srvsvc: the list of shares) are served by ``samba-dcerpcd``,
started next to smbd (``rpc start on demand helpers = no`` keeps smbd from starting it itself). Its
``rpcd_*`` helpers open their default log under /var/log/samba before they read smb.conf, so it runs in
a private mount namespace (``unshare --mount``) where /var/log/samba is this folder; where namespaces
are not allowed it runs without one and those helpers leave empty log files there.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.servers import require

DCERPCD = "/usr/libexec/samba/samba-dcerpcd"  # Debian's path (samba package)


def free_port() -> int:
    from tests.servers.jvm import free_ports

    return free_ports(1)[0]


def unix_user(name: str, groups: tuple[str, ...] = ()) -> int:
    """Create (once) a system user and its extra groups; returns the uid."""
    for group in groups:
        with contextlib.suppress(KeyError):
            grp.getgrnam(group)
            continue
        subprocess.run(["groupadd", "--system", group], check=True)
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                       check=True)
    if groups:
        subprocess.run(["usermod", "-a", "-G", ",".join(groups), name], check=True)
    return pwd.getpwnam(name).pw_uid


def _open_parents(path: Path) -> None:
    """smbd switches to the share user: every folder above a share must be traversable."""
    for parent in path.resolve().parents:
        mode = parent.stat().st_mode
        if not mode & 0o001:
            os.chmod(parent, mode | 0o001)


@dataclass
class Samba:
    folder: Path
    port: int
    conf: Path
    shares: dict[str, Path] = field(default_factory=dict)
    rpc: bool = False
    process: subprocess.Popen | None = None
    rpc_process: subprocess.Popen | None = None

    def url(self, share: str = "", path: str = "") -> str:
        return f"smb://127.0.0.1:{self.port}/{share}" + (f"/{path}" if path else "")

    def sid(self, user: str) -> str:
        """The SID Samba gave an SMB user (``pdbedit``)."""
        out = subprocess.run(["pdbedit", "-s", str(self.conf), "-L", "-v", "-u", user], capture_output=True,
                             text=True, check=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines()
                    if line.startswith("User SID:"))

    def smbclient(self, share: str, command: str, user: str, password: str) -> subprocess.CompletedProcess:
        """Run Samba's own ``smbclient`` against a share (the baseline of the SMB benchmark)."""
        return subprocess.run(["smbclient", "-s", str(self.conf), "-p", str(self.port),
                               f"//127.0.0.1/{share}", "-U", f"{user}%{password}", "-c", command],
                              capture_output=True, text=True, check=False)

    def start(self) -> None:
        with open(self.folder / "smbd.out", "ab") as log:  # the child keeps its own copy of the handle
            self.process = subprocess.Popen(
                ["smbd", "--foreground", "--no-process-group", "--debug-stdout", f"--configfile={self.conf}"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        if self.rpc:
            self._start_rpc()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"smbd exited: {(self.folder / 'smbd.out').read_text(errors='replace')}")
            time.sleep(0.05)
        raise RuntimeError("smbd did not start listening")

    def _start_rpc(self) -> None:
        command = [DCERPCD, "--foreground", "--libexec-rpcds", "--no-process-group", "--debug-stdout",
                   f"--configfile={self.conf}"]
        if subprocess.run(["unshare", "--mount", "true"], capture_output=True, check=False).returncode == 0:
            command = ["unshare", "--mount", "sh", "-c",
                       'mount --bind "$0" /var/log/samba && exec "$@"', str(self.folder), *command]
        with open(self.folder / "dcerpcd.out", "ab") as log:
            self.rpc_process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True)
        srvsvc = self.folder / "ncalrpc" / "np" / "srvsvc"
        deadline = time.monotonic() + 30
        while not srvsvc.exists():
            if self.rpc_process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("samba-dcerpcd did not start: "
                                   + (self.folder / "dcerpcd.out").read_text(errors="replace"))
            time.sleep(0.05)

    def stop(self) -> None:
        for process in (self.process, self.rpc_process):
            if process is not None and process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        self.process = self.rpc_process = None


def _conf(folder: Path, port: int, shares: dict[str, dict[str, str]]) -> str:
    lines = [
        "[global]", "workgroup = BEAMTRAWL", "server role = standalone server", f"smb ports = {port}",
        "interfaces = 127.0.0.1", "bind interfaces only = yes", "disable netbios = yes",
        "server min protocol = SMB2", f"passdb backend = tdbsam:{folder}/private/passdb.tdb",
        f"private dir = {folder}/private", f"lock directory = {folder}/lock",
        f"state directory = {folder}/state", f"cache directory = {folder}/cache",
        f"pid directory = {folder}/pid", f"ncalrpc dir = {folder}/ncalrpc", f"log file = {folder}/log.%m",
        "log level = 1", "rpc start on demand helpers = no", "load printers = no",
        "printcap name = /dev/null", "map to guest = never", "vfs objects = acl_xattr",
        "acl_xattr:ignore system acls = yes", "store dos attributes = yes", "unix extensions = no", "",
    ]
    for name, options in shares.items():
        lines.append(f"[{name}]")
        lines += [f"{key} = {value}" for key, value in options.items()]
        lines.append("")
    return "\n".join(lines)


@contextlib.contextmanager
def running_samba(folder: Path, users: dict[str, str], shares: dict[str, dict[str, str]],
                  groups: dict[str, tuple[str, ...]] | None = None, rpc: bool = False) -> Iterator[Samba]:
    """Start smbd with ``users`` ({name: password}) and ``shares`` ({name: smb.conf options, with
    ``path``}); ``groups`` gives unix groups per user; ``rpc`` also serves the RPC services (srvsvc).
    Stops the whole process groups on exit."""
    require("smbd", "smbpasswd", *([DCERPCD] if rpc else []))
    folder = Path(folder)
    for sub in ("private", "lock", "state", "cache", "pid", "ncalrpc"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = folder / "smb.conf"
    conf.write_text(_conf(folder, port, shares), encoding="utf-8")
    for name, password in users.items():
        unix_user(name, (groups or {}).get(name, ()))
        subprocess.run(["smbpasswd", "-c", str(conf), "-a", "-s", name], input=f"{password}\n{password}\n",
                       text=True, capture_output=True, check=True)
    for options in shares.values():
        _open_parents(Path(options["path"]))
    samba = Samba(folder, port, conf, {name: Path(o["path"]) for name, o in shares.items()}, rpc)
    samba.start()
    try:
        yield samba
    finally:
        samba.stop()


def set_acl(unc: str, aces: list[tuple[str, str, int]], **login) -> None:
    """Replace the DACL of a file or folder over SMB (SET_INFO SECURITY): ``aces`` are
    (``"allow"`` or ``"deny"``, SID, access mask) in the order the server should keep them.
    ``login`` holds smbclient's keyword arguments (port, username, password, connection_cache)."""
    from smbclient._io import SMBFileTransaction, SMBRawIO
    from smbprotocol.file_info import InfoType
    from smbprotocol.open import InfoAdditionalInformation, SMB2SetInfoRequest, SMB2SetInfoResponse
    from smbprotocol.security_descriptor import (
        AccessAllowedAce,
        AccessDeniedAce,
        AccessMask,
        AclPacket,
        SDControl,
        SIDPacket,
        SMB2CreateSDBuffer,
    )

    acl = AclPacket()
    entries = []
    for kind, sid, mask in aces:
        ace = AccessAllowedAce() if kind == "allow" else AccessDeniedAce()
        packet = SIDPacket()
        packet.from_string(sid)
        ace["sid"] = packet
        ace["mask"] = mask
        entries.append(ace)
    acl["aces"] = entries
    descriptor = SMB2CreateSDBuffer()
    descriptor["control"].set_flag(SDControl.SELF_RELATIVE)
    descriptor.set_dacl(acl)
    raw = SMBRawIO(unc, mode="r", desired_access=AccessMask.WRITE_DACL | AccessMask.READ_CONTROL, **login)
    with SMBFileTransaction(raw) as transaction:
        request = SMB2SetInfoRequest()
        request["info_type"] = InfoType.SMB2_0_INFO_SECURITY
        request["additional_information"] = InfoAdditionalInformation.DACL_SECURITY_INFORMATION
        request["file_id"] = transaction.raw.fd.file_id
        request["buffer"] = descriptor

        def receive(sent):
            response = SMB2SetInfoResponse()
            response.unpack(transaction.raw.fd.connection.receive(sent)["data"].get_value())
            return response

        transaction += (request, receive)
