"""Crawling one host: breadth-first, politely, within bounds, revalidating what the index already holds.

All requests to a host happen in one :class:`HostCrawl` call, so politeness needs no coordination
between workers: one pacer spaces requests by ``max(http.delay, robots.txt Crawl-delay)`` and at most
``concurrency_per_host`` requests are in flight (threads; fetching is I/O). Links to other hosts are
handed back as frontier items for the next discovery round.

What each answer means for the index (see :mod:`transforms.freshness`):

* 200: an Entry carrying the page as UTF-8; the same content hash as indexed → the snapshot's size
  and mtime, so freshness counts it unchanged; else size = body length, mtime = Last-Modified or now.
* 304 (conditional GET with the stored ETag / Last-Modified): an Entry with the snapshot's size and
  mtime and no body; the stored outlinks continue discovery without re-fetching.
* 404, 410 and other 4xx except 401/403/408/429: a dead link, reported with the page that linked it;
  nothing is emitted, so an indexed page is deleted.
* 5xx, 401/403/408/429, timeouts, an over-size body: an ``incomplete`` event for the page (kept); the
  links it had when indexed are followed as for a 304, so pages reached only through it are not taken
  for gone.
* Refused connections, robots.txt unreachable, 5xx or 429, or every request of the host failing (timeouts,
  5xx, 408, 429): ``incomplete`` for the whole host (all kept).
* A start page that fails (no answer, any status from 400 on, or a redirect it may not follow — a sign-in
  page elsewhere): ``incomplete`` for its root, so every page found from it — on any host — is kept
  (freshness keeps what lies under an incomplete root).
* A redirect is followed at once, also to another host (one request outside that host's pacing); the
  page is indexed under the target URL, which must be accepted by the rules and robots.txt of this host.
* A bound that cuts discovery (``max_pages_per_host``, query strings per path) marks what it left
  ``incomplete``, so pages it did not reach are kept, never deleted.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import NamedTuple

from beamtrawl.transforms.records import Entry, FrontierItem, event
from beamtrawl.transforms.sources.base import Visited
from beamtrawl.transforms.sources.http import charset, links
from beamtrawl.transforms.sources.http.fetch import Fetcher, FetchError, Limits, Page
from beamtrawl.transforms.sources.http.robots import Robots, load_robots
from beamtrawl.transforms.sources.http.traps import link_in_scope, too_many_cycles
from beamtrawl.transforms.urls import doc_id, host_of, normalize_url

HTML_TYPES = ("text/html", "application/xhtml+xml")
_KEEP_STATUSES = (401, 403, 408, 429)  # the page may well exist: keep what is indexed
_UNREACHABLE = ("connection refused", "cannot connect", "connect timeout")
MAX_SITEMAPS = 50


def make_fetcher(http) -> Fetcher:
    """A fetcher with the ``http:`` section's limits."""
    return Fetcher(Limits(*(getattr(http, key) for key in Limits._fields)), connections_per_host=http.concurrency_per_host)


class _Task(NamedTuple):
    url: str
    depth: int  # link hops from the start URL
    source_url: str
    link_text: str
    parse: bool
    index: bool
    root: str
    start: bool = False  # a start URL: if it fails, its root is unavailable


@dataclass
class _Outcome:
    task: _Task
    page: Page | None = None
    error: str = ""
    content: bytes | None = None
    mimetype: str = ""
    found: links.PageLinks | None = None


def _entry(url: str, task: _Task) -> Entry:
    """The entry of the page ``task`` found at ``url``, before what its answer says (size, date, body, links)."""
    return Entry(id=doc_id(url), url=url, root=task.root, depth=task.depth, size=0, mtime_ns=0, identity="",
                 content=None, mimetype="", outlinks=[], etag="", http_last_modified="", source_url=task.source_url,
                 link_text=task.link_text)


class _Pacer:
    """Spaces the requests of all threads to one host by ``delay`` seconds."""

    def __init__(self, delay: float):
        self.delay = delay
        self.lock = threading.Lock()
        self.next = 0.0

    def wait(self) -> None:
        if self.delay <= 0:
            return
        with self.lock:
            now = time.monotonic()
            at = max(now, self.next)
            self.next = at + self.delay
        if at > now:
            time.sleep(at - now)


def _answered(outcome: _Outcome) -> bool:
    """Did the host answer this request as a host that works does (a page, 304, a redirect, 404)? Not a
    timeout, a refused connection, 5xx, 408 or 429."""
    page = outcome.page
    return page is not None and page.status < 500 and page.status not in (408, 429)


