"""The pure rules behind the SMB and IMAP sources: who may read a file by its DACL, the configuration
keys ``smb`` and ``imap``, IMAP URLs under their folder, and attachments found in a BODYSTRUCTURE."""

from __future__ import annotations

import pytest
from beamtrawl.pipeline.config import load_config
from beamtrawl.transforms.sources import ancestors
from beamtrawl.transforms.sources.imap import (
    ImapSettings,
    ImapSource,
    _attachment_name,
    _attachments,
    folder_url,
    message_url,
)
from beamtrawl.transforms.sources.settings import SourceSettings
from beamtrawl.transforms.sources.smb import SmbSettings, SmbSource
from beamtrawl.transforms.sources.smb_acl import readers
from beamtrawl.transforms.urls import is_under
from imapclient.response_types import BodyData

from tests.test_config import MINIMAL, error_of, with_top, write

ALLOW, DENY = 0, 1
READ, WRITE, INHERIT_ONLY = 0x001200A9, 0x00000002, 0x08
ALICE, BOB, STAFF, EVERYONE = "S-1-5-21-1-2-3-1001", "S-1-5-21-1-2-3-1002", "S-1-22-2-1000", "S-1-1-0"


@pytest.mark.parametrize(("aces", "expected"), [
    ([(ALLOW, 0, READ, ALICE), (ALLOW, 0, READ, STAFF)], [ALICE, STAFF]),
    ([(DENY, 0, READ, BOB), (ALLOW, 0, READ, BOB), (ALLOW, 0, READ, ALICE)], [ALICE]),  # the first deny wins
    ([(ALLOW, 0, READ, BOB), (DENY, 0, READ, BOB)], [BOB]),  # a deny after the allow comes too late
    ([(DENY, 0, WRITE, BOB), (ALLOW, 0, READ, BOB)], [BOB]),  # denied writing, not reading
    ([(ALLOW, 0, WRITE, BOB)], []),  # may write but not read
    ([(ALLOW, INHERIT_ONLY, READ, BOB), (ALLOW, 0, READ, ALICE)], [ALICE]),  # only for children
    ([(DENY, 0, 0x1, EVERYONE), (ALLOW, 0, READ, ALICE)], []),  # everyone denied before any allow
    ([(ALLOW, 0, READ, ALICE), (DENY, 0, 0x1, EVERYONE)], [ALICE]),
    ([(ALLOW, 0, 0x80000000, ALICE), (ALLOW, 0, 0x10000000, BOB)], [ALICE, BOB]),  # GENERIC_READ, _ALL
    ([], []),  # an empty DACL: nobody
    (None, [EVERYONE]),  # no DACL: everybody
])
def test_readers_follow_windows_ace_order(aces, expected):
    assert readers(aces) == expected


def test_smb_and_imap_settings(tmp_path):
    defaults = SourceSettings.from_config(load_config(str(write(tmp_path, MINIMAL))))
    assert defaults.of(SmbSource) == SmbSettings(read_acls=True, sid_names={})
    (tmp_path / "ca.pem").write_text("x", encoding="utf-8")
    config = load_config(str(write(tmp_path, with_top(f"""
        smb: {{read_acls: false, sid_names: {{{ALICE}: alice, S-1-1-0: everyone}}}}
        imap: {{starttls: false, ca_file: ca.pem}}
        """))))
    assert config.section("smb") == SmbSettings(read_acls=False, sid_names={ALICE: "alice", EVERYONE: "everyone"})
    assert SourceSettings.from_config(config).of(ImapSource) == ImapSettings(starttls=False, ca_file=str(tmp_path / "ca.pem"))


@pytest.mark.parametrize(("extra", "expected"), [
    ("smb: {acls: true}", "smb.acls: unknown key, did you mean read_acls? (allowed: read_acls, sid_names)"),
    ("smb: {sid_names: {alice: x}}", "smb.sid_names.alice: must be a SID such as"),
    ("smb: {read_acls: 1}", "smb.read_acls: must be true or false, got 1"),
    ("imap: {ca_file: missing.pem}", "imap.ca_file: no such file: "),
    # a header broken over lines passed, and every request of the crawl failed with "Invalid header value"
    ('http: {user_agent: "bot\\nX-Injected: 1"}', "http.user_agent: must be one line of at most 1000 characters"),
    (f'http: {{user_agent: "{"b" * 1001}"}}', "http.user_agent: must be one line of at most 1000 characters"),
])
def test_smb_and_imap_setting_errors(tmp_path, extra, expected):
    assert error_of(tmp_path, with_top(extra)).startswith(expected)


