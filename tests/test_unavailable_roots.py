"""A root that is unavailable keeps all its documents, whatever else the crawl holds (issue 26, items 1 and
2; DESIGN.md, invariant 1). Each case crawls a root of one source beside a healthy folder, makes the root
unavailable in one way, and crawls again, after a file was added to the healthy folder and one removed:
nothing of the unavailable root is deleted, the healthy folder is crawled as always, the exit code is 1.

The web site's start page is on ``localhost`` and links to pages on ``127.0.0.1`` (the same server, another
host): those pages are reached only through the start page, so a start page or host that fails must keep
them too (before: a host that was down kept its start page and deleted the 39 others)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.servers.dovecot import running_dovecot
from tests.servers.samba import running_samba
from tests.servers.website import Website, html

SMB_USER, SMB_PASSWORD = "btcrawl", "Crawl-Secret-4x"
IMAP_USER, IMAP_PASSWORD = "mailer", "Imap-Secret-5k"
PAGES = 12


@dataclass
class Root:
    """One root of the crawl under test: its configuration and the ways to make it unavailable."""

    start: str
    whitelist: list[str]
    settings: dict = field(default_factory=dict)
    password_file: Path | None = None


def _urls(config_dir: Path) -> set[str]:
    with sqlite3.connect(config_dir / "index.sqlite") as db:
        return {url for (url,) in db.execute("SELECT url FROM docs")}


# -- the roots, each made by a context manager that yields (Root, {way: break function}) ---------------

@contextlib.contextmanager
def _web(tmp_path: Path):
    site = Website()
    site.start()
    other = f"http://127.0.0.1:{site.port}"
    home = f"http://localhost:{site.port}"
    links = tuple(f"{other}/p{n}.html" for n in range(PAGES))
    site.put("/", html("Home", "home page", (*links, "/local.html")))
    site.put("/local.html", html("Local", "a page on the start page's host"))
    for n in range(PAGES):
        site.put(f"/p{n}.html", html(f"Page {n}", f"page number {n}"))
    site.put("/robots.txt", "User-agent: *\nDisallow:\n", content_type="text/plain")

    def each(**options):
        return lambda: site.pages.update({p: dataclasses.replace(r, **options) for p, r in site.pages.items()
                                          if p != "/robots.txt"})

    ways = {
        "host down": site.stop,
        "start page 404": lambda: site.put("/", "gone", status=404),
        "start page 500": lambda: site.put("/", "boom", status=500),
        "start page 401": lambda: site.put("/", "who are you", status=401),
        "start page redirects away": lambda: site.put("/", status=302, content_type="",
                                                       headers={"Location": "https://sign-in.example/"}),
        "every request 503": each(status=503),
        "every request 429": each(status=429),
        "every request times out": each(delay=3),
        "robots.txt 503": lambda: site.put("/robots.txt", "busy", status=503),
        "robots.txt 429": lambda: site.put("/robots.txt", "slow down", status=429),
    }
    root = Root(f"{home}/", [f"{home}/", f"{other}/"], {"http": {"delay": 0, "read_timeout": 1,
                                                                   "total_timeout": 5}})
    try:
        yield root, ways
    finally:
        site.stop()


@contextlib.contextmanager
def _share(tmp_path: Path):
    folder = Path("/tmp") / f"beamtrawl-roots-{os.getpid()}"
    share = folder / "share"
    (share / "sub").mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    for name in ("a.txt", "b.txt", "sub/c.txt"):
        (share / name).write_text(f"shared {name}", encoding="utf-8")
    for path in (share, *share.rglob("*")):
        os.chmod(path, 0o777 if path.is_dir() else 0o666)
    secret = tmp_path / "smb.password"
    secret.write_text(SMB_PASSWORD, encoding="utf-8")
    try:
        with running_samba(tmp_path / "samba", {SMB_USER: SMB_PASSWORD}, {"docs": {"path": str(share)}}) as samba:
            url = samba.url("docs")
            root = Root(url, [url], {"credentials": [{"url": samba.url(), "username": SMB_USER,
                                                      "password_file": str(secret)}]}, secret)
            yield root, {"server stopped": samba.stop,
                         "wrong password": lambda: secret.write_text("wrong", encoding="utf-8"),
                         "share folder gone": lambda: shutil.rmtree(share)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def _mailbox(tmp_path: Path):
    from imapclient import IMAPClient

    from tests.test_imap import mail

    with running_dovecot({IMAP_USER: IMAP_PASSWORD}) as dovecot:
        client = IMAPClient("127.0.0.1", dovecot.imap_port, ssl=False)
        client.login(IMAP_USER, IMAP_PASSWORD)
        client.create_folder("Work")
        for n in range(3):
            client.append("Work", mail(f"Mail {n}", body=f"message {n}"))
        secret = tmp_path / "imap.password"
        secret.write_text(IMAP_PASSWORD, encoding="utf-8")
        url = dovecot.url("imap", "Work")
        root = Root(url, [url], {"credentials": [{"url": dovecot.url("imap"), "username": IMAP_USER,
                                                  "password_file": str(secret)}],
                                 "imap": {"starttls": False}}, secret)
        yield root, {"server stopped": dovecot.stop,
                     "wrong password": lambda: secret.write_text("wrong", encoding="utf-8"),
                     "folder deleted": lambda: client.delete_folder("Work")}


@contextlib.contextmanager
def _folder(tmp_path: Path):
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    for name in ("a.txt", "b.txt", "sub/c.txt"):
        (tree / name).write_text(f"tree {name}", encoding="utf-8")
    url = "file://" + str(tree)
    yield Root(url, [url]), {"removed": lambda: shutil.rmtree(tree),
                             "unreadable": lambda: tree.chmod(0)}
    with contextlib.suppress(OSError):
        tree.chmod(0o755)


ROOTS = {"web": _web, "share": _share, "mailbox": _mailbox, "folder": _folder}
CASES = [("web", way) for way in ("host down", "start page 404", "start page 500", "start page 401",
                                  "start page redirects away",
                                  "every request 503", "every request 429", "every request times out",
                                  "robots.txt 503", "robots.txt 429")] + [
    ("share", "server stopped"), ("share", "wrong password"), ("share", "share folder gone"),
    ("mailbox", "server stopped"), ("mailbox", "wrong password"), ("mailbox", "folder deleted"),
    ("folder", "removed"), ("folder", "unreadable")]


@pytest.mark.parametrize(("source", "way"), CASES, ids=[f"{s}_{w}".replace(" ", "_").replace(".", "") for s, w in CASES])
def test_an_unavailable_root_keeps_its_documents_beside_a_healthy_one(source, way, tmp_path, make_config, crawl):
    healthy = tmp_path / "healthy"
    healthy.mkdir()
    for n in range(3):
        (healthy / f"h{n}.txt").write_text(f"healthy {n}", encoding="utf-8")
    with ROOTS[source](tmp_path) as (root, ways):
        folder = "file://" + str(healthy)
        settings = {"credentials": [], **root.settings}
        config = make_config(tmp_path, start=[{"url": folder}, {"url": root.start}],
                             whitelist=[{"prefix": folder}, *({"prefix": p} for p in root.whitelist)],
                             **settings)
        first = crawl(config)
        assert first.code == 0, first.report.get("problems")
        before = _urls(tmp_path)
        theirs = {u for u in before if not u.startswith(folder)}
        assert len(theirs) >= (PAGES + 2 if source == "web" else 3), sorted(theirs)

        ways[way]()
        (healthy / "h0.txt").unlink()
        (healthy / "new.txt").write_text("healthy new", encoding="utf-8")
        run = crawl(config)
        after = _urls(tmp_path)
        assert theirs <= after, sorted(theirs - after)  # nothing of the unavailable root is gone
        assert {u for u in after if u.startswith(folder)} == {f"{folder}/h1.txt", f"{folder}/h2.txt",
                                                               f"{folder}/new.txt"}
        assert (run.counts["new"], run.counts["deleted"]) == (1, 1), run.counts
        assert run.code == 1, (run.counts, run.report["problems"])
        assert any(p["kind"] == "incomplete" and p["reason"] for p in run.report["problems"])
        assert run.counts["kept"] == len(theirs), run.counts  # none of them reached, each kept and counted
        assert f"{len(theirs)} kept (their folder, host or start URL could not be crawled completely)" in run.stdout
