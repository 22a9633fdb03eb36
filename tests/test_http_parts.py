"""The web source's smaller parts on their own: link extraction, sitemaps, charsets, logins against the
loopback site, re-reading a page for preparation, and when web discovery needs more than one round."""

from __future__ import annotations

import gzip

import pytest
from beamtrawl.pipeline.config import Credential, parse_config
from beamtrawl.transforms.discover import other_hosts_possible
from beamtrawl.transforms.records import FrontierItem
from beamtrawl.transforms.sources import Sources
from beamtrawl.transforms.sources.http import charset, links
from beamtrawl.transforms.sources.http.fetch import Fetcher
from beamtrawl.transforms.sources.settings import SourceSettings

from tests.servers.website import Website, html

PAGE = b"""<html><head><base href="http://example.org/docs/">
<link rel="canonical" href="/docs/main.html"><meta name="ROBOTS" content="NOINDEX">
</head><body><a href="a.html">First <b>link</b></a> <a href="../up.html#x">Up</a>
<a href="mailto:x@example.org">mail</a> <a href="javascript:void(0)">js</a> <a href="#top">top</a>
<a rel="nofollow" href="paid.html">paid</a> <area href="map.html">
<frameset><frame src="frame.html"></frameset><iframe src="https://other.example.net/i.html"></iframe>
<a href="file:///etc/passwd">passwd</a>"""


def test_links_with_text_base_canonical_and_robots_meta():
    found = links.extract(PAGE, "http://example.org/index.html")
    assert found.links == [
        ("http://example.org/docs/a.html", "First link"), ("http://example.org/up.html#x", "Up"),
        ("http://example.org/docs/map.html", ""), ("http://example.org/docs/frame.html", ""),
        ("https://other.example.net/i.html", ""), ("file:///etc/passwd", "passwd")]
    assert found.canonical == "http://example.org/docs/main.html"
    assert (found.noindex, found.nofollow) == (True, False)
    assert links.extract(b"", "http://example.org/").links == []


def test_sitemaps_plain_gzipped_and_index():
    urlset = (b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
              b"<url><loc> http://example.org/a </loc></url><url><loc>http://example.org/b</loc></url></urlset>")
    assert links.sitemap_urls(urlset, 10**6) == (["http://example.org/a", "http://example.org/b"], [])
    assert links.sitemap_urls(gzip.compress(urlset), 10**6)[0] == ["http://example.org/a", "http://example.org/b"]
    index = (b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
             b"<sitemap><loc>http://example.org/s1.xml</loc></sitemap></sitemapindex>")
    assert links.sitemap_urls(index, 10**6) == ([], ["http://example.org/s1.xml"])
    assert links.sitemap_urls(b"not xml at all <<<", 10**6) == ([], [])
    bomb = gzip.compress(b"<urlset>" + b" " * 50_000_000)
    assert links.sitemap_urls(bomb, 1000) == ([], [])  # decompression stops at the limit


@pytest.mark.parametrize(("body", "content_type", "expected"), [
    ("Grüße aus Köln, schöne Straße".encode("cp1252"), "text/html; charset=windows-1252", "cp1252"),
    ("<meta charset='shift_jis'>東京".encode("shift_jis"), "text/html", "cp932"),
    ("<meta charset='utf-8'>déjà".encode(), "text/html; charset=iso-8859-1", "cp1252"),  # the header wins
    ("Grüße aus Köln, schöne Straße. Voilà ça déjà été.".encode("latin-1"), "text/html; charset=utf-8",
     "cp1252"),  # the header lies: detection
])
def test_charset_from_header_meta_or_detection(body, content_type, expected):
    text, encoding = charset.decode(body, content_type)
    assert encoding == expected
    assert charset.to_utf8(body, content_type) == text.encode()


@pytest.fixture(scope="module")
def site():
    website = Website()
    website.start()
    website.put("/basic.html", html("Basic", "inside"), login=("basic", "alice", "pw1"))
    website.put("/digest.html", html("Digest", "inside"), login=("digest", "bob", "pw2"))
    website.put("/latin.html", "<html><body>Grüße</body></html>".encode("latin-1"), content_type="text/html")
    yield website
    website.stop()


def test_basic_and_digest_logins(site):
    fetcher = Fetcher()
    alice, bob = Credential(site.base + "/", "alice", "pw1"), Credential(site.base + "/", "bob", "pw2", "digest")
    assert fetcher.fetch(f"{site.base}/basic.html").status == 401
    assert fetcher.fetch(f"{site.base}/basic.html", credential=lambda url: alice).status == 200
    assert fetcher.fetch(f"{site.base}/digest.html", credential=lambda url: bob).status == 200
    wrong = Credential(site.base + "/", "bob", "nope", "digest")
    assert fetcher.fetch(f"{site.base}/digest.html", credential=lambda url: wrong).status == 401


def test_open_document_reads_a_page_again_as_utf8(site):
    web = Sources()(site.base)
    with web.open_document(f"{site.base}/latin.html") as stream:
        assert stream.read() == "<html><body>Grüße</body></html>".encode()
    with pytest.raises(OSError, match="answered 404"):
        web.open_document(f"{site.base}/gone.html")


def test_open_document_keeps_the_configured_limits(site, tmp_path):
    config = parse_config({"start": [{"url": site.base}], "index": {"path": str(tmp_path / "i.sqlite")},
                           "http": {"max_body": 8}}, str(tmp_path / "crawl.yaml"))
    with pytest.raises(OSError, match="larger than the limit"):
        Sources(SourceSettings.from_config(config))(site.base).open_document(f"{site.base}/latin.html")


def test_one_round_unless_the_whitelist_reaches_other_hosts(tmp_path):
    def config(whitelist):
        return parse_config({"start": [{"url": "http://a.example/"}], "index": {"path": "i.sqlite"},
                             **({"whitelist": whitelist} if whitelist else {})}, str(tmp_path / "c.yaml"))

    roots = [FrontierItem("http://a.example/", "http://a.example/", 0, "http://a.example/", [], "", "")]
    assert not other_hosts_possible(roots, config(None).whitelist)
    assert not other_hosts_possible(roots, config([{"prefix": "http://a.example/"},
                                                   {"prefix": "file:///srv/"}]).whitelist)
    assert other_hosts_possible(roots, config([{"prefix": "http://a.example/"},
                                               {"prefix": "http://b.example/"}]).whitelist)
    assert other_hosts_possible(roots, config([{"regex": "http://.*"}]).whitelist)