@pytest.mark.parametrize("url, expected", [
    ("http://", "a web start URL is http(s)://host[:port]/[path]"),
    ("https://:8080/docs/", "a web start URL is http(s)://host[:port]/[path]"),
    ("imaps:///INBOX", "an imap:// start URL is imap(s)://host[:port]/[folder]"),
    ("imap://", "an imap:// start URL is imap(s)://host[:port]/[folder]"),
])
def test_web_and_imap_start_urls_name_their_host(tmp_path, url, expected):
    """Without a host they passed the check, and the crawl reported "No host specified" for each fetch."""
    text = f'start: [{{url: "{url}"}}]\nindex: {{path: i.sqlite}}\n'
    assert error_of(tmp_path, text) == f"start[0].url: {expected}"


@pytest.mark.parametrize("url", ["smb:///share", "smb://fileserver/share?x=1"])
def test_smb_start_url_names_a_server_share_or_folder(tmp_path, url):
    text = f'start: [{{url: "{url}"}}]\nindex: {{path: i.sqlite}}\n'
    assert error_of(tmp_path, text) == "start[0].url: an smb:// start URL is smb://host[:port]/[share[/folder]]"


def test_smb_start_url_may_name_a_server(tmp_path):
    (tmp_path / "c.yaml").write_text('start: [{url: "smb://fileserver:4455/"}]\nindex: {path: i.sqlite}\n')
    assert [s.url for s in load_config(tmp_path / "c.yaml").start] == ["smb://fileserver:4455/"]


def test_imap_urls_lie_under_their_folder():
    folder = folder_url("imap://mail", "Archive/2024 Q1; old", "/")
    assert folder == "imap://mail/Archive/2024%20Q1%3B%20old"
    message = message_url(folder, 7, 42)
    assert message == folder + ";UIDVALIDITY=7/;UID=42"
    assert is_under(message, folder) and is_under(message, "imap://mail/Archive")
    assert not is_under("file:///a/b;c", "file:///a/b")  # only IMAP URLs carry ;parameters
    assert folder in set(ancestors(message_url(folder, 7, 42, "2")))  # a failed folder keeps its mail
    assert "smb://files:4455/" in set(ancestors("smb://files:4455/docs/a.txt"))  # so does a server that is down


def test_attachments_from_bodystructure():
    text = (b"text", b"plain", (b"charset", b"utf-8"), None, None, b"7bit", 120, 4, None, None, None, None)
    pdf = (b"application", b"pdf", (b"name", b"a.pdf"), None, None, b"base64", 9000, None,
           (b"attachment", (b"filename", b"a.pdf")), None, None)
    inline_png = (b"image", b"png", None, None, None, b"base64", 300, None, (b"inline", None), None, None)
    message = (b"message", b"rfc822", None, None, None, b"7bit", 500, None, None, 10, None, None, None)
    alternative = (text, text, b"alternative", None, None, None, None)  # as IMAPClient's parser gives it
    body = BodyData.create((alternative, pdf, inline_png, message, b"mixed", None, None, None, None))
    assert list(_attachments(body)) == [("2", 9000, "", "a.pdf"), ("4", 500, "message/rfc822", "part-4.eml")]
    assert list(_attachments(BodyData.create(text))) == []  # a single part is the message's body


@pytest.mark.parametrize("disposition, content_type, mimetype, name", [
    ({"filename*": "utf-8''Gr%C3%B6%C3%9Fe%20%E2%82%AC.pdf"}, {}, "application/pdf", "Größe €.pdf"),
    ({"filename*0*": "utf-8''Gr%C3%B6", "filename*1*": "%C3%9Fe.pdf"}, {"name": "other.pdf"}, "application/pdf",
     "Größe.pdf"),  # continuations as a server passes them on; the disposition's name wins
    ({}, {"name": "=?UTF-8?B?TGV1Y2h0dHVybS5naWY=?="}, "image/gif", "Leuchtturm.gif"),  # RFC 2047
    ({"filename*": "iso-8859-1''K%F6ln.GIF"}, {}, "image/gif", "Köln.GIF"),
    ({"filename": 'say "hi"\\there\r\nX-Injected: 1.txt'}, {}, "text/plain", 'say "hi"\\there X-Injected: 1.txt'),
    ({}, {}, "image/gif", "part-2.1.gif"), ({}, {}, "message/rfc822", "part-2.1.eml"),
    ({}, {}, "x-unknown/thing", "part-2.1"),
])
def test_attachment_names(disposition, content_type, mimetype, name):
    assert _attachment_name(disposition, content_type, "2.1", mimetype) == name