def _mtime_ns(last_modified: str, fallback_ns: int) -> int:
    try:
        return int(parsedate_to_datetime(last_modified).timestamp() * 1_000_000_000)
    except (TypeError, ValueError, IndexError, OverflowError):
        return fallback_ns


class HostCrawl:
    """One host's share of a discovery round. The fetcher is the caller's (one per worker process, see
    :class:`~beamtrawl.transforms.sources.http.WebSource`)."""

    def __init__(self, settings, rules, fetcher: Fetcher):
        from beamtrawl.transforms.sources.http import WebSource

        self.http = settings.of(WebSource)
        self.cleaners = settings.url_cleaners
        self.login_for = settings.login_for
        self.rules = rules
        self.fetcher = fetcher

    # -- the crawl ---------------------------------------------------------------------------
    def run(self, host: str, items, known: dict) -> Iterator:
        """Crawl ``host`` from frontier ``items``; ``known`` maps URL → SnapshotEntry of indexed pages.
        Yields Entry, FrontierItem (other hosts), Visited and Event records."""
        self.host, self.known = host, known
        self.queue: deque[_Task] = deque()
        self.offered: set[str] = set()
        self.emitted: set[str] = set()
        self.queries: dict[str, set[str]] = {}
        if self.http.robots_txt:
            try:
                self.robots = load_robots(self.fetcher, host + "/", self.http.user_agent, self.http.delay)
            except FetchError as err:  # robots.txt is the first request: an unreachable host fails here
                what = f"host unreachable ({err})" if err.unreachable else f"robots.txt: {err}"
                yield from self._host_incomplete("fetch", f"{what}; all pages of the host kept")
                return
        else:
            self.robots = Robots(None, self.http.user_agent, self.http.delay)
        self.pacer = _Pacer(self.robots.delay)
        for item in sorted(items, key=lambda i: (i.depth, i.url)):
            yield from self._offer_item(item)
        if self.http.sitemaps and any(item.depth == 0 for item in items):
            yield from self._sitemaps(min((i for i in items if i.depth == 0), key=lambda i: i.url))
        yield from self._breadth_first()

    def _breadth_first(self) -> Iterator:
        fetched, down, answered, failed = 0, False, 0, ""
        limit = self.http.max_pages_per_host
        with ThreadPoolExecutor(self.http.concurrency_per_host) as pool:
            running: dict = {}
            while self.queue or running:
                while self.queue and not down and len(running) < self.http.concurrency_per_host \
                        and fetched + len(running) < limit:
                    task = self.queue.popleft()
                    running[pool.submit(self._fetch, task)] = task
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: running[f].url):
                    del running[future]
                    outcome = future.result()
                    fetched += 1
                    if _answered(outcome):
                        answered += 1
                    elif not outcome.task.start:
                        failed = failed or outcome.error or (
                            f"answered {outcome.page.status}" if outcome.page is not None else "no answer")
                    if outcome.error.startswith(_UNREACHABLE) and not down:
                        down = True
                        yield from self._host_incomplete(
                            "fetch", f"host unreachable: {outcome.error}; all pages of the host kept")
                    yield from self._handle(outcome)
                if down:
                    self.queue.clear()
        if failed and not answered and not down:
            yield from self._host_incomplete("fetch", f"every request failed (first: {failed}); "
                                                      "all pages of the host kept")
        if self.queue:
            yield from self._host_incomplete(
                "discover", f"stopped at max_pages_per_host {limit} with {len(self.queue)} pages left; "
                            "indexed pages of the host kept")
        yield event("fetched", count=fetched)

    def _host_incomplete(self, stage: str, reason: str) -> Iterator:
        """Keep every indexed page of the host: ``scheme://host`` is the ancestor of all its pages but
        ``scheme://host/``, which is named on its own."""
        yield event("incomplete", self.host, stage, reason)
        yield event("incomplete", self.host + "/", stage, "")

    # -- one page (worker thread) ------------------------------------------------------------
    def _fetch(self, task: _Task) -> _Outcome:
        try:
            page = self.fetcher.fetch(
                task.url, validators=self._validators,
                allow=lambda target: self._redirect_allowed(target, task),
                credential=self.login_for, pace=self.pacer.wait)
        except FetchError as err:
            return _Outcome(task, error=str(err))
        outcome = _Outcome(task, page, mimetype=page.headers.get("content-type", "").split(";")[0].strip().lower())
        if page.status == 200 and not page.truncated:
            html = outcome.mimetype in HTML_TYPES or (not outcome.mimetype and b"<html" in page.body[:1024].lower())
            if html:
                outcome.mimetype = outcome.mimetype or "text/html"
                outcome.content = charset.to_utf8(page.body, page.headers.get("content-type", ""))
                if task.parse or self.http.honour_robots_meta:
                    outcome.found = links.extract(outcome.content, page.url)
            else:
                outcome.content = page.body
        return outcome

    def _validators(self, url: str) -> tuple[str, str]:
        """The stored ETag and Last-Modified of ``url`` for a conditional request, if it is indexed."""
        old = self.known.get(url)
        return (old.etag, old.http_last_modified) if old is not None else ("", "")

    def _redirect_allowed(self, target: str, task: _Task) -> bool:
        """A redirect target is checked like a link; it inherits the flags of the URL that redirected."""
        target = normalize_url(target, self.cleaners)
        if not link_in_scope(target):
            return False
        if not self.rules.decide(target, task.depth, source_url=task.source_url, link_text=task.link_text).accepted:
            return False
        return host_of(target) != self.host or self.robots.allows(target)

    # -- what an answer means (main thread) --------------------------------------------------
    def _handle(self, outcome: _Outcome) -> Iterator:
        task, page = outcome.task, outcome.page
        yield Visited(task.url)
        if page is None:
            if task.start:
                yield from self._root_unavailable(task, outcome.error)
            elif not outcome.error.startswith(_UNREACHABLE):
                yield event("incomplete", task.url, "fetch", outcome.error)
                yield from self._stored_links(task.url, task)
            return
        if task.start and page.status >= 300 and page.status != 304:  # a redirect left: to where the rules forbid
            yield from self._root_unavailable(task, f"answered {page.status}" + (
                " (a redirect the rules do not accept)" if page.status < 400 else ""))
            return
        url = normalize_url(page.url, self.cleaners) if page.redirects else task.url
        if url != task.url:
            yield Visited(url)
            if url in self.emitted:
                yield event("duplicate", count=1)
                return
            self.offered.add(url)
        self.emitted.add(url)
        if page.status == 304:
            yield from self._not_modified(url, task)
        elif page.status in (404, 410) or (400 <= page.status < 500 and page.status not in _KEEP_STATUSES):
            linked = f", linked from {task.source_url}" if task.source_url else ""
            yield event("dead_link", url, "fetch", f"answered {page.status}{linked}")
        elif page.status >= 300:
            yield event("incomplete", url, "fetch", f"answered {page.status}; the indexed page is kept")
            yield from self._stored_links(url, task)
        elif page.truncated:
            yield event("incomplete", url, "fetch", f"body larger than http.max_body ({self.http.max_body} bytes); "
                                                    "not indexed")
        else:
            yield from self._ok(url, task, outcome)

    def _stored_links(self, url: str, task: _Task) -> Iterator:
        """A page kept because it failed (5xx, a timeout…) goes on with the links it had when indexed, as one
        that answers 304 does: pages reached only through it are still reached, not taken for gone."""
        old = self.known.get(url) or self.known.get(task.url)
        if task.parse and old is not None:
            for link in old.outlinks:
                yield from self._offer(link, "", task.depth + 1, url, task.root)

    def _root_unavailable(self, task: _Task, reason: str) -> Iterator:
        """A start page that fails leaves its root uncrawled: every page found from it is kept (freshness
        keeps what lies under an incomplete root), one report line (none more when the host is down)."""
        if reason.startswith(_UNREACHABLE):
            yield event("incomplete", task.root, "fetch", "")
        else:
            yield event("incomplete", task.root, "fetch", f"the start page {reason}; every page found from it kept")

    def _not_modified(self, url: str, task: _Task) -> Iterator:
        old = self.known.get(url) or self.known.get(task.url)
        if old is None:  # 304 to a request that was not conditional
            yield event("incomplete", url, "fetch", "answered 304 to an unconditional request")
            return
        yield event("not_modified")
        if task.index:
            yield _entry(url, task)._replace(size=old.size, mtime_ns=old.mtime_ns, outlinks=list(old.outlinks),
                                             etag=old.etag, http_last_modified=old.http_last_modified)
        if task.parse:
            for link in old.outlinks:
                yield from self._offer(link, "", task.depth + 1, url, task.root)

    def _ok(self, url: str, task: _Task, outcome: _Outcome) -> Iterator:
        page, found = outcome.page, outcome.found
        index, follow = task.index, task.parse
        if found is not None and self.http.honour_robots_meta:
            index, follow = index and not found.noindex, follow and not found.nofollow
            if found.noindex or found.nofollow:
                yield event("robots_meta")
        outlinks = []
        if found is not None and found.canonical:
            canonical = self._normalise(found.canonical)
            if canonical and canonical != url and host_of(canonical) == self.host:
                index = False  # the same page under its preferred URL: index that one
                yield event("canonical_elsewhere")
                yield from self._offer(canonical, "", task.depth, task.source_url, task.root)
        if follow and found is not None:
            for raw, text in found.links:
                link = self._normalise(raw)
                if link is None:
                    continue
                if not link_in_scope(link):
                    yield event("link_out_of_scope")
                    continue
                outlinks.append(link)
                yield from self._offer(link, text, task.depth + 1, url, task.root)
        if not index:
            return
        content = outcome.content or b""
        old = self.known.get(url)
        if old is not None and old.content_hash == hashlib.sha256(content).hexdigest():
            size, mtime_ns = old.size, old.mtime_ns  # the same bytes: unchanged, whatever the headers say
        else:
            size, mtime_ns = len(content), _mtime_ns(page.last_modified, time.time_ns())
        yield _entry(url, task)._replace(size=size, mtime_ns=mtime_ns, content=content, mimetype=outcome.mimetype,
                                         outlinks=list(dict.fromkeys(outlinks)), etag=page.etag,
                                         http_last_modified=page.last_modified)

    # -- which URLs get fetched --------------------------------------------------------------
    def _normalise(self, raw: str) -> str | None:
        try:
            return normalize_url(raw, self.cleaners)
        except ValueError:
            return None

    def _offer_item(self, item) -> Iterator:
        start = self.rules.start(item.url) if item.depth == 0 else None
        if start is not None:
            if item.url in self.offered:
                return
            self.offered.add(item.url)
            if not self.robots.allows(item.url):
                yield event("declined", item.url, "discover", "robots.txt disallows the start URL")
                return
            self.queue.append(_Task(item.url, 0, "", "", start.parse, start.index, item.root, start=True))
            return
        yield from self._offer(item.url, item.link_text, item.depth, item.source_url, item.root)

    def _offer(self, url: str, text: str, depth: int, source_url: str, root: str) -> Iterator:
        """Queue ``url`` on this host, or hand it to the next round for its own host, if the rules and
        trap guards accept it."""
        if url in self.offered:
            return
        self.offered.add(url)
        decision = self.rules.decide(url, depth, source_url=source_url, link_text=text)
        if not decision.accepted:
            yield event("declined")
            return
        if too_many_cycles(url, self.http.max_cycle_count):
            yield event("trap_cycle")
            return
        if host_of(url) != self.host:
            yield FrontierItem(url, root, depth, url, [], source_url, text)
            return
        path, _, query = url.partition("?")
        if query:
            queries = self.queries.setdefault(path, set())
            if len(queries) >= self.http.max_query_strings_per_path:
                if len(queries) == self.http.max_query_strings_per_path:
                    queries.add("")  # report once per path
                    yield event("trap_queries", path, "discover",
                                f"more than {self.http.max_query_strings_per_path} query strings on this path; "
                                "the rest are not fetched (indexed ones kept)")
                yield event("incomplete", url, "discover", "")
                return
            queries.add(query)
        if not self.robots.allows(url):
            yield event("robots_denied")
            return
        self.queue.append(_Task(url, depth, source_url, text, decision.parse, decision.index, root))

    def _sitemaps(self, start) -> Iterator:
        """URLs listed in the host's sitemaps (robots.txt ``Sitemap:`` lines and ``/sitemap.xml``)."""
        pending = [self.host + "/sitemap.xml", *(s for s in self.robots.sitemaps if host_of(s) == self.host)]
        pending = list(dict.fromkeys(normalize_url(s) for s in pending))
        read = 0
        while pending and read < MAX_SITEMAPS:
            sitemap = pending.pop(0)
            read += 1
            try:
                page = self.fetcher.fetch(sitemap, credential=self.login_for,
                                          pace=self.pacer.wait)
            except FetchError:
                yield event("sitemap_failed")
                continue
            if page.status != 200:
                continue
            pages, nested = links.sitemap_urls(page.body, self.http.max_body)
            pending += [n for n in (self._normalise(n) for n in nested) if n and host_of(n) == self.host]
            yield event("sitemap_urls", count=len(pages))
            for raw in pages:
                url = self._normalise(raw)
                if url and link_in_scope(url):
                    yield from self._offer(url, "", 1, sitemap, start.root)
