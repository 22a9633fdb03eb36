"""What a document says can never become markup or terminal control in an output: titles and snippets
are HTML-escaped in ``snippet_html`` and stripped of control characters on the terminal."""

from __future__ import annotations

import json

from tests.conftest import beamtrawl


def test_markup_and_escape_sequences_in_documents_stay_inert(tmp_path, make_config, crawl):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "evil.html").write_text(
        "<html><head><title>&lt;script&gt;alert(1)&lt;/script&gt; quarterly</title></head><body>"
        "<p>quarterly &lt;img src=x onerror=alert(2)&gt; figures and more words for the extractor</p>"
        "</body></html>", encoding="utf-8")
    (root / "term.txt").write_bytes(b"quarterly \x1b]0;owned\x07 title bar \x1b[2J cleared screen \x9b31m")
    config = make_config(root)
    assert crawl(config).code == 0

    listing = beamtrawl("search", "quarterly", "--config", str(config), check_dac=False)
    assert listing.returncode == 0, listing.stderr
    assert "<script>alert(1)</script> quarterly" in listing.stdout  # plain text on a terminal is inert
    assert not any(ch in listing.stdout for ch in "\x1b\x07\x9b"), repr(listing.stdout)

    hits = json.loads(beamtrawl("search", "quarterly", "--config", str(config), "--json",
                                check_dac=False).stdout)
    assert len(hits) == 2
    for hit in hits:
        assert "<script" not in hit["snippet_html"] and "<img" not in hit["snippet_html"]
        assert set(hit["snippet_html"].replace("<mark>", "").replace("</mark>", "")).isdisjoint("<>")
    (evil,) = json.loads(beamtrawl("search", "figures", "--config", str(config), "--json",
                                   check_dac=False).stdout)
    assert "&lt;img src=x onerror=alert(2)&gt;" in evil["snippet_html"]
