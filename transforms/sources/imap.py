"""IMAP mailboxes (``imap://`` with STARTTLS or plain, ``imaps://`` with TLS) through IMAPClient.

Strictly read-only, unlike regain (which marked every message read): folders are opened with
EXAMINE and bodies fetched with BODY.PEEK, so no flag changes. URLs follow RFC 5092::

    imap://host/Folder/Sub;UIDVALIDITY=385759045/;UID=20             a message (message/rfc822)
    imap://host/Folder/Sub;UIDVALIDITY=385759045/;UID=20/;SECTION=2  one of its attachments

Discovery lists each folder's UIDs with RFC822.SIZE, INTERNALDATE and BODYSTRUCTURE, never bodies,
so a known message keeps its id, size and date and the freshness join leaves it alone. A message
deleted on the server is not found and its document is deleted; a new UIDVALIDITY gives every
message of the folder a new URL, so the folder is re-indexed and the old documents go. A folder
that cannot be opened is reported as "incomplete", which keeps its documents (freshness also
treats ``Folder;UIDVALIDITY=n`` as lying under ``Folder``).

A start URL naming the server or a folder lists that folder and all folders below it; folders past
the walk budget are handed to the next discovery round. Connections are opened on first use and
pooled per worker process and login; logins come from ``credentials:``.
"""

from __future__ import annotations

import contextlib
import email
import email.policy
import imaplib
import io
import logging
import mimetypes
import re
import ssl
import threading
from collections.abc import Iterator
from datetime import UTC
from typing import TYPE_CHECKING, ClassVar, NamedTuple
from urllib.parse import quote, unquote, urlsplit

from beamtrawl.transforms.fields import FileWhenCrawling, Flag, Section
from beamtrawl.transforms.records import Entry, FrontierItem, event
from beamtrawl.transforms.sources.base import StartHints
from beamtrawl.transforms.sources.settings import SourceSettings
from beamtrawl.transforms.sources.walk import evidenced, walk_to_budget
from beamtrawl.transforms.urls import depth_below, doc_id

if TYPE_CHECKING:  # imapclient is imported where a connection is made: asking the source about a URL costs none
    from imapclient import IMAPClient

# imapclient's own names for imaplib's errors (imapclient.exceptions): catching them needs no imapclient import
IMAPClientError, IMAPClientAbortError = imaplib.IMAP4.error, imaplib.IMAP4.abort

logging.getLogger("imapclient").setLevel(logging.INFO)  # its DEBUG trace shows commands, LOGIN included
_FAILURES = (OSError, IMAPClientError, ssl.SSLError)  # IMAPClientError covers imaplib's errors
_MESSAGE = re.compile(r"^(?P<folder>imaps?://[^/]+/.*?);UIDVALIDITY=(?P<validity>\d+)/;UID=(?P<uid>\d+)"
                      r"(?:/;SECTION=(?P<section>[\d.]+))?$")
_SEGMENT_SAFE = "!$&'()*+,=:@~"  # ";" and "/" are escaped inside a folder name
_FETCH_CHUNK = 1000  # UIDs per FETCH command
_LISTING = ["RFC822.SIZE", "INTERNALDATE", "BODYSTRUCTURE"]


def folder_url(server: str, name: str, delimiter: str) -> str:
    """``imap://host/A/B`` for folder ``A<delimiter>B``."""
    segments = name.split(delimiter) if delimiter else [name]
    return server + "/" + "/".join(quote(s, safe=_SEGMENT_SAFE) for s in segments)


def message_url(folder: str, uidvalidity: int, uid: int, section: str = "") -> str:
    url = f"{folder};UIDVALIDITY={uidvalidity}/;UID={uid}"
    return f"{url}/;SECTION={section}" if section else url


class ImapSettings(Section):
    """Mailboxes (imap:// and imaps://): TLS."""

    starttls: Flag = True
    """imap:// logs in only after STARTTLS; false: plain text, for trusted networks"""
    ca_file: FileWhenCrawling | None = None
    """certificates to trust instead of the system's"""


