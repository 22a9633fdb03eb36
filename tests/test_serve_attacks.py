"""``beamtrawl serve`` attacked: files swapped after the crawl (symbolic links to secrets, FIFOs,
devices, changed files), caching of signed-in pages, the sign-in slow-down's memory and reach, and the
policy on every answer. Each test has its own crawled site (tests/serve_site.py), since it changes files."""

from __future__ import annotations

import base64
import os
import re
import select
import socket
import subprocess
import threading
import time
import urllib.parse

import pytest
from beamtrawl.pipeline.serve import documents
from beamtrawl.pipeline.serve.asking import Asked, facet_view
from beamtrawl.pipeline.serve.pages import plain, shown_url
from beamtrawl.pipeline.serve.people import (
    Doorkeeper,
    Searcher,
    UsersError,
    add_user,
)
from beamtrawl.pipeline.serve.protocol import HEAD_SECONDS
from beamtrawl.transforms.index.base import Page, Stored
from beamtrawl.transforms.sources.file import open_local_file, path_to_url

from tests.conftest import beamtrawl_command
from tests.serve_site import PASSWORD, api, get, make_site, served


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return make_site(tmp_path_factory.mktemp("attacks"))


@pytest.fixture(scope="module")
def base(site):
    with served(site) as url:
        yield url


def _indexed(root, path) -> Stored:
    st = os.stat(path)
    return Stored("0" * 32, path_to_url(str(path)), "", path.name, "text/plain", st.st_size,
                  path_to_url(str(root)), st.st_mtime_ns)


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "secret").write_text("the secret\n")
    doc = tmp_path / "docs" / "sub" / "note.txt"
    doc.write_text("a note\n")
    return tmp_path, doc


def test_the_indexed_file_opens(tree):
    root, doc = tree
    with open_local_file(_indexed(root / "docs", doc), follow_symlinks=False) as stream:
        assert stream.read() == b"a note\n"


def test_a_symbolic_link_swapped_in_after_the_crawl_is_refused(tree):
    root, doc = tree
    stored = _indexed(root / "docs", doc)
    doc.unlink()
    doc.symlink_to(root / "secret")
    with pytest.raises(documents.NotIndexed):
        open_local_file(stored, follow_symlinks=False)


def test_a_folder_swapped_for_a_symbolic_link_is_refused(tree):
    root, doc = tree
    stored = _indexed(root / "docs", doc)
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    os.link(doc, elsewhere / "note.txt")  # the same size and time: only the way to it differs
    (root / "docs" / "sub").rename(root / "old")
    (root / "docs" / "sub").symlink_to(elsewhere)
    with pytest.raises(documents.NotIndexed):
        open_local_file(stored, follow_symlinks=False)
    with open_local_file(stored, follow_symlinks=True) as stream:  # the crawl followed links
        assert stream.read() == b"a note\n"


def test_a_fifo_in_its_place_does_not_hold_a_thread(tree):
    root, doc = tree
    stored = _indexed(root / "docs", doc)
    doc.unlink()
    os.mkfifo(doc)
    done = []
    worker = threading.Thread(target=lambda: done.append(_refused(stored)), daemon=True)
    worker.start()
    worker.join(5)
    assert done == [True]


def _refused(stored) -> bool:
    try:
        open_local_file(stored, follow_symlinks=False)
    except documents.NotIndexed:
        return True
    return False


def test_a_changed_file_is_not_sent_with_the_old_access(tree):
    root, doc = tree
    stored = _indexed(root / "docs", doc)
    doc.write_text("a note, longer now\n")
    with pytest.raises(documents.NotIndexed):
        open_local_file(stored, follow_symlinks=False)


def test_a_deleted_file_is_not_found(tree):
    root, doc = tree
    stored = _indexed(root / "docs", doc)
    doc.unlink()
    with pytest.raises(FileNotFoundError):
        open_local_file(stored, follow_symlinks=False)


