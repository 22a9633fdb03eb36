"""SMB shares against a real Samba server the test starts: logins, Windows ACLs with deny entries,
unicode names, an access-denied folder and share, a re-crawl after an ACL change and a server that
goes offline between two crawls."""

from __future__ import annotations

import grp
import json
import os
import sqlite3
from pathlib import Path

import pytest

from tests.servers.samba import running_samba, set_acl

PASSWORDS = {"btadmin": "Adm1n-Secret-7q", "btcrawl": "Crawl-Secret-4x", "btalice": "Al1ce-Secret-9z",
             "btbob": "B0b-Secret-2w"}
READ = 0x001200A9  # FILE_GENERIC_READ | FILE_EXECUTE
FULL = 0x001F01FF


def index_rows(config_dir: Path) -> dict[str, tuple[list[str], str]]:
    """{url: (groups, content)} straight from the embedded index."""
    with sqlite3.connect(config_dir / "index.sqlite") as db:
        return {url: (json.loads(groups), content)
                for url, groups, content in db.execute(
                    "SELECT d.url, d.groups, f.content FROM docs d JOIN docs_fts f ON f.rowid = d.rid")}


def index_denied(config_dir: Path) -> dict[str, list[str]]:
    """{url: denied groups} straight from the embedded index."""
    with sqlite3.connect(config_dir / "index.sqlite") as db:
        return {url: json.loads(denied) for url, denied in db.execute("SELECT url, denied FROM docs")}


@pytest.fixture
def samba(tmp_path, shares_folder):
    share, private = shares_folder / "share", shares_folder / "private"
    files = {"public.txt": "public notice for everyone", "report.txt": "quarterly report for staff",
             "denied-bob.txt": "salary table not for bob", "everyone-denied.txt": "locked away",
             "Ünïcödé/naïve café.txt": "crème brûlée recipe", "secret/plans.txt": "secret plans"}
    for name, text in files.items():
        (share / name).parent.mkdir(parents=True, exist_ok=True)
        (share / name).write_text(text, encoding="utf-8")
    private.mkdir()
    (private / "p.txt").write_text("private", encoding="utf-8")
    for folder in (share, private):
        for path in (folder, *folder.rglob("*")):
            os.chmod(path, 0o777 if path.is_dir() else 0o666)
    shares = {"docs": {"path": str(share), "read only": "no", "admin users": "btadmin"},
              "private": {"path": str(private), "valid users": "btalice"}}
    with running_samba(tmp_path / "samba", PASSWORDS, shares, groups={"btalice": ("btstaff",)}) as server:
        yield server


