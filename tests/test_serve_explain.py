"""``beamtrawl explain`` on the search page (issue 28, item 15): for a signed-in administrator only (``user add
--admin``), an "explain" link per hit and ``/explain?url=…`` giving the command's own lines, escaped; anyone else
is refused (403), a searcher not signed in is asked to sign in. A real ``beamtrawl serve`` on loopback over the
crawled corpus of tests/serve_site.py, asked by a real HTTP client, hostile input included."""

from __future__ import annotations

import html
import re
import subprocess
import urllib.parse

import pytest
from beamtrawl.pipeline.serve.people import read_users

from tests.conftest import beamtrawl, beamtrawl_command
from tests.serve_site import HOSTILE_NAME, PASSWORD, get, make_site, served

ADMIN = "carol"


def _add(users, name: str, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(beamtrawl_command("user", "add", name, *options, "--users", str(users), check_dac=False),
                          input=PASSWORD + "\n", text=True, capture_output=True, check=False)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = make_site(tmp_path_factory.mktemp("serve-explain"))
    added = _add(site.users, ADMIN, "--admin")
    assert added.returncode == 0 and added.stdout.strip() == f"added {ADMIN} in {site.users}, an administrator"
    return site


@pytest.fixture(scope="module")
def base(site):
    with served(site) as url:
        yield url


def explained(base: str, asked: str, user: str | None = ADMIN) -> tuple[int, str]:
    status, _, body = get(f"{base}/explain?" + urllib.parse.urlencode({"url": asked}), user)
    return status, body.decode()


def lines(page: str) -> list[str]:
    """The answer's lines as the page shows them (its heading, the URL, left out), unescaped."""
    answer = re.search(r'<ul class="explained">(.*?)</ul>', page, re.DOTALL)
    return [html.unescape(item) for item in re.findall(r"<li>(.*?)</li>", answer.group(1), re.DOTALL)] if answer else []


def _box(page: str) -> str:
    [value] = re.findall(r'<input id="url" name="url"[^>]*value="([^"]*)"', page)
    return html.unescape(value)


def test_users_are_administrators_only_when_added_so_and_the_list_says_which(site, tmp_path):
    users = read_users(str(site.users))
    assert users[ADMIN].admin and not users["alice"].admin and not users["bob"].admin
    listed = beamtrawl("user", "list", "--users", str(site.users), check_dac=False).stdout.splitlines()
    assert f"{ADMIN}\t(no groups: public documents only)\tadministrator" in listed and "alice\thr,staff" in listed
    own = tmp_path / "users"
    assert _add(own, "dora", "--groups", "ops", "--admin").returncode == 0
    assert own.read_text(encoding="utf-8").rstrip("\n").endswith(":ops:admin")
    assert _add(own, "dora", "--groups", "ops").returncode == 0  # changed again without --admin: no more
    assert not read_users(str(own))["dora"].admin
    assert beamtrawl("user", "list", "--users", str(own), check_dac=False).stdout.splitlines() == ["dora\tops"]
    own.write_text(own.read_text(encoding="utf-8").rstrip("\n") + ":root\n", encoding="utf-8")
    broken = beamtrawl("user", "list", "--users", str(own), check_dac=False)
    assert broken.returncode == 2 and f"{own}:1: not a line of a users file" in broken.stderr


def test_an_administrator_has_an_explain_link_per_hit_and_no_one_else(base):
    status, _, body = get(f"{base}/?q=numbat&per_page=100", ADMIN)
    page = body.decode()
    hits = re.findall(r'<li class="hit">', page)
    links = re.findall(r'<a class="explain" href="([^"]*)">explain</a>', page)
    assert status == 200 and len(links) == len(hits) > 20
    assert all(html.unescape(link).startswith("/explain?url=") for link in links)
    for user in ("alice", "bob", None):
        status, _, body = get(f"{base}/?q=numbat&per_page=100", user)
        assert status == 200 and b"/explain" not in body, user


def test_a_hits_explain_link_gives_the_lines_of_the_command(site, base):
    """Followed from the hit of the hr file (the administrator sees public documents only, yet the answer is
    the index's: who may see it, its preparation) and of the hostile name: the command's lines, escaped."""
    for name in ("hr/salaries.txt", HOSTILE_NAME):
        command = beamtrawl("explain", str(site.root / name), "--config", str(site.config), check_dac=False)
        assert command.returncode == 0, command.stderr
        status, page = explained(base, f"{site.root.as_uri()}/{urllib.parse.quote(name)}")
        assert status == 200, page
        assert lines(page) == command.stdout.splitlines()[1:], page
        assert "<img" not in page and "<script" not in page
        assert ("visible to members of hr" in lines(page)) == name.startswith("hr/")
    status, _, body = get(f"{base}/?q=hostile+file+name", ADMIN)
    [link] = [html.unescape(h) for h in re.findall(r'<a class="explain" href="([^"]*)">', body.decode())]
    status, _, body = get(base + link, ADMIN)
    assert status == 200 and "in the index" in lines(body.decode())[0] and _box(body.decode()).endswith("numbat.txt")


def test_explain_is_for_administrators_only(site, base):
    asked = str(site.root / "hr" / "salaries.txt")
    status, headers, body = get(f"{base}/explain?" + urllib.parse.urlencode({"url": asked}))
    assert status == 401 and headers["WWW-Authenticate"].startswith("Basic") and b"Sign in as an administrator" in body
    for user in ("alice", "bob"):
        status, page = explained(base, asked, user)
        assert status == 403 and "Only an administrator may ask" in page and "salaries" not in page, user
        assert lines(page) == []
    assert get(f"{base}/explain?url=%2Fetc", ADMIN, password="wrong")[0] == 401
    status, page = explained(base, asked)
    assert status == 200 and "visible to members of hr" in lines(page)
    assert 'href="/explain">Why is it (not) found?</a>' in page  # the administrator's way there from every page


HOSTILE_URLS = ["file:///tmp/<script>alert(1)</script>.txt", 'http://example.org/"><img src=x onerror=alert(1)>',
                "smb://host/share/</title><svg onload=alert(1)>", "/tmp/' autofocus onfocus='alert(1)"]


@pytest.mark.parametrize("asked", HOSTILE_URLS)
def test_hostile_urls_are_answered_as_text(base, asked):
    status, page = explained(base, asked)
    assert status == 200, page
    assert not re.search(r"<(script|img|svg|/title><)", page)
    assert _box(page) == asked and "found by no start URL" in " ".join(lines(page))


def test_a_path_outside_every_root_is_not_looked_at_on_disk(base):
    status, page = explained(base, "/etc/passwd")
    answer = lines(page)
    assert status == 200 and "not in the index" in answer[0] and "found by no start URL" in answer[1]
    assert not any("bytes" in line or "on disk" in line or "symbolic link" in line for line in answer), answer
    assert "root:" not in page


def test_an_empty_value_shows_the_form(base):
    for path in ("/explain", "/explain?url=", "/explain?url=%20%20"):
        status, _, body = get(base + path, ADMIN)
        page = body.decode()
        assert status == 200 and _box(page) == "" and lines(page) == [] and 'role="alert"' not in page, path


@pytest.mark.parametrize("asked, message", [
    ("/" + "x" * 5000, "too long"), ("file:///" + "%41" * 3000, "too long"), ("/tmp/a\x00b", "control characters"),
    ("/tmp/line\r\nSet-Cookie: x=1", "control characters"), ("etc/passwd", "an absolute local path"),
    ("http://[::1/", "not a URL or path explain can read")])
def test_values_no_document_can_have_are_refused_without_echo(base, asked, message):
    status, page = explained(base, asked)
    assert status == 400 and message in page, page[-2000:]
    assert _box(page) == "" and lines(page) == []
    assert "x" * 100 not in page and "Set-Cookie" not in page


def test_a_trusted_proxy_names_an_administrator(site):
    with served(site, "--trusted-header", "X-Remote-User", "--trusted-proxy", "127.0.0.1") as url:
        asked = urllib.parse.urlencode({"url": "/etc/passwd"})
        assert get(f"{url}/explain?{asked}", headers={"X-Remote-User": ADMIN})[0] == 200
        assert get(f"{url}/explain?{asked}", headers={"X-Remote-User": "alice"})[0] == 403
        assert get(f"{url}/explain?{asked}", headers={"X-Remote-User": "nobody-known"})[0] == 403