@pytest.mark.parametrize("level", ["start folder", "above the start folder", "below the start folder"])
def test_a_swapped_folder_at_any_level_is_refused(tree, level):
    """Issue 26, item 6: a look-alike tree (a file of the same size and time) behind a link put in place of
    any folder on the way, the start folder itself included, is never served."""
    root, doc = tree
    stored = _indexed(root / "docs", doc)
    swapped = {"start folder": root / "docs", "above the start folder": root,
               "below the start folder": root / "docs" / "sub"}[level]
    inside = doc.relative_to(swapped)
    look_alike = swapped.parent / f"{swapped.name}-look-alike"
    (look_alike / inside).parent.mkdir(parents=True)
    (look_alike / inside).write_text("not the note\n"[: doc.stat().st_size])
    os.utime(look_alike / inside, ns=(doc.stat().st_atime_ns, doc.stat().st_mtime_ns))
    swapped.rename(swapped.parent / f"{swapped.name}-moved")
    swapped.symlink_to(look_alike)
    with pytest.raises(documents.NotIndexed):
        open_local_file(stored, follow_symlinks=False)


def _report(base: str, name: str) -> dict:
    (hit,) = [h for h in api(base, "survey", per_page=100)["hits"] if h["url"].endswith("/" + name)]
    return hit


def test_serve_refuses_a_link_to_a_secret_swapped_in_after_the_crawl(site, base):
    hit = _report(base, "report-00.txt")
    path = site.root / "reports" / "report-00.txt"
    kept = path.with_suffix(".kept")
    path.rename(kept)
    secret = site.root.parent / "secret.txt"
    secret.write_text("root:the-hash-of-roots-password\n")
    path.symlink_to(secret)
    try:
        status, _, body = get(f"{base}/document/{hit['id']}")
        assert status == 409 and b"the-hash" not in body and b"changed after it was indexed" in body
    finally:
        path.unlink()
        kept.rename(path)
    assert get(f"{base}/document/{hit['id']}")[0] == 200


@pytest.mark.parametrize("path, user", [("/?q=numbat", "alice"), ("/?q=numbat", None), ("/api/search?q=numbat", "alice"),
                                        ("/api/search?q=", None), ("/nowhere", None), ("/api/nowhere", None),
                                        ("/document/0123456789abcdef0123456789abcdef", None), ("/signin", None),
                                        ("/static/serve.css", None), ("/health", None), ("/?page=-1", None)])
def test_no_answer_is_kept_by_a_cache_and_every_one_has_a_policy(base, path, user):
    _, headers, _ = get(base + path, user=user)
    assert headers["Cache-Control"] == "no-store"
    assert headers["Content-Security-Policy"].startswith("default-src 'none'")
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_a_document_is_not_kept_by_a_cache(base):
    hit = api(base, "salary", user="alice")["hits"][0]
    status, headers, _ = get(f"{base}/document/{hit['id']}", user="alice")
    assert status == 200 and headers["Cache-Control"] == "no-store" and "sandbox" in headers["Content-Security-Policy"]


# -- guessing passwords: tests/test_signin.py -------------------------------------------------------

@pytest.mark.parametrize("params", [{"per_page": "\uff11"}, {"page": "\u0661"}, {"page": "1.0"}, {"per_page": "-5"},
                                    {"page": " 1"}, {"page": "0x1"}, {"page": "9" * 40}])
def test_page_numbers_are_ascii_whole_numbers(base, params):
    status, _, body = get(f"{base}/api/search?" + urllib.parse.urlencode({"q": "numbat", **params}))
    assert status == 400 and b"whole number" in body


# -- the users file -------------------------------------------------------------------------------

