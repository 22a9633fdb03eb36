"""A whole SMB server as a start URL (``smb://host:port/``) against a real Samba server the test starts,
with its RPC services (srvsvc) served by samba-dcerpcd: the disk shares are listed and walked, a hidden
share only when the whitelist names it, a share the crawler may not open is a report line, and a server
that goes down keeps every document."""

from __future__ import annotations

import os
import re

import pytest
from beamtrawl.transforms.sources import smb_shares

from tests.servers.samba import running_samba
from tests.test_smb import index_rows

PASSWORDS = {"btcrawl": "Crawl-Secret-4x", "btalice": "Al1ce-Secret-9z"}


@pytest.fixture
def samba(tmp_path, shares_folder):
    files = {"docs/a.txt": "alpha notes", "docs/sub/b.txt": "beta notes", "projects/c.txt": "gamma notes",
             "hidden/h.txt": "hidden notes", "private/p.txt": "private notes"}
    for name, text in files.items():
        path = shares_folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for path in shares_folder.rglob("*"):
        os.chmod(path, 0o777 if path.is_dir() else 0o666)
    shares = {"docs": {"path": str(shares_folder / "docs")},
              "projects": {"path": str(shares_folder / "projects"), "comment": "Projects of 2026"},
              "hidden$": {"path": str(shares_folder / "hidden")},
              "private": {"path": str(shares_folder / "private"), "valid users": "btalice"}}
    with running_samba(tmp_path / "samba", PASSWORDS, shares, rpc=True) as server:
        yield server


def test_server_start_url_lists_its_disk_shares(samba, tmp_path, make_config, crawl):
    server = samba.url()
    login = [{"url": server, "username": "btcrawl", "password": PASSWORDS["btcrawl"]}]
    config = make_config(tmp_path, start=[{"url": server}], credentials=login, whitelist=[{"prefix": server}])

    first = crawl(config)
    assert first.code == 1, first.stderr  # the denied share is a report line; the crawl went on
    assert first.problems("discover")[samba.url("private")].startswith("unavailable: ")
    assert {url: content for url, (_groups, content) in index_rows(tmp_path).items()} == {
        samba.url("docs", "a.txt"): "alpha notes", samba.url("docs", "sub/b.txt"): "beta notes",
        samba.url("projects", "c.txt"): "gamma notes"}  # not IPC$, not the hidden share, not the denied one

    # The server goes down: every document of every share is kept, and the report says why.
    samba.stop()
    second = crawl(config)
    assert second.code == 1
    assert second.counts["kept"] == 3 and second.counts.get("deleted", 0) == 0
    assert second.problems("discover")[server].startswith("unavailable: ")
    assert len(index_rows(tmp_path)) == 3


def test_hidden_share_when_the_whitelist_names_it(samba, tmp_path, make_config, crawl):
    server = samba.url()
    login = [{"url": server, "username": "btcrawl", "password": PASSWORDS["btcrawl"]}]
    only = re.escape(server) + r"(hidden\$(/.*)?)?"  # the server and its hidden share, nothing else
    config = make_config(tmp_path, start=[{"url": server}], credentials=login, whitelist=[{"regex": only}])

    run = crawl(config)
    assert run.code == 0, run.stderr
    assert list(index_rows(tmp_path)) == [samba.url("hidden$", "h.txt")]


def test_many_shares_answer_in_several_fragments(tmp_path, shares_folder):
    """300 shares with remarks need about 20 kB of NDR: the answer comes in several RPC fragments."""
    names = [f"share{i:03d}" for i in range(300)]
    os.chmod(shares_folder, 0o777)
    shares = {name: {"path": str(shares_folder), "comment": f"remark of {name} " * 3} for name in names}
    shares["print$"] = {"path": str(shares_folder)}
    with running_samba(tmp_path / "samba", PASSWORDS, shares, rpc=True) as server:
        login = {"port": server.port, "connection_cache": {}, "username": "btcrawl",
                 "password": PASSWORDS["btcrawl"]}
        assert smb_shares.disk_shares("127.0.0.1", login) == [*names, "print$"]  # IPC$ is no disk share