class _Server:
    """Scheme, host, port and login of a URL; the key of the connection pool."""

    def __init__(self, url: str, settings: SourceSettings):
        parts = urlsplit(url)
        self.settings = settings
        self.scheme = parts.scheme
        self.host = parts.hostname or ""
        self.port = parts.port or ImapSource.default_ports[self.scheme]
        self.base = f"{self.scheme}://{parts.netloc}"
        self.path = parts.path
        login = settings.login_for(url)
        self.login = (login.username, login.password) if login else None
        self.key = (self.scheme, self.host, self.port, login.username if login else "")

    def connect(self) -> IMAPClient:
        settings = self.settings.of(ImapSource)
        context = ssl.create_default_context(cafile=settings.ca_file)
        from imapclient import IMAPClient

        client = IMAPClient(self.host, self.port, ssl=self.scheme == "imaps", ssl_context=context, timeout=60)
        client.normalise_times = False  # INTERNALDATE with its zone: one instant whatever the worker's zone
        try:
            if self.scheme == "imap" and settings.starttls:
                client.starttls(context)
            if self.login:
                client.login(*self.login)
            root = client.list_folders("", "")  # LIST "" "": the hierarchy delimiter only
            delimiter = root[0][1] if root else None
            if isinstance(delimiter, bytes):
                delimiter = delimiter.decode()
            client.beamtrawl_delimiter = delimiter or ""
        except Exception:
            with contextlib.suppress(Exception):
                client.shutdown()
            raise
        client.beamtrawl_selected = None
        return client


_POOL: dict[tuple, list[IMAPClient]] = {}  # idle connections of this worker process, per login
_POOL_LOCK = threading.Lock()


def _call(server: _Server, work):
    """``work(client)`` on a pooled connection of this process. A connection that failed is closed, not
    returned; a pooled one that had gone stale (logged out by the server, socket closed) is replaced
    once by a fresh one."""
    for attempt in (1, 2):
        with _POOL_LOCK:
            idle = _POOL.setdefault(server.key, [])
            client = idle.pop() if idle else None
        pooled = client is not None
        if client is None:
            client = server.connect()
        try:
            result = work(client)
        except BaseException as err:
            with contextlib.suppress(Exception):
                client.shutdown()
            if pooled and attempt == 1 and isinstance(err, (OSError, IMAPClientAbortError)):
                continue
            raise
        with _POOL_LOCK:
            _POOL[server.key].append(client)
        return result
    raise AssertionError("unreachable")


def _examine(client: IMAPClient, name: str, fresh: bool = False) -> int:
    """Open a folder read-only (EXAMINE); returns its UIDVALIDITY. Reads reuse the folder a connection
    has open unless ``fresh`` (discovery always asks the server)."""
    if not fresh and client.beamtrawl_selected and client.beamtrawl_selected[0] == name:
        return client.beamtrawl_selected[1]
    client.beamtrawl_selected = None
    status = client.select_folder(name, readonly=True)
    validity = int(status[b"UIDVALIDITY"])
    client.beamtrawl_selected = (name, validity)
    return validity


def _reason(err: Exception) -> str:
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    return text.removeprefix("b'").removesuffix("'") if text.startswith("b'") else text


def _folder_name(url: str, delimiter: str) -> str:
    path = urlsplit(url).path.strip("/")
    return delimiter.join(unquote(s) for s in path.split("/")) if path else ""


class _Part(NamedTuple):
    """A message or one of its attachments, as the folder's listing describes it."""

    size: int
    mtime_ns: int
    mimetype: str
    name: str = ""  # an attachment's file name


def _entry(url: str, root: str, source: str, part: _Part) -> Entry:
    return Entry(id=doc_id(url), url=url, root=root, depth=depth_below(url, root), size=part.size,
                 mtime_ns=part.mtime_ns, identity="", content=None, mimetype=part.mimetype, outlinks=[], etag="",
                 http_last_modified="", source_url=source, link_text="", name=part.name)