def test_a_users_file_others_may_write_is_refused(tmp_path):
    users = tmp_path / "users"
    add_user(str(users), "alice", PASSWORD, ["hr"])
    users.chmod(0o620)
    with pytest.raises(UsersError, match=r"other users may write to the users file \(mode 620\); chmod 600"):
        Doorkeeper(str(users))
    done = subprocess.run(beamtrawl_command("user", "add", "bob", "--groups", "hr", "--users", str(users),
                                            check_dac=False), input="pw\n", text=True, capture_output=True, check=False)
    assert done.returncode != 0 and "chmod 600" in done.stderr


def test_a_users_file_broken_while_serving_keeps_the_users_read_before(tmp_path, caplog):
    users = tmp_path / "users"
    add_user(str(users), "alice", PASSWORD, ["hr"])
    doorkeeper = Doorkeeper(str(users))
    with users.open("a") as handle:
        handle.write("a line that is no user\n")
    os.utime(users, ns=(time.time_ns(), time.time_ns() + 10**9))
    header = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert doorkeeper.searcher(header, {}, "127.0.0.1") == Searcher("alice", ("hr",))
    assert "not a line of a users file" in caplog.text


@pytest.mark.parametrize("path", ["/api/search/?q=numbat", "/document/0123456789abcdef0123456789abcdef/", "/signin/"])
def test_no_redirect_leads_to_the_host_a_request_names(base, path):
    status, headers, _ = get(base + path, headers={"Host": "evil.example"})
    assert status == 404 and "Location" not in headers


# -- names that show as other names, headers from names ---------------------------------------------

SPOOF = "invoice\u202eFDP.exe"


def test_bidirectional_overrides_in_names_are_shown_not_obeyed():
    assert plain(SPOOF) == "invoice\ufffdFDP.exe"
    assert shown_url("file:///srv/" + urllib.parse.quote(SPOOF)) == "file:///srv/invoice\ufffdFDP.exe"


@pytest.mark.parametrize("name", [SPOOF, 'a"; filename="evil.html', "line\r\nSet-Cookie: x=1", "naïve résumé.pdf",
                                  "\u2067evil\u2069.txt"])
def test_file_names_make_one_safe_disposition(name):
    stored = Stored("0" * 32, "file:///srv/x", "", name, "application/x-msdownload", 1)
    disposition = documents.headers(stored)["content-disposition"]
    ascii_name = re.fullmatch(r'attachment; filename="([A-Za-z0-9._ -]+)"; filename\*=UTF-8\'\'([\w.%-]+)',
                              disposition)
    assert ascii_name, disposition
    assert "\u202e" not in urllib.parse.unquote(ascii_name[2]) and "\u2067" not in urllib.parse.unquote(ascii_name[2])


def test_a_document_deleted_since_the_crawl_is_gone(site, base):
    hit = _report(base, "report-01.txt")
    path = site.root / "reports" / "report-01.txt"
    kept = path.with_suffix(".kept")
    path.rename(kept)
    try:
        status, _, body = get(f"{base}/document/{hit['id']}")
        assert status == 410 and b"no longer where it was indexed" in body
    finally:
        kept.rename(path)


def test_a_chosen_folder_with_spaces_can_be_removed_again():
    folder = "/srv/annual reports/"
    page = Page([], 3, {"path": [(folder, 3), ("/srv/annual/", 1)]})
    first = facet_view(Asked("numbat", 1, 20, "relevance"), page)[0]["choices"]
    assert not first[0]["chosen"]
    narrowed = urllib.parse.parse_qs(urllib.parse.urlsplit(first[0]["href"]).query)["q"][0]
    assert narrowed == f'numbat path:"{folder}"'
    again = facet_view(Asked(narrowed, 1, 20, "relevance"), page)[0]["choices"]
    assert again[0]["chosen"] and not again[1]["chosen"]
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(again[0]["href"]).query)["q"] == ["numbat"]


def test_without_a_start_folder_the_file_itself_must_be_no_link(tree):
    root, doc = tree
    stored = _indexed(root / "docs", doc)
    stored.root = ""  # an index written before the start folder was read back
    doc.unlink()
    doc.symlink_to(root / "secret")
    with pytest.raises(documents.NotIndexed):
        open_local_file(stored, follow_symlinks=False)


