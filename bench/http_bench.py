"""Web crawl benchmark: beamtrawl against a Scrapy spider on the same loopback site, in one run.

Run from the repository root, with Scrapy from the ``bench`` extra (which also pins Scrapy's TLS stack
below the cryptography 48 that apache-beam refuses)::

    pip install -e '.[bench]'
    python bench/http_bench.py [--pages 2000] [--concurrency 8] [--workers 2] [--tiny]

A generated site of ``--pages`` linked HTML pages (about 3 KB of text each, 11 links per page; see
tests/servers/website.py) is served by a threaded HTTP/1.1 server on 127.0.0.1 in this process.
Both crawlers get the same work:

* start at ``/``, follow every link on the host, obey robots.txt (the site has none: 404), no
  politeness delay, ``--concurrency`` requests in flight to the host, no page limit;
* every page goes through beamtrawl's HTML preparator (``prepare_html``) and ``make_document``, and is
  upserted in batches of 500 into an EmbeddedIndex (SQLite/FTS5) of its own.

Figures, each timed as a whole process (interpreter start to exit):

(a) pages per second of ``beamtrawl crawl`` (``--direct_num_workers=W``) and of the Scrapy spider
    (one process, Twisted), and their ratio — target >= 1.0x;
(b) the re-crawl of the unchanged site with beamtrawl (every page answers 304, nothing is read or
    written): its time as a ratio to the first crawl — target <= 0.3.

Both indexes must hold every page, else the script fails (exit 1). Exit 0 when the figures were
measured, whether or not they meet their targets. ``--tiny`` (tests/test_benchmarks.py runs it): 30 pages.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.servers.website import Website, generated_site

SPIDER = textwrap.dedent('''
    """The Scrapy peer: same site, same preparation, same index writes as beamtrawl."""
    import sys
    from urllib.parse import urlsplit

    import scrapy
    from scrapy.crawler import CrawlerProcess
    from scrapy.linkextractors import LinkExtractor

    from beamtrawl.transforms.index.sqlite import EmbeddedIndex
    from beamtrawl.transforms.preparators.base import Prepared
    from beamtrawl.transforms.preparators.html import prepare_html
    from beamtrawl.transforms.prepare import PrepareOptions, make_document
    from beamtrawl.transforms.records import Entry, RawDocument
    from beamtrawl.transforms.urls import doc_id, normalize_url

    START, INDEX, CONCURRENCY = sys.argv[1], sys.argv[2], int(sys.argv[3])
    BATCH = 500
    OPTIONS = PrepareOptions((), "bench", 2**30, 250_000)


    class Site(scrapy.Spider):
        name = "site"
        start_urls = [START]
        allowed_domains = [urlsplit(START).hostname]
        links = LinkExtractor(deny_extensions=[], tags=("a", "area", "frame", "iframe"), attrs=("href", "src"))

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.index = EmbeddedIndex(INDEX)
            self.index.prepare()
            self.batch = []

        def parse(self, response):
            url = normalize_url(response.url)
            entry = Entry(doc_id(url), url, START, 0, len(response.body), 0, "", response.body, "text/html", [],
                          response.headers.get("ETag", b"").decode(), "", "", "")
            try:
                prepared = prepare_html(response.body, url, "text/html", {})
            except Exception:  # noqa: BLE001
                prepared = Prepared()
            self.batch.append(make_document(RawDocument(entry, "text/html", response.body, ""), prepared, OPTIONS))
            if len(self.batch) >= BATCH:
                self.index.upsert(self.batch)
                self.batch = []
            for link in self.links.extract_links(response):
                yield response.follow(link.url, callback=self.parse)

        def closed(self, reason):
            if self.batch:
                self.index.upsert(self.batch)
            self.index.close()


    process = CrawlerProcess(settings={
        "CONCURRENT_REQUESTS": CONCURRENCY, "CONCURRENT_REQUESTS_PER_DOMAIN": CONCURRENCY, "DOWNLOAD_DELAY": 0,
        "ROBOTSTXT_OBEY": True, "LOG_LEVEL": "ERROR", "COOKIES_ENABLED": False, "TELNETCONSOLE_ENABLED": False,
        "RETRY_ENABLED": False, "DEPTH_LIMIT": 0, "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    })
    process.crawl(Site)
    process.start()
''')


def timed(command: list[str], env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, check=False)
    return time.perf_counter() - started, done


def count(index: Path) -> int:
    with sqlite3.connect(index) as db:
        return db.execute("SELECT COUNT(*) FROM docs WHERE url LIKE 'http%'").fetchone()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tiny", action="store_true", help="30 pages: the test suite's run")
    args = parser.parse_args()
    if args.tiny:
        args.pages = 30

    site = Website()
    generated_site(site, args.pages)
    base = site.start()
    expected = args.pages + 1  # and the home page
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with tempfile.TemporaryDirectory(prefix="http-bench-") as tmp:
        tmp = Path(tmp)
        config = tmp / "crawl.yaml"
        config.write_text(yaml.safe_dump({
            "start": [{"url": base + "/"}], "index": {"path": str(tmp / "beamtrawl.sqlite")},
            "http": {"delay": 0, "concurrency_per_host": args.concurrency, "sitemaps": False}}))
        crawl = [sys.executable, "-m", "beamtrawl.pipeline.cli", "crawl", str(config), f"--direct_num_workers={args.workers}"]

        first_s, done = timed(crawl, env)
        report = json.loads((tmp / "beamtrawl.report.json").read_text())
        if count(tmp / "beamtrawl.sqlite") != expected:
            print(f"FAIL: beamtrawl indexed {count(tmp / 'beamtrawl.sqlite')} of {expected} pages\n{done.stderr[-2000:]}")
            return 1
        requests_before = len(site.requests)
        again_s, done = timed(crawl, env)
        again = json.loads((tmp / "beamtrawl.report.json").read_text())["counts"]
        if (again["read"], again["written"], again["not_modified"]) != (0, 0, expected):
            print(f"FAIL: the re-crawl read {again['read']}, wrote {again['written']}, "
                  f"had {again['not_modified']} answers 304 of {expected}")
            return 1
        recrawl_requests = len(site.requests) - requests_before

        spider = tmp / "spider.py"
        spider.write_text(SPIDER)
        scrapy_s, done = timed([sys.executable, str(spider), base + "/", str(tmp / "scrapy.sqlite"),
                                str(args.concurrency)], env)
        if done.returncode != 0 or count(tmp / "scrapy.sqlite") != expected:
            got = count(tmp / "scrapy.sqlite") if (tmp / "scrapy.sqlite").exists() else 0
            print(f"FAIL: the Scrapy spider indexed {got} of {expected} pages\n{done.stderr[-2000:]}")
            return 1
    site.stop()

    ours, theirs = expected / first_s, expected / scrapy_s
    ratio, recrawl = ours / theirs, again_s / first_s
    print(f"site: {expected} pages on {base}, concurrency {args.concurrency} for both, no delay, robots.txt obeyed; "
          f"beamtrawl on DirectRunner with {args.workers} workers, Scrapy in one process; both prepare every "
          f"page with prepare_html and upsert batches of 500 into an EmbeddedIndex")
    print(f"beamtrawl first crawl  {first_s:7.2f} s  {ours:7.1f} pages/s   (pipeline {report['timings']['pipeline_s']} s)")
    print(f"Scrapy spider          {scrapy_s:7.2f} s  {theirs:7.1f} pages/s")
    print(f"ratio beamtrawl/Scrapy {ratio:7.2f}x  (target >= 1.0x) {'PASS' if ratio >= 1.0 else 'MISS'}")
    print(f"beamtrawl re-crawl     {again_s:7.2f} s  ({recrawl_requests} requests, all 304; read 0, written 0)")
    print(f"re-crawl / first crawl {recrawl:7.2f}   (target <= 0.3) {'PASS' if recrawl <= 0.3 else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