def _folder_tree(client: IMAPClient, server: _Server, url: str, rules) -> list[tuple[str, str]]:
    """(name, URL) of the folders to list for ``url``: its tree for a start URL, else itself."""
    delimiter = client.beamtrawl_delimiter
    name = _folder_name(url, delimiter)
    names = [name] if rules.start(url) is None else _subtree(client, name, delimiter)
    return [(folder, folder_url(server.base, folder, delimiter)) for folder in names]


def _choose(folders: list[tuple[str, str]], url: str, root: str, rules) -> tuple[list[tuple[str, str]], list[str]]:
    """(name, URL) of the folders to walk, and the URLs of those the rules decline."""
    chosen, declined = [], []
    for folder, folder_link in folders:
        if folder_link != url.rstrip("/"):  # a folder below the start URL: walked if the rules say so
            decision = rules.decide(folder_link, depth_below(folder_link, root) + 1)
            if not decision.accepted or not decision.parse:
                declined.append(folder_link)
                continue
        chosen.append((folder, folder_link))
    return chosen, declined


def _subtree(client: IMAPClient, name: str, delimiter: str) -> list[str]:
    """Selectable folders at and below ``name`` ("" = the whole server), sorted."""
    found = []
    patterns = ["*"] if not name else [name, name + delimiter + "*"]
    for pattern in patterns:
        for flags, _delim, folder in client.list_folders("", pattern):
            if b"\\Noselect" not in flags and b"\\NonExistent" not in flags:
                found.append(folder)
    if name and name not in found:
        raise IMAPClientError(f"no such folder: {name}")
    return sorted(set(found))


def _messages(server: _Server, folder: str, url: str, item: FrontierItem, rules):
    """Entries for one folder's messages and attachments; returns how many messages it listed."""
    def list_folder(client: IMAPClient) -> tuple[int, dict]:
        validity = _examine(client, folder, fresh=True)
        uids = client.search(["ALL"])
        listing = {}
        for start in range(0, len(uids), _FETCH_CHUNK):
            listing.update(client.fetch(uids[start:start + _FETCH_CHUNK], _LISTING))
        return validity, listing

    try:
        validity, listing = _call(server, list_folder)
    except _FAILURES as err:  # its documents stay in the index
        yield event("incomplete", url, "discover", f"cannot open folder: {_reason(err)}")
        return 0
    yield event("listed", count=len(listing))
    for uid, data in sorted(listing.items()):
        murl = message_url(url, validity, uid)
        decision = rules.decide(murl, depth_below(murl, item.root))
        if not decision.accepted or not decision.index:
            yield event("declined", murl, "discover", "")
            continue
        stamp = data.get(b"INTERNALDATE")
        mtime_ns = int(stamp.astimezone(UTC).timestamp()) * 1_000_000_000 if stamp else 0
        yield _entry(murl, item.root, url, _Part(int(data.get(b"RFC822.SIZE", 0)), mtime_ns, "message/rfc822"))
        try:
            parts = list(_attachments(data.get(b"BODYSTRUCTURE")))
        except (TypeError, ValueError, IndexError, AttributeError):  # an unreadable structure: no attachments
            parts = []
            yield event("failed", murl, "discover", "unreadable BODYSTRUCTURE: attachments not indexed")
        for section, size, mimetype, name in parts:
            aurl = message_url(url, validity, uid, section)
            yield _entry(aurl, item.root, murl, _Part(size, mtime_ns, mimetype, name))
    return len(listing)


def _text(value, lower: bool = True) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")
    return text.lower() if lower else text


def _params(raw, lower: bool = True) -> dict[str, str]:
    """A BODYSTRUCTURE parameter list by lower-cased name; values lower-cased too unless ``lower`` is False."""
    if not isinstance(raw, tuple):
        return {}
    return {_text(raw[i]): _text(raw[i + 1], lower) for i in range(0, len(raw) - 1, 2)}


def _quoted(params: dict[str, str], key: str) -> str:
    """The parameters named ``key`` (RFC 2231 parts ``key*``, ``key*0*`` … too) as header text."""
    def quote(value: str) -> str:
        return " ".join(value.split()).replace("\\", "\\\\").replace('"', '\\"')  # no line breaks
    return "".join(f'; {name}="{quote(value)}"' for name, value in params.items()
                   if name == key or name.startswith(key + "*"))


