"""SMB connections (smbprotocol, SMB 2/3): list a share's folders with their files' ACLs, stream a file.

:mod:`transforms.sources.smb` imports this module only when a crawl expands or reads an ``smb://`` URL, so asking
the SMB source about a URL (a search's hit, its link) costs no smbprotocol import (about 70 ms).
"""

from __future__ import annotations

import io
import logging
import re
import struct
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

import smbclient
from beamtrawl.transforms.records import ACCESS_DENIED, Entry, FrontierItem, event
from beamtrawl.transforms.sources import smb_acl, smb_shares
from beamtrawl.transforms.sources.settings import SourceSettings
from beamtrawl.transforms.sources.smb import SmbSource
from beamtrawl.transforms.sources.walk import evidenced, walk_to_budget
from beamtrawl.transforms.urls import depth_below, doc_id, quote_segment
from smbclient._io import SMBDirectoryIO, SMBFileTransaction, SMBRawIO
from smbprotocol.exceptions import AccessDenied, NoMoreFiles, NoSuchFile, NtStatus, SMBException
from smbprotocol.file_info import FileAttributes, FileInformationClass
from smbprotocol.open import QueryDirectoryFlags, SMB2QueryDirectoryResponse
from smbprotocol.security_descriptor import AccessMask

# Their DEBUG traces dump protocol messages, authentication tokens included: never print them (--debug).
for _name in ("smbprotocol", "smbclient", "spnego"):
    logging.getLogger(_name).setLevel(logging.INFO)
_CONNECTIONS: dict = {}  # smbprotocol's connection cache for this worker process
_REGISTER = threading.Lock()
_ACL_THREADS: ThreadPoolExecutor | None = None  # started on first use, per worker process
_ACL_LOCAL = threading.local()
ACL_CONNECTIONS = 4  # connections per worker process that read security descriptors
_FAILURES = (OSError, ValueError, SMBException)  # a server that is down raises a plain ValueError
STATUS_NETWORK_ACCESS_DENIED = 0xC00000CA  # a share refusing the user (smbprotocol has no name for it)


class _Location:
    """Where a URL points: server, port, share and the UNC path smbclient takes, plus the login."""

    def __init__(self, url: str, settings: SourceSettings):
        parts = urlsplit(url)
        self.settings = settings
        self.host = parts.hostname or ""
        self.port = parts.port or SmbSource.default_ports["smb"]
        segments = [unquote(s, errors="surrogateescape") for s in parts.path.split("/") if s]
        self.share = segments[0] if segments else ""
        self.unc = "\\\\" + "\\".join([self.host, *segments])
        login = settings.login_for(url)
        self.kwargs = {"port": self.port, "connection_cache": _CONNECTIONS,
                       "username": login.username if login else None,
                       "password": login.password if login else None}

    def session(self) -> None:
        """Register the session once per server and user (smbclient then reuses it)."""
        with _REGISTER:
            smbclient.register_session(self.host, **self.kwargs)


def _reason(err: Exception) -> str:
    """A one-line reason without secrets: smbprotocol's messages name the path and the NT status."""
    if isinstance(err, OSError) and err.strerror:
        status = re.search(r"'(STATUS_\w+)'", err.strerror)
        return status.group(1) if status else err.strerror
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def _denied(err: Exception) -> bool:
    """Is this failure the server saying "access denied" (evidence), not a server that is down?"""
    status = getattr(err, "ntstatus", None) or getattr(err, "status", None)
    return isinstance(err, AccessDenied) or status in (NtStatus.STATUS_ACCESS_DENIED, STATUS_NETWORK_ACCESS_DENIED)


def _unavailable(url: str, what: str, err: Exception) -> Iterator:
    """The events for a container that could not be listed: incomplete, and ACCESS_DENIED on evidence."""
    yield event("incomplete", url, "discover", f"{what}: {_reason(err)}")
    if _denied(err):
        yield event(ACCESS_DENIED, url, "discover", "access denied: its indexed documents are hidden")


def _access(unc: str, login: dict, sid_names: dict[str, str]) -> smb_acl.Access:
    raw = SMBRawIO(unc, mode="r", desired_access=AccessMask.READ_CONTROL, **login)
    with SMBFileTransaction(raw) as transaction:
        smb_acl.query_security(transaction)
    return smb_acl.access(transaction.results[0], sid_names)


class _Child(NamedTuple):
    name: str
    is_dir: bool
    size: int
    mtime_ns: int


