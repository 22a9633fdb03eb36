"""A delete needs positive evidence (transforms/listings.py): entries or listings lost between discovery and the
freshness join keep every document of their container, with a report line and exit 1, in every source that
lists containers — a folder tree, an SMB share, an IMAP folder, a web host — while a crawl's real deletes
still happen. Faults are injected with transforms/faults.py; the servers are real, on loopback."""

from __future__ import annotations

import os
import sqlite3
import ssl
import subprocess
import sys
from email.message import EmailMessage
from pathlib import Path

import pytest
import yaml
from beamtrawl.transforms.faults import DROP_CLAIMS, DROP_ENTRIES, DROP_LISTINGS, PASSES
from imapclient import IMAPClient

from tests.servers.dovecot import running_dovecot
from tests.servers.samba import running_samba
from tests.servers.website import Website, html

REPO = Path(__file__).resolve().parent.parent
USER, PASSWORD = "mailer", "Imap-Secret-5k"
SMB_USER, SMB_PASSWORD = "btcrawl", "Crawl-Secret-4x"


def indexed(config: Path) -> set[str]:
    with sqlite3.connect(yaml.safe_load(config.read_text())["index"]["path"]) as db:
        return {url for (url,) in db.execute("SELECT url FROM docs")}


def _tree(root: Path) -> None:
    for folder, names in {"a": ("1", "2", "3"), "a/b": ("4", "5"), "c": ("6", "7")}.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        for name in names:
            (root / folder / f"f{name}.txt").write_text(f"listing word{name}", encoding="utf-8")


@pytest.fixture
def file_root(tmp_path, make_config):
    root = tmp_path / "tree"
    _tree(root)
    url = root.as_uri()
    yield make_config(root), url, lambda: (root / "c" / "f6.txt").unlink()


@pytest.fixture
def smb_root(tmp_path, make_config, shares_folder):
    share = shares_folder / "docs"
    _tree(share)
    for path in (share, *share.rglob("*")):
        os.chmod(path, 0o777 if path.is_dir() else 0o666)
    with running_samba(tmp_path / "samba", {SMB_USER: SMB_PASSWORD}, {"docs": {"path": str(share)}}) as samba:
        url = samba.url("docs")
        config = make_config(tmp_path, start=[{"url": url}], whitelist=[{"prefix": url}],
                             credentials=[{"url": samba.url(), "username": SMB_USER, "password": SMB_PASSWORD}],
                             smb={"read_acls": False})
        yield config, url, lambda: (share / "c" / "f6.txt").unlink()


def _mail(subject: str) -> bytes:
    message = EmailMessage()
    message["Subject"], message["From"], message["To"] = subject, "a@example.org", "b@example.org"
    message.set_content(f"listing {subject}")
    return bytes(message)


@pytest.fixture
def imap_root(tmp_path, make_config):
    with running_dovecot({USER: PASSWORD}) as dovecot:
        context = ssl.create_default_context(cafile=str(dovecot.ca_file))
        client = IMAPClient("127.0.0.1", dovecot.imaps_port, ssl=True, ssl_context=context)
        client.login(USER, PASSWORD)
        client.create_folder("Other")
        for n in range(3):
            client.append("INBOX", _mail(f"inbox{n}"))
            client.append("Other", _mail(f"other{n}"))
        url = dovecot.url("imap")
        config = make_config(tmp_path, start=[{"url": url}], whitelist=[{"prefix": url}],
                             credentials=[{"url": url, "username": USER, "password": PASSWORD}],
                             imap={"ca_file": str(dovecot.ca_file)})

        def remove_one():
            client.select_folder("Other")
            client.delete_messages(client.search(["ALL"])[:1])
            client.expunge()
        yield config, url, remove_one
        client.logout()


@pytest.fixture
def web_root(tmp_path, make_config):
    site = Website()
    site.start()
    pages = [f"/p{n}.html" for n in range(5)]
    site.put("/", html("start", links=tuple(pages)))
    for n, page in enumerate(pages):
        site.put(page, html(f"page {n}", f"listing word{n}"))
    url = site.base + "/"
    config = make_config(tmp_path, start=[{"url": url}], whitelist=[{"prefix": url}],
                         http={"delay": 0, "read_timeout": 2, "total_timeout": 20})

    def remove_one():
        site.put("/", html("start", links=tuple(pages[1:])))
        del site.pages[pages[0]]
    yield config, url, remove_one
    site.stop()


#: Per source: the start URL's fixture, and below it the URLs whose entries are lost (one container's).
LOST = {"file_root": "/a/f", "smb_root": "/a/f", "imap_root": "/INBOX;", "web_root": "/p"}