def test_share_with_acls_unicode_denied_folder_and_offline_server(samba, tmp_path, make_config, crawl,
                                                                  search):
    sid = {user: samba.sid(user) for user in PASSWORDS}
    staff = f"S-1-22-2-{grp.getgrnam('btstaff').gr_gid}"
    admin = {"port": samba.port, "username": "btadmin", "password": PASSWORDS["btadmin"]}
    unc = r"\\127.0.0.1\docs"
    acls = {
        "public.txt": [("allow", "S-1-1-0", READ)],
        "report.txt": [("allow", staff, READ), ("allow", sid["btcrawl"], READ)],
        # a deny that comes first wins over bob's later allow (Fess indexed bob as a reader)
        "denied-bob.txt": [("deny", sid["btbob"], READ), ("allow", sid["btbob"], READ),
                           ("allow", sid["btalice"], FULL), ("allow", sid["btcrawl"], READ)],
        "everyone-denied.txt": [("deny", "S-1-1-0", 0x1), ("allow", sid["btcrawl"], READ)],
        r"Ünïcödé\naïve café.txt": [("allow", sid["btalice"], READ), ("allow", sid["btcrawl"], READ)],
        "secret": [("allow", sid["btalice"], FULL)],
    }
    for name, aces in acls.items():
        set_acl(unc + "\\" + name, aces, **admin)
    secret_file = tmp_path / "crawl.password"
    secret_file.write_text(PASSWORDS["btcrawl"] + "\n", encoding="utf-8")
    docs, private = samba.url("docs"), samba.url("private")
    names = {sid["btcrawl"]: "crawler", sid["btalice"]: "alice", sid["btbob"]: "bob", "S-1-1-0": "everyone",
             staff: "staff"}
    config = make_config(tmp_path, start=[{"url": docs}, {"url": private}],
                         whitelist=[{"prefix": docs}, {"prefix": private}],
                         credentials=[{"url": samba.url(), "username": "btcrawl",
                                       "password_file": str(secret_file)}],
                         smb={"sid_names": names})

    first = crawl(config)
    assert first.code == 1, first.stderr  # the denied folder and share are report lines; the crawl went on
    problems = first.problems("discover")
    assert problems[f"{docs}/secret"] == "cannot list folder: STATUS_ACCESS_DENIED"
    assert problems[private].startswith("unavailable: ")
    assert problems[f"{docs}/everyone-denied.txt"] == (
        "its access control list lets no one read it; hidden from every searcher")
    unicode_url = f"{docs}/%C3%9Cn%C3%AFc%C3%B6d%C3%A9/na%C3%AFve%20caf%C3%A9.txt"
    assert index_rows(tmp_path) == {
        f"{docs}/public.txt": (["everyone"], "public notice for everyone"),
        f"{docs}/report.txt": (["crawler", "staff"], "quarterly report for staff"),
        f"{docs}/denied-bob.txt": (["alice", "crawler"], "salary table not for bob"),
        unicode_url: (["alice", "crawler"], "crème brûlée recipe"),
    }
    assert index_denied(tmp_path)[f"{docs}/denied-bob.txt"] == ["bob"]
    assert [h["url"] for h in search(config, "brûlée", groups="alice")] == [unicode_url]
    assert search(config, "brûlée", groups="bob") == search(config, "brûlée") == []  # not bob's, not public

    # An ACL change re-indexes that document only; nothing else is read again.
    set_acl(unc + r"\report.txt", [("allow", sid["btcrawl"], READ)], **admin)
    second = crawl(config)
    assert (second.counts["changed"], second.counts["unchanged"], second.counts.get("new", 0)) == (1, 3, 0)
    assert index_rows(tmp_path)[f"{docs}/report.txt"][0] == ["crawler"]

    # The server goes offline: every document is kept, and the report says why.
    samba.stop()
    third = crawl(config)
    assert third.code == 1
    assert third.counts["kept"] == 4 and third.counts.get("deleted", 0) == 0
    assert third.problems("discover")[docs].startswith("unavailable: ")
    assert len(index_rows(tmp_path)) == 4

    # The password is nowhere: not in the report, the output or the index.
    for run in (first, second, third):
        for text in (json.dumps(run.report), run.stdout, run.stderr):
            assert PASSWORDS["btcrawl"] not in text
    assert PASSWORDS["btcrawl"].encode() not in (tmp_path / "index.sqlite").read_bytes()