def _attachment_name(disposition_params: dict[str, str], type_params: dict[str, str], section: str,
                     mimetype: str) -> str:
    """The part's file name as a mail program shows it: Content-Disposition's ``filename``, else
    Content-Type's ``name``, RFC 2231 (``filename*=utf-8''%E2%82%AC.pdf``, continuations) and RFC 2047
    (``name="=?UTF-8?B?…?="``) decoded by the email package's own header parser. Without one,
    ``part-<section>`` with the extension its declared type usually has. It is the index's file name
    and extension (``extension:gif``); the section stays in the URL."""
    headers = (f"Content-Type: {mimetype}{_quoted(type_params, 'name')}\n"
               f"Content-Disposition: attachment{_quoted(disposition_params, 'filename')}\n\n")
    name = ""
    with contextlib.suppress(Exception):  # parameters the parser cannot make sense of: no name
        name = " ".join((email.message_from_string(headers, policy=email.policy.default).get_filename()
                         or "").split())
    return name or f"part-{section}" + (mimetypes.guess_extension(mimetype, strict=False) or "")


def _attachments(body, prefix: str = "") -> Iterator[tuple[str, int, str, str]]:
    """(section, encoded size, MIME type, file name) of each attachment in a BODYSTRUCTURE: parts with
    an attachment disposition or a file name, and attached messages (prepared whole by the mail
    preparator). The type is given for attached messages only (libmagic calls many of them text);
    other attachments are sniffed, as senders often declare application/octet-stream."""
    if body is None:
        return
    if body.is_multipart:
        for number, part in enumerate(body[0], 1):
            if part.is_multipart:
                yield from _attachments(part, f"{prefix}{number}.")
            else:
                yield from _leaf(part, f"{prefix}{number}")
    # a single-part message has no attachments: its one part is the message's body


def _leaf(part, section: str) -> Iterator[tuple[str, int, str, str]]:
    kind, subtype = _text(part[0]), _text(part[1])
    base = {"text": 8, "message": 10 if subtype == "rfc822" else 7}.get(kind, 7)
    disposition = part[base + 1] if len(part) > base + 1 else None
    disposition_kind = _text(disposition[0]) if isinstance(disposition, tuple) and disposition else ""
    disposition_params = _params(disposition[1] if isinstance(disposition, tuple) and len(disposition) > 1
                                 else None, lower=False)
    type_params = _params(part[2], lower=False)
    named = any(key.startswith(("filename", "name")) for key in (*disposition_params, *type_params))
    is_attached_message = kind == "message" and subtype == "rfc822"
    if disposition_kind == "attachment" or is_attached_message or (
            named and (kind, subtype) not in (("text", "plain"), ("text", "html"))):
        name = _attachment_name(disposition_params, type_params, section, f"{kind}/{subtype}")
        yield section, int(part[6] or 0), "message/rfc822" if is_attached_message else "", name


def _fetch(url: str, settings: SourceSettings) -> bytes:
    match = _MESSAGE.match(url)
    if not match:
        raise OSError("not an IMAP message URL")
    server = _Server(url, settings)
    uid, section = int(match["uid"]), match["section"]
    items = ["BODY.PEEK[]"] if not section else [f"BODY.PEEK[{section}.MIME]", f"BODY.PEEK[{section}]"]

    def fetch(client: IMAPClient) -> dict | str:
        folder = _folder_name(match["folder"], client.beamtrawl_delimiter)
        if _examine(client, folder) != int(match["validity"]):
            return "the folder's UIDVALIDITY changed: the message is gone under this URL"
        return client.fetch([uid], items).get(uid) or "message not found"

    data = _call(server, fetch)
    if isinstance(data, str):
        raise OSError(data)
    if not section:
        return data[b"BODY[]"]
    headers = data.get(f"BODY[{section}.MIME]".encode()) or b""
    body = data.get(f"BODY[{section}]".encode()) or b""
    part = email.message_from_bytes(headers + body, policy=email.policy.compat32)
    if part.get_content_type() == "message/rfc822":
        return body  # BODY[n] of an attached message is the message itself
    return part.get_payload(decode=True) or b""