@pytest.mark.parametrize("kind", LOST)
def test_entries_lost_in_transit_delete_nothing_of_their_container(kind, request, crawl, monkeypatch):
    config, url, remove_one = request.getfixturevalue(kind)
    lost = url.rstrip("/") + LOST[kind]
    first = crawl(config)
    assert first.code == 0, (first.report.get("problems"), first.stderr[-3000:])
    before = indexed(config)
    victims = {url for url in before if url.startswith(lost)}
    assert victims and len(victims) < len(before)

    monkeypatch.setenv(DROP_ENTRIES, "^" + lost.replace("?", r"\?"))
    monkeypatch.setenv(PASSES, "all")  # the second pass, which lists their container again, loses them too
    lossy = crawl(config, "--set", "max_delete_ratio=0.99")  # another setting: IMAP's unchanged state runs no pipeline
    assert lossy.code == 1, lossy.stderr[-3000:]
    assert lossy.counts["deleted"] == 0
    assert indexed(config) == before
    lines = [p for p in lossy.report["problems"] if p["stage"] == "freshness"]
    assert lines and all("lost in transit" in p["reason"] and "arrived" in p["reason"] for p in lines), lines
    assert lossy.report["listed_again"]["containers"] >= 1

    monkeypatch.delenv(PASSES)  # lost in the first pass only, as a runner loses entries now and then
    remove_one()  # a real delete, in a container whose evidence arrived whole
    healed = crawl(config)
    assert healed.code == 0, (healed.report.get("problems"), healed.stderr[-3000:])
    assert healed.counts["deleted"] == 1 and len(indexed(config)) == len(before) - 1
    assert healed.report["problems"] == [] and healed.report["listed_again"]["containers"] >= 1
    assert any("listed again, completely" in w for w in healed.report["warnings"]), healed.report["warnings"]

    monkeypatch.delenv(DROP_ENTRIES)
    healthy = crawl(config, "--set", "max_delete_ratio=0.98")
    assert healthy.code == 0 and "listed_again" not in healthy.report
    assert healthy.counts["deleted"] == 0 and len(indexed(config)) == len(before) - 1


def test_a_second_pass_deletes_on_its_own_evidence(file_root, crawl, monkeypatch):
    """Entries of a/ lost in the first pass: a/ is listed again, and a file removed from it is deleted then,
    while the rest of the index is untouched."""
    config, url, _remove = file_root
    assert crawl(config).code == 0
    before = indexed(config)
    Path(url.removeprefix("file://"), "a", "f1.txt").unlink()
    monkeypatch.setenv(DROP_ENTRIES, f"^{url}/a/f")
    healed = crawl(config)
    assert healed.code == 0, (healed.report.get("problems"), healed.stderr[-3000:])
    assert healed.report["deleted_urls"] == [f"{url}/a/f1.txt"]
    assert indexed(config) == before - {f"{url}/a/f1.txt"}
    assert healed.report["listed_again"]["first"] == [f"{url}/a"]


def test_a_claim_lost_in_transit_deletes_nothing_of_its_folder(file_root, crawl, monkeypatch):
    """The listing of a/ compared it with the index itself (transforms/compare.py) and its claim was lost: the
    join reads a/'s documents from the index and finds none of them, but the listing's evidence lacks their
    arrivals, so nothing of a/ is deleted and a/ is listed again; a real delete elsewhere still happens."""
    config, url, remove_one = file_root
    assert crawl(config).code == 0
    before = indexed(config)
    monkeypatch.setenv(DROP_CLAIMS, f"^{url}/a$")
    remove_one()
    done = crawl(config)
    assert done.code == 0, (done.report.get("problems"), done.stderr[-3000:])
    assert done.report["deleted_urls"] == [f"{url}/c/f6.txt"]
    assert indexed(config) == before - {f"{url}/c/f6.txt"}
    assert done.report["listed_again"]["first"] == [f"{url}/a"]


def test_a_folder_whose_listing_never_arrived_keeps_its_documents(file_root, crawl, monkeypatch):
    """The listing of a/b lost (a frontier item or its evidence lost between rounds): its parent's listing
    names it, so nothing below it is deleted, although every one of its files is missing too."""
    config, url, _remove = file_root
    assert crawl(config).code == 0
    before = indexed(config)
    monkeypatch.setenv(DROP_ENTRIES, f"^{url}/a/b/")
    monkeypatch.setenv(DROP_LISTINGS, f"^{url}/a/b$")
    monkeypatch.setenv(PASSES, "all")
    lossy = crawl(config)
    assert lossy.code == 1 and lossy.counts["deleted"] == 0 and indexed(config) == before
    (line,) = [p for p in lossy.report["problems"] if p["stage"] == "freshness"]  # the second pass's
    assert line["url"] == f"{url}/a/b" and "no listing of its start URL" in line["reason"]
    monkeypatch.delenv(PASSES)
    healed = crawl(config, "--set", "max_delete_ratio=0.99")
    assert healed.code == 0 and healed.counts["deleted"] == 0 and indexed(config) == before
    assert healed.report["listed_again"]["first"] == [f"{url}/a/b"]


def test_a_removed_folder_is_deleted_on_the_evidence_of_its_parent(file_root, crawl):
    config, url, _remove = file_root
    assert crawl(config).code == 0
    root = Path(url.removeprefix("file://"))
    for path in sorted((root / "a").rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    (root / "a").rmdir()
    done = crawl(config)
    assert done.code == 0 and done.counts["deleted"] == 5
    assert indexed(config) == {f"{url}/c/f6.txt", f"{url}/c/f7.txt"}


def test_the_soak_benchmark_runs(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "bench" / "soak_bench.py"), "--tiny", "--workdir",
                           str(tmp_path)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS: every re-crawl deleted nothing" in done.stdout