def test_revoked_access_hides_at_once_denies_win_and_a_server_down_changes_nothing(samba, shares_folder, tmp_path,
                                                                                 make_config, crawl, search):
    """Issue 15, items 4 and 5. Indexed while everyone could read; then one file allowed to staff only
    (the crawler may no longer read its ACL), one denying everyone, a folder locked to alice: the next
    crawl hides all three at once, under a failure ratio that withholds deletes. A user denied in an
    allowed group, and a group denied with a member allowed, are hidden from that searcher."""
    sid = {user: samba.sid(user) for user in PASSWORDS}
    staff = f"S-1-22-2-{grp.getgrnam('btstaff').gr_gid}"
    admin = {"port": samba.port, "username": "btadmin", "password": PASSWORDS["btadmin"]}
    folder = shares_folder / "share" / "revoke"
    texts = {"staff-only.txt": "ocelot staff only", "deny-all.txt": "ocelot deny all", "open.txt": "ocelot open",
             "locked/inside.txt": "ocelot locked inside", "deny-bob.txt": "ocelot not bob",
             "deny-staff.txt": "ocelot not staff"}
    for name, text in texts.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
        os.chmod(folder / name, 0o666)
    for path in (folder, folder / "locked"):
        os.chmod(path, 0o777)
    unc = r"\\127.0.0.1\docs\revoke"
    everyone = [("allow", "S-1-1-0", FULL)]
    for name in ("", r"\locked", r"\staff-only.txt", r"\deny-all.txt", r"\open.txt", r"\locked\inside.txt"):
        set_acl(unc + name, everyone, **admin)
    set_acl(unc + r"\deny-bob.txt", [("deny", sid["btbob"], READ), ("allow", staff, READ),
                                     ("allow", sid["btcrawl"], READ)], **admin)
    set_acl(unc + r"\deny-staff.txt", [("deny", staff, READ), ("allow", sid["btbob"], READ),
                                       ("allow", sid["btcrawl"], READ)], **admin)
    secret_file = tmp_path / "crawl.password"
    secret_file.write_text(PASSWORDS["btcrawl"], encoding="utf-8")
    root = samba.url("docs", "revoke")
    names = {sid["btcrawl"]: "crawler", sid["btalice"]: "alice", sid["btbob"]: "bob", "S-1-1-0": "everyone",
             staff: "staff"}
    config = make_config(tmp_path, start=[{"url": root}], whitelist=[{"prefix": root}],
                         credentials=[{"url": samba.url(), "username": "btcrawl", "password_file": str(secret_file)}],
                         smb={"sid_names": names}, max_failed_ratio=0.0)

    def found(groups: str) -> list[str]:
        return sorted(h["url"].rsplit("/", 1)[-1] for h in search(config, "ocelot", groups=groups))

    first = crawl(config)
    assert first.code == 0, first.stderr
    assert found("everyone") == ["deny-all.txt", "inside.txt", "open.txt", "staff-only.txt"]
    # item 5: deny bob, allow staff (bob is in staff) / deny staff, allow bob
    assert index_denied(tmp_path)[f"{root}/deny-bob.txt"] == ["bob"]
    assert found("alice,staff") == ["deny-bob.txt"]
    assert found("bob,staff") == []
    assert found("bob") == ["deny-staff.txt"]

    set_acl(unc + r"\staff-only.txt", [("allow", staff, READ)], **admin)  # the crawler may not read the ACL
    set_acl(unc + r"\deny-all.txt", [("deny", "S-1-1-0", READ), ("allow", "S-1-1-0", FULL)], **admin)
    set_acl(unc + r"\locked", [("allow", sid["btalice"], FULL)], **admin)
    second = crawl(config)
    assert second.code == 1, second.stderr  # the locked folder is an incomplete listing
    assert second.counts["revoked"] == 3 and second.counts.get("deleted", 0) == 0
    assert found("everyone") == ["open.txt"]
    assert found("everyone,staff,alice,crawler") == ["deny-bob.txt", "open.txt"]
    denied = index_denied(tmp_path)
    assert [denied[f"{root}/{name}"] for name in ("staff-only.txt", "deny-all.txt", "locked/inside.txt")] == [
        ["*"]] * 3
    problems = second.problems("discover")
    assert problems[f"{root}/staff-only.txt"] == (
        "cannot read its access control list: STATUS_ACCESS_DENIED; hidden from every searcher")

    third = crawl(config)  # hidden ones stay hidden and are not rewritten
    assert third.counts.get("revoked", 0) == 0 and third.counts.get("written", 0) == 0
    assert found("everyone") == ["open.txt"]

    set_acl(unc + r"\staff-only.txt", everyone, **admin)  # readable again: indexed again
    fourth = crawl(config)
    assert fourth.counts["changed"] == 1
    assert found("everyone") == ["open.txt", "staff-only.txt"]

    samba.stop()  # a server that is down is no evidence: nothing changes
    fifth = crawl(config)
    assert fifth.code == 1 and fifth.counts.get("revoked", 0) == 0 and fifth.counts.get("deleted", 0) == 0
    assert found("everyone") == ["open.txt", "staff-only.txt"]
    assert index_denied(tmp_path) == denied | {f"{root}/staff-only.txt": []}


def test_a_start_url_naming_one_file_lists_that_file(samba, tmp_path, make_config):
    """A start URL naming one file of a share (``index: true``) is that document alone, with the size and time the
    server gives (the start-file step of smb_client.expand, in process: a crawl's other steps are tested above)."""
    from beamtrawl.pipeline.config import load_config
    from beamtrawl.transforms.accept import Rules
    from beamtrawl.transforms.records import FrontierItem
    from beamtrawl.transforms.sources.settings import SourceSettings
    from beamtrawl.transforms.sources.smb import SmbSource

    url = samba.url("docs", "public.txt")
    secret_file = tmp_path / "crawl.password"
    secret_file.write_text(PASSWORDS["btcrawl"], encoding="utf-8")
    config = load_config(str(make_config(
        tmp_path, start=[{"url": url, "parse": False, "index": True}], whitelist=[{"prefix": url}],
        credentials=[{"url": samba.url(), "username": "btcrawl", "password_file": str(secret_file)}],
        smb={"read_acls": False})))
    found = list(SmbSource(SourceSettings.from_config(config)).expand(
        FrontierItem(url, url, 0, url, [], "", ""), Rules(config), False, None))
    assert [(e.url, e.root, e.size, e.source_url) for e in found] == [(url, url, len("public notice for everyone"), url)]