def test_a_start_url_naming_the_file_opens_it(tree):
    root, doc = tree
    stored = _indexed(root / "docs", doc)
    stored.root = stored.url
    with open_local_file(stored, follow_symlinks=False) as stream:
        assert stream.read() == b"a note\n"


def test_a_changed_password_or_group_counts_at_once_for_a_signed_in_person(tmp_path):
    users = tmp_path / "users"
    add_user(str(users), "alice", PASSWORD, ["hr"])
    doorkeeper = Doorkeeper(str(users))
    header = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert doorkeeper.searcher(header, {}, "127.0.0.1") == Searcher("alice", ("hr",))  # verified, remembered
    add_user(str(users), "alice", PASSWORD, [])
    os.utime(users, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert doorkeeper.searcher(header, {}, "127.0.0.1") == Searcher("alice", ())
    add_user(str(users), "alice", "a new password", [])
    os.utime(users, ns=(time.time_ns(), time.time_ns() + 2 * 10**9))
    assert doorkeeper.searcher(header, {}, "127.0.0.1") is None


def test_a_huge_request_head_is_refused_early(base):
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        # 100 KiB of a header never ended: more than a head may hold, less than the server reads at once
        connection.sendall(b"GET /?q=numbat HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100 * 1024)
        assert connection.recv(100).startswith(b"HTTP/1.1 400")
    assert get(base + "/health")[0] == 200


def _closed_by_server(connection: socket.socket, wait: float) -> bool:
    """Whether the server closed ``connection`` within ``wait`` seconds (it sends nothing before that)."""
    if not select.select([connection], [], [], wait)[0]:
        return False
    try:
        return connection.recv(100) == b""
    except ConnectionResetError:
        return True


def test_a_head_sent_slowly_is_dropped_in_time_and_others_are_served(base):
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=30) as slow, \
            socket.create_connection((host, int(port)), timeout=30) as silent:
        slow.sendall(b"GET /?q=numbat HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        dropped = 0.0
        waits = []  # how long another client waited for an answer, once per byte of the slow head
        while time.monotonic() - started < HEAD_SECONDS + 5:
            try:
                slow.sendall(b"a")  # a byte every half second: within every per-byte read timeout
            except OSError:  # closed by the server
                dropped = time.monotonic() - started
                break
            if _closed_by_server(slow, 0.5):
                dropped = time.monotonic() - started
                break
            asked = time.monotonic()
            assert get(base + "/health")[0] == 200  # others are served meanwhile
            waits.append(time.monotonic() - asked)
        assert HEAD_SECONDS - 1 <= dropped <= HEAD_SECONDS + 3, dropped
        assert len(waits) >= HEAD_SECONDS - 2 and max(waits) < 1.0, waits  # all along, without waiting
        assert _closed_by_server(silent, 2)  # a connection that never sent a byte is dropped as well
    assert get(base + "/health")[0] == 200


def test_a_body_sent_slowly_is_dropped_in_time(base):
    """A head announcing a large body, answered at once (the search takes no POST), then the body a byte at a
    time: the connection is held to the same deadline as a head."""
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=30) as slow:
        slow.sendall(b"POST /api/search HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nab")
        dropped = 0.0
        while time.monotonic() - started < HEAD_SECONDS + 5:
            try:
                slow.sendall(b"a")
                if select.select([slow], [], [], 0.5)[0] and slow.recv(65536) == b"":  # the 405 first, then the end
                    dropped = time.monotonic() - started
                    break
            except OSError:  # closed by the server
                dropped = time.monotonic() - started
                break
        assert HEAD_SECONDS - 1 <= dropped <= HEAD_SECONDS + 3, dropped
    assert get(base + "/health")[0] == 200
