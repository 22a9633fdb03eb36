"""Crawls of a real web site on loopback (tests/servers/website.py) with the real ``beamtrawl crawl``:
exactly which pages end up in the index on a first crawl, after the site changes, when nothing changed
(304s, nothing read or written) and when the server is down (everything kept)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from beamtrawl.pipeline.config import ConfigError, load_config

from tests.conftest import report_path
from tests.servers.website import Resource, Website, gzip_bomb, html

PASSWORD = "pw-Secret-7731"  # must never show up in the index, the report or the output
LATIN1 = ("<html><head><meta http-equiv='Content-Type' content='text/html; charset=iso-8859-1'>"
          "<title>Straßenbahn</title></head><body><p>Die Straßenbahn fährt über die Brücke nach Köln.</p>"
          "</body></html>")
LATIN1_UNDECLARED = ("<html><head><title>Grüße</title></head><body><p>Viele Grüße aus Zürich, schöne Tage "
                     "am See, Käse und Brötchen für alle.</p></body></html>")
SHIFT_JIS = ("<html><head><title>東京の天気</title></head><body><p>今日の東京の天気は晴れです。明日は雨が降るでしょう。"
             "週末は気温が上がる予報です。</p></body></html>")
BROKEN = "<html><head><title>Broken</title><body><p>unclosed <b>bold <div><table><tr><td>cell " \
         "<a href=/from-broken.html>onward</a><p>brokenword"


def build(site: Website, version: int) -> None:
    """Version 1, then version 2: /changing.html changes, /remove-me.html is gone, /flaky.html fails,
    /new.html is new."""
    site.pages.clear()
    links = ["/a.html|Alpha page", "/a.html?sid=42#top", "/latin1.html", "/latin1-undeclared.html",
             "/sjis.html", "/broken.html", "/missing.html", "/error.html", "/flaky.html", "/changing.html",
             "/remove-me.html", "/r1", "/loop-a", "/calendar?day=0", "/slow.html", "/big.html", "/bomb.html",
             "/private/secret.html", "file:///etc/passwd", "/noindex.html", "/nofollow.html", "/x/",
             "/members/m.html", "/digest/d.html", "/dup.html", "/plain.txt", "mailto:someone@example.org"]
    if version == 2:
        links.append("/new.html")
    site.put("/", html("Home", f"home page version {version}", tuple(links)))
    site.put("/robots.txt", f"User-agent: *\nDisallow: /private/\nCrawl-delay: 0.05\n"
                            f"Sitemap: {site.base}/sitemap.xml\n", content_type="text/plain")
    site.put("/sitemap.xml", f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                             f"<url><loc>{site.base}/orphan.html</loc></url></urlset>",
             content_type="application/xml")
    site.put("/a.html", html("Alpha", "alphaword", ("/", "#frag")))
    site.put("/latin1.html", LATIN1.encode("iso-8859-1"), content_type="text/html")
    site.put("/latin1-undeclared.html", LATIN1_UNDECLARED.encode("iso-8859-1"),
             content_type="text/html; charset=utf-8")  # a header that lies
    site.put("/sjis.html", SHIFT_JIS.encode("shift_jis"), content_type="text/html")
    site.put("/broken.html", BROKEN)
    site.put("/from-broken.html", html("From broken", "rescued"))
    site.put("/error.html", "boom", status=500)
    site.put("/flaky.html", html("Flaky", "flakyword") if version == 1 else "down", status=200 if version == 1 else 500)
    site.put("/changing.html", html("Changing", "firstversion" if version == 1 else "secondversion"))
    if version == 1:
        site.put("/remove-me.html", html("Remove me", "doomedword"))
    else:
        site.put("/new.html", html("New", "freshword"))
    site.put("/r1", status=302, headers={"Location": "/r2"}, content_type="")
    site.put("/r2", status=301, headers={"Location": f"{site.base}/redirected.html"}, content_type="")
    site.put("/redirected.html", html("Redirected", "arrived"))
    site.put("/loop-a", status=302, headers={"Location": "/loop-b"}, content_type="")
    site.put("/loop-b", status=302, headers={"Location": "/loop-a"}, content_type="")
    site.put("/slow.html", html("Slow", "sluggish"), delay=5)
    site.put("/big.html", html("Big", "x" * 300_000))
    site.put("/bomb.html", gzip_bomb(32), headers={"Content-Encoding": "gzip"})
    site.put("/private/secret.html", html("Secret", "forbidden"))
    site.put("/noindex.html", html("Noindex", "hiddenword", ("/via-noindex.html",),
                                   head='<meta name="robots" content="noindex">'))
    site.put("/via-noindex.html", html("Via noindex", "reached"))
    site.put("/nofollow.html", html("Nofollow", "shown", ("/hidden.html",), head='<meta name="robots" content="nofollow">'))
    site.put("/hidden.html", html("Hidden", "never"))
    site.put("/orphan.html", html("Orphan", "only in the sitemap"))
    site.put("/members/m.html", html("Members", "memberword"), login=("basic", "alice", PASSWORD))
    site.put("/digest/d.html", html("Digest", "digestword"), login=("digest", "bob", PASSWORD))
    site.put("/dup.html", html("Duplicate", "copy", head='<link rel="canonical" href="/a.html">'))
    site.put("/plain.txt", "plain text file", content_type="text/plain")

    def calendar(path: str):  # an endless calendar: each day links to the next
        day = int(path.rsplit("=", 1)[1])
        return Resource(html(f"Day {day}", "calendarword", (f"/calendar?day={day + 1}",)).encode())

    site.route("/calendar?day=", calendar)

    def cycle(path: str):  # /x/, /x/x/, /x/x/x/ …: a relative link to itself one level down
        return Resource(html("Cycle", "cycleword", ("x/",)).encode())

    site.route("/x/", cycle)


PAGES_V1 = ["/", "/a.html", "/broken.html", "/calendar?day=0", "/calendar?day=1", "/calendar?day=2",
            "/calendar?day=3", "/calendar?day=4", "/changing.html", "/digest/d.html", "/flaky.html",
            "/from-broken.html", "/latin1-undeclared.html", "/latin1.html", "/members/m.html", "/nofollow.html",
            "/orphan.html", "/plain.txt", "/redirected.html", "/remove-me.html", "/sjis.html", "/via-noindex.html",
            "/x/", "/x/x/"]


@pytest.fixture
def site():
    website = Website()
    website.start()
    yield website
    website.stop()


@pytest.fixture
def web_config(tmp_path, make_config, monkeypatch):
    monkeypatch.setenv("BT_HTTP_PASSWORD", PASSWORD)

    def make(site: Website, **http) -> Path:
        settings = {"delay": 0, "concurrency_per_host": 2, "read_timeout": 2, "total_timeout": 20,
                    "max_body": "100 KiB", "max_cycle_count": 2, "max_query_strings_per_path": 5, **http}
        return make_config(
            tmp_path, start=[{"url": site.base + "/"}], whitelist=[{"prefix": site.base + "/"}],
            url_cleaners=["sid=[^&]*"], http=settings,
            credentials=[{"url": site.base + "/members/", "username": "alice", "password": "${BT_HTTP_PASSWORD}"},
                         {"url": site.base + "/digest/", "username": "bob", "password": "${BT_HTTP_PASSWORD}",
                          "auth": "digest"}])

    return make


def indexed(config: Path) -> dict[str, tuple[str, str]]:
    """{path: (title, content)} of every document in the embedded index."""
    index = yaml.safe_load(config.read_text())["index"]["path"]
    with sqlite3.connect(index) as db:
        rows = db.execute("SELECT docs.url, docs.title, docs_fts.content FROM docs "
                          "JOIN docs_fts ON docs_fts.rowid = docs.rid").fetchall()
    return {urlsplit(url).path + (f"?{urlsplit(url).query}" if urlsplit(url).query else ""): (title, text)
            for url, title, text in rows}


def test_first_crawl_changes_unchanged_and_server_down(site, web_config, crawl, search):
    build(site, 1)
    config = web_config(site)
    base = site.base

    run = crawl(config)
    assert run.code == 1, run.stderr  # incomplete pages (500, timeout, over-size) are report lines
    docs = indexed(config)
    assert sorted(docs) == PAGES_V1
    assert "Straßenbahn fährt über die Brücke" in docs["/latin1.html"][1]
    assert "Grüße aus Zürich" in docs["/latin1-undeclared.html"][1]
    assert "東京の天気は晴れ" in docs["/sjis.html"][1] and docs["/sjis.html"][0] == "東京の天気"
    assert "brokenword" in docs["/broken.html"][1]
    problems = run.problems()
    assert problems[f"{base}/missing.html"] == f"answered 404, linked from {base}/"
    assert problems[f"{base}/error.html"] == "answered 500; the indexed page is kept"
    assert problems[f"{base}/loop-a"].startswith("redirect loop")
    assert problems[f"{base}/slow.html"] == "read timeout"
    assert problems[f"{base}/big.html"].startswith("body larger than http.max_body")
    assert problems[f"{base}/bomb.html"].startswith("body larger than http.max_body")
    assert "more than 5 query strings" in problems[f"{base}/calendar"]
    assert not any("passwd" in url for url in site.paths())
    assert "/private/secret.html" not in site.paths() and "/hidden.html" not in site.paths()
    assert run.counts["dead_link"] == 1
    assert "1 dead links" in run.stdout  # the terminal summary names them too
    assert run.counts["read"] == run.counts["written"] == len(docs)  # pages read as they were fetched
    assert f"read {len(docs)} documents, wrote {len(docs)}" in run.stdout
    # politeness: requests to the host are paced by robots.txt's Crawl-delay (0.05 s), redirect hops too
    # (the pacer schedules request k at start + k * delay; the server sees them with some jitter)
    times = sorted(r.at for r in site.requests if r.path != "/robots.txt")
    assert times[-1] - times[0] >= (len(times) - 1) * 0.05 - 0.02
    assert search(config, "memberword")[0]["url"] == f"{base}/members/m.html"

    # the site changes: a page added, one changed, one removed (404), one failing (500)
    build(site, 2)
    site.requests.clear()
    run = crawl(config)
    docs = indexed(config)
    assert sorted(docs) == sorted([*(p for p in PAGES_V1 if p != "/remove-me.html"), "/new.html"])
    assert "secondversion" in docs["/changing.html"][1] and "flakyword" in docs["/flaky.html"][1]
    assert (run.counts["new"], run.counts["changed"], run.counts["deleted"]) == (1, 2, 1)
    assert run.problems()[f"{base}/remove-me.html"] == f"answered 404, linked from {base}/"
    conditional = [r for r in site.requests if r.path == "/a.html"]
    assert conditional and all("If-None-Match" in r.headers for r in conditional)

    # nothing changed: every page answers 304, nothing is read, prepared or written
    site.requests.clear()
    run = crawl(config)
    assert sorted(indexed(config)) == sorted(docs)
    assert (run.counts["read"], run.counts["written"], run.counts["deleted"]) == (0, 0, 0)
    assert run.counts["unchanged"] == run.counts["not_modified"] == len(docs) - 1  # /flaky.html: 500, kept

    # the server is down: every page is kept
    site.stop()
    run = crawl(config)
    assert run.code == 1
    assert sorted(indexed(config)) == sorted(docs)
    assert run.counts["deleted"] == 0 and run.counts["kept"] == len(docs)
    assert run.problems()[base] == "host unreachable (connection refused); all pages of the host kept"

    # the password went nowhere
    kept = Path(yaml.safe_load(config.read_text())["index"]["path"]).parent.glob("index*")  # and the work folder
    index_files = [f for path in kept for f in ([path] if path.is_file() else path.rglob("*")) if f.is_file()]
    for text in (*(f.read_bytes().decode("latin-1") for f in index_files), run.stdout, run.stderr,
                 report_path(config).read_text()):
        assert PASSWORD not in text


def test_a_host_cut_at_max_pages_keeps_its_pages(site, web_config, crawl):
    build(site, 1)
    config = web_config(site)
    assert crawl(config).code == 1
    before = sorted(indexed(config))
    config = web_config(site, max_pages_per_host=3)
    run = crawl(config)
    assert sorted(indexed(config)) == before
    assert run.counts["deleted"] == 0
    assert "stopped at max_pages_per_host 3" in run.problems()[site.base]


def test_robots_txt_failing_keeps_the_host(site, web_config, crawl):
    build(site, 1)
    config = web_config(site)
    crawl(config)
    before = sorted(indexed(config))
    site.put("/robots.txt", "overloaded", status=503)
    run = crawl(config)
    assert sorted(indexed(config)) == before and run.counts["deleted"] == 0
    assert run.problems()[site.base] == "robots.txt: robots.txt answered 503; all pages of the host kept"


def test_private_addresses_can_be_blocked(site, web_config, crawl):
    build(site, 1)
    run = crawl(web_config(site, block_private_addresses=True))
    assert indexed(web_config(site)) == {} and run.counts.get("fetched", 0) == 0
    reasons = " ".join(run.problems().values())
    assert "127.0.0.1, not a public address (http.block_private_addresses)" in reasons, run.problems()


@pytest.mark.parametrize(("http", "message"), [
    ({"delay": -1}, "http.delay: must be a number of seconds from 0 to 31536000 (a year), got -1"),
    ({"concurrency_per_host": 0}, "http.concurrency_per_host: must be at least 1, got 0"),
    ({"max_body": "lots"}, "http.max_body: must be a positive size"),
    ({"robots": True}, "http.robots: unknown key"),
    ({"honour_robots_meta": "yes"}, "http.honour_robots_meta: must be true or false"),
    ({}, "http: must be a mapping"),
])
def test_http_config_errors_are_one_line(tmp_path, http, message):
    path = tmp_path / "crawl.yaml"
    path.write_text(yaml.safe_dump({"start": [{"url": "https://example.org/"}], "index": {"path": "i.sqlite"},
                                    "http": http or "nothing"}))
    with pytest.raises(ConfigError) as err:
        load_config(str(path))
    assert str(err.value).startswith(f"{path}: {message}")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("url", ["https://bob:hunter2@example.org/", "smb://bob:hunter2@fileserver/share/",
                                 "imap://bob:hunter2@mail.example.org/INBOX"])
def test_a_login_in_a_start_url_is_refused(tmp_path, url):
    path = tmp_path / "crawl.yaml"
    path.write_text(yaml.safe_dump({"start": [{"url": url}], "index": {"path": "i.sqlite"}}))
    with pytest.raises(ConfigError) as err:
        load_config(str(path))
    assert str(err.value) == f"{path}: start[0].url: must not hold a user or password; put the login in credentials"


def test_links_between_hosts_are_crawled_in_later_rounds(tmp_path, make_config, crawl):
    sites = [Website() for _ in range(4)]
    a, b, c, d = (s.start() for s in sites)
    try:
        sites[0].put("/", html("A home", "ahome", ("/x.html", f"{b}/b.html")))
        sites[0].put("/x.html", html("A x", "ax"))
        sites[0].put("/y.html", html("A y", "ay"))
        sites[1].put("/b.html", html("B page", "bpage", (f"{a}/x.html", f"{a}/y.html", f"{c}/c.html")))
        sites[2].put("/c.html", html("C page", "cpage", (f"{d}/d.html",)))
        sites[3].put("/d.html", html("D page", "dpage"))
        config = make_config(tmp_path, start=[{"url": a + "/"}], discovery_rounds=3,
                             whitelist=[{"prefix": f"{u}/"} for u in (a, b, c, d)], http={"delay": 0})
        run = crawl(config)
        # round 1: A; round 2: B (linked from A); round 3: A's /y.html and C (linked from B); D would need a 4th
        assert sorted(indexed(config)) == ["/", "/b.html", "/c.html", "/x.html", "/y.html"]
        assert sites[0].paths().count("/x.html") == 1  # visited in round 1, not fetched again in round 3
        assert not any(p.endswith(".html") for p in sites[3].paths())
        assert run.counts["incomplete"] == 1 and run.code == 1  # D's page was not reached: it would be kept
    finally:
        for site in sites:
            site.stop()


@pytest.mark.parametrize("failure", [{"status": 503}, {"status": 429}, {"delay": 4}])
def test_pages_reached_only_through_a_failing_page_are_still_crawled(site, web_config, crawl, failure):
    """Issue 26 (red team): a page kept because it failed hid the pages only it linked to, which were then
    taken for gone and deleted. It goes on with the links it had when indexed, as a 304 does."""
    site.put("/", html("Home", "home", ("/hub.html",)))
    site.put("/hub.html", html("Hub", "hub", tuple(f"/leaf-{n}.html" for n in range(5))))
    for n in range(5):
        site.put(f"/leaf-{n}.html", html(f"Leaf {n}", f"leaf {n}"))
    config = web_config(site, read_timeout=2)
    assert crawl(config).code == 0
    site.put("/hub.html", "down", **failure)
    run = crawl(config)
    assert sorted(indexed(config)) == ["/", "/hub.html", *(f"/leaf-{n}.html" for n in range(5))]
    assert run.counts["deleted"] == 0 and run.counts["unchanged"] == 6, run.counts
    assert run.code == 1