def _entry(url: str, folder: FrontierItem, child: _Child, access) -> Entry:
    return Entry(id=doc_id(url), url=url, root=folder.root, depth=depth_below(url, folder.root), size=child.size,
                 mtime_ns=child.mtime_ns, identity="", content=None, mimetype="", outlinks=[], etag="",
                 http_last_modified="", source_url=folder.url, link_text="",
                 groups=list(access.groups) if access else [], denied=list(access.denied) if access else [])


def _shares(item: FrontierItem, rules, location: _Location) -> Iterator:
    """A server: its disk shares go to the next round, each judged by the accept rules as a folder is;
    hidden ones (``name$``) only when a whitelist entry names them."""
    try:
        location.session()
        names = smb_shares.disk_shares(location.host, location.kwargs)
    except _FAILURES as err:  # server down or refusing: keep every document of its shares
        yield from _unavailable(item.url, "unavailable", err)
        return
    yield event("listed", count=len(names))
    shares = []
    for name in names:
        url = item.url.rstrip("/") + "/" + quote_segment(name.encode("utf-8", "surrogatepass"))
        if smb_shares.hidden(name) and not smb_shares.named_by(url, rules.whitelist):
            yield event("declined", url, "discover", "a hidden share the whitelist does not name")
            continue
        depth = depth_below(url, item.root)
        decision = rules.decide(url, depth + 1)  # walked only if what it holds could be accepted
        if not decision.accepted or not decision.parse:
            yield event("declined", url, "discover", "")
            continue
        shares.append(FrontierItem(url, item.root, depth, url, [], item.url, ""))
    yield from evidenced(item.url, iter(shares), lambda: shares)


def _access_groups(uncs: list[str], location: _Location) -> list:
    """Access of each file (or the exception that stopped reading it), or None per file when ACLs are
    not read. Descriptors are queried by ``ACL_CONNECTIONS`` threads, each over its own pooled
    connection: Samba serves one connection in one process, so one connection would serialise them."""
    settings = location.settings.of(SmbSource)
    if not settings.read_acls:
        return [None] * len(uncs)
    names = settings.sid_names

    def one(unc: str):
        caches = _ACL_LOCAL.__dict__.setdefault("caches", {})  # this thread's connection per server
        own = dict(location.kwargs, connection_cache=caches)
        try:
            with _REGISTER:
                smbclient.register_session(location.host, **own)
            return _access(unc, own, names)
        except _FAILURES as err:
            return err

    global _ACL_THREADS
    with _REGISTER:
        if _ACL_THREADS is None:
            _ACL_THREADS = ThreadPoolExecutor(ACL_CONNECTIONS, thread_name_prefix="smb-acl")
    return list(_ACL_THREADS.map(one, uncs))


def _file(url: str, folder: FrontierItem, child: _Child, access):
    """The entry of ``child`` of ``folder``, or the events for a file whose readers are unknown (never public: see the module)."""
    if isinstance(access, Exception):
        if _denied(access):  # evidence: its indexed version is hidden, a new one is not indexed
            yield event(ACCESS_DENIED, url, "discover",
                        f"cannot read its access control list: {_reason(access)}; hidden from every searcher")
            return
        yield event("failed", url, "discover", f"cannot read its access control list: {_reason(access)}")
        yield event("incomplete", url, "discover", "")  # no evidence: keep the indexed version
        return
    if access is not None and not access.groups:
        yield event(ACCESS_DENIED, url, "discover", "its access control list lets no one read it; "
                                                      "hidden from every searcher")
        return
    yield _entry(url, folder, child, access)


_FULL_INFO = struct.Struct("<II16xq8xq8xIII")  # FILE_FULL_DIR_INFORMATION up to the name (68 bytes)
_FILETIME_EPOCH = 116_444_736_000_000_000  # 1970-01-01 in 100 ns steps since 1601