class ImapSource:
    """``imap://`` and ``imaps://`` URLs (RFC 5092): a server, a folder, a message or an attachment."""

    schemes = ("imap", "imaps")
    Settings = ImapSettings
    default_ports: ClassVar[dict[str, int]] = {"imap": 143, "imaps": 993}
    inside_marks = ";"  # RFC 5092: a folder's messages are Folder;UIDVALIDITY=n/;UID=m

    @staticmethod
    def start_hints(url: str) -> StartHints:
        return StartHints(login=True, lines=("imap:", "  starttls: true               # imap:// logs in only after STARTTLS"))

    @staticmethod
    def start_problem(url: str) -> str:
        """A start URL names its server (``imaps:///INBOX`` passed, and looked up a host named "")."""
        return "" if re.match(r"imaps?://[^/?#;]+", url) else "an imap:// start URL is imap(s)://host[:port]/[folder]"

    def __init__(self, settings: SourceSettings):
        self.settings = settings

    def expand(self, item: FrontierItem, rules, follow_symlinks: bool, budget: int | None) -> Iterator:
        """A start URL: list its folder tree, then its folders' messages to the budget (the rest goes to
        the next round). A folder handed on: list its messages."""
        server = _Server(item.url, self.settings)
        try:
            folders = _call(server, lambda client: _folder_tree(client, server, item.url, rules))
        except _FAILURES as err:  # server down, bad login, no such folder: keep everything under it
            yield event("incomplete", item.url.rstrip("/"), "discover", f"unavailable: {_reason(err)}")
            return
        chosen, declined = _choose(folders, item.url, item.root, rules)
        for url in declined:
            yield event("declined", url, "discover", "")
        names = {url: name for name, url in chosen}
        stack = [FrontierItem(url, item.root, depth_below(url, item.root), url, [], item.url, "")
                 for url in reversed(names)]  # listed in order; past the budget, handed to the next round
        yield from evidenced(item.url, iter(()), lambda: stack)  # the folder tree: every folder it chose
        yield from walk_to_budget(stack, budget, lambda folder, _stack: _messages(
            server, names[folder.url], folder.url, item, rules))


    def unchanged_state(self, url: str, rules) -> dict[str, list[int]]:
        """``[UIDVALIDITY, UIDNEXT, MESSAGES]`` by folder URL, for every folder a crawl of start URL ``url``
        lists, from STATUS (which opens no folder). Messages never change and UIDs are never reused, so
        equal answers mean the same messages; only flags may differ, and they are not indexed. Raises
        what the connection or the server raise."""
        server = _Server(url, self.settings)
        client = server.connect()
        try:
            states = {}
            for name, folder in _choose(_folder_tree(client, server, url, rules), url, url, rules)[0]:
                status = client.folder_status(name, [b"UIDVALIDITY", b"UIDNEXT", b"MESSAGES"])
                states[folder] = [int(status[b"UIDVALIDITY"]), int(status[b"UIDNEXT"]), int(status[b"MESSAGES"])]
            return states
        finally:
            with contextlib.suppress(Exception):
                client.logout()

    def open_document(self, url: str) -> io.BytesIO:
        """The message (RFC 822 bytes) or the attachment (decoded), fetched with BODY.PEEK."""
        try:
            return io.BytesIO(_fetch(url, self.settings))
        except _FAILURES as err:
            raise OSError(f"IMAP fetch failed: {_reason(err)}") from None

    @staticmethod
    def parent_urls(url: str) -> tuple[str, ...]:
        """``imap://h/Folder;UIDVALIDITY=n`` lies in ``imap://h/Folder``: a folder reported incomplete keeps
        its messages whatever their UIDVALIDITY."""
        last = url.rsplit("/", 1)[-1]
        return (url[:url.rfind(";")],) if ";" in last else ()