def _scan(unc: str, location: _Location) -> list[_Child]:
    """One folder's entries (without . and ..) by SMB2 QUERY_DIRECTORY, parsed with ``struct``:
    smbclient.scandir builds an object tree per entry, which costs more than the round trips."""
    children = []
    with SMBDirectoryIO(unc, share_access="rwd", **location.kwargs) as directory:
        handle = directory.fd
        flags = QueryDirectoryFlags.SMB2_RESTART_SCANS
        while True:
            query, _receive = handle.query_directory("*", FileInformationClass.FILE_FULL_DIRECTORY_INFORMATION,
                                                     flags=flags, send=False)
            sent = handle.connection.send(query, handle.tree_connect.session.session_id,
                                          handle.tree_connect.tree_connect_id)
            try:
                answer = handle.connection.receive(sent)
            except (NoMoreFiles, NoSuchFile):  # the end of the listing (NoSuchFile: nothing matched)
                break
            response = SMB2QueryDirectoryResponse()
            response.unpack(answer["data"].get_value())
            buffer, offset = response["buffer"].get_value(), 0
            while True:
                following, _index, write_time, size, attributes, name_length, _ea = _FULL_INFO.unpack_from(
                    buffer, offset)
                name = buffer[offset + 68:offset + 68 + name_length].decode("utf-16-le", "surrogatepass")
                if name not in (".", ".."):
                    children.append(_Child(name, bool(attributes & FileAttributes.FILE_ATTRIBUTE_DIRECTORY),
                                           size, (write_time - _FILETIME_EPOCH) * 100))
                if not following:
                    break
                offset += following
            flags = 0
    return children


def _list(folder: FrontierItem, rules, location: _Location, stack: list):
    """List one folder: files become entries, sub-folders go on ``stack``; returns entries listed."""
    unc = _Location(folder.url, location.settings).unc
    try:
        children = _scan(unc, location)
    except _FAILURES as err:  # unreadable or vanished: its documents stay in the index, hidden if denied
        yield from _unavailable(folder.url, "cannot list folder", err)
        return 0
    prefix = folder.url.rstrip("/")
    yield event("listed", count=len(children))
    files = []
    for child in children:
        url = prefix + "/" + quote_segment(child.name.encode("utf-8", "surrogatepass"))
        depth = depth_below(url, folder.root)
        if child.is_dir:
            decision = rules.decide(url, depth + 1)  # walked only if what it holds could be accepted
            if not decision.accepted or not decision.parse:
                yield event("declined", url, "discover", "")
                continue
            stack.append(FrontierItem(url, folder.root, depth, url, [], folder.url, ""))
        else:
            decision = rules.decide(url, depth)
            if not decision.accepted or not decision.index:
                yield event("declined", url, "discover", "")
                continue
            files.append((url, child))
    groups = _access_groups([unc + "\\" + child.name for _url, child in files], location)
    for (url, child), readers in zip(files, groups):
        yield from _file(url, folder, child, readers)
    return len(children)


class _Stream(io.RawIOBase):
    """An SMB file as a stream whose failures are OSErrors (what the read stage reports)."""

    def __init__(self, handle):
        self.handle = handle

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            return self.handle.readinto(buffer)
        except _FAILURES as err:
            raise OSError(f"SMB read failed: {_reason(err)}") from None

    def close(self) -> None:
        try:
            self.handle.close()
        except _FAILURES:
            pass
        super().close()


def expand(item: FrontierItem, rules, budget: int | None, settings: SourceSettings) -> Iterator:
    """:meth:`SmbSource.expand`: a server's shares, a share's or folder's files and folders, or a start file."""
    location = _Location(item.url, settings)
    if not location.share:
        start = rules.start(item.url)
        if start is not None and not start.parse:
            yield event("declined", item.url, "discover", "")
        else:
            yield from _shares(item, rules, location)
        return
    try:
        location.session()
        st = smbclient.stat(location.unc, **location.kwargs)
    except _FAILURES as err:  # server down, share offline, no access: keep everything under it
        yield from _unavailable(item.url, "unavailable", err)
        return
    start = rules.start(item.url)
    if not st.st_file_attributes & FileAttributes.FILE_ATTRIBUTE_DIRECTORY:  # a start URL naming one file
        if start is not None and start.index:
            access = _access_groups([location.unc], location)[0]
            yield from _file(item.url, item, _Child("", False, st.st_size, st.st_mtime_ns), access)
        return
    if start is not None and not start.parse:
        yield event("declined", item.url, "discover", "")
        return
    yield from walk_to_budget([item], budget, lambda folder, stack: _list(folder, rules, location, stack))


def open_document(url: str, settings: SourceSettings) -> io.BufferedReader:
    """:meth:`SmbSource.open_document`."""
    location = _Location(url, settings)
    try:
        location.session()
        handle = smbclient.open_file(location.unc, mode="rb", buffering=0, share_access="rwd",
                                     **location.kwargs)
    except _FAILURES as err:
        raise OSError(f"cannot open: {_reason(err)}") from None
    return io.BufferedReader(_Stream(handle), buffer_size=1024 * 1024)
