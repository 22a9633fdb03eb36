"""A bucket listed flat: every key below a prefix in key order, page by page without a delimiter, the folders
derived from the keys. It asks as many requests as a plain paginated listing of the prefix (a thousand keys a
page), where a walk asks one request or more of every prefix.

The listing evidence a delete needs (:class:`~beamtrawl.transforms.records.Listing`) comes folder by folder: the
keys below a folder lie together in key order, so a folder is listed whole once a key beyond it arrives, and
its entries and evidence are handed on then (its entries in one batch, so transforms/compare.py can compare it
where it is listed). A page that fails leaves every folder still open (the prefix itself, and those holding the
last key read) without evidence, and the folders after it unseen: everything there keeps its documents, under
one ``incomplete`` line for the prefix. A store that lists keys out of order is such a failure too.

Past the walk's budget the listing stops after its page, and the folders still open are finished with one
delimited listing each, from the last key read on: their objects become entries, their sub-prefixes not yet
reached go to the next round as frontier items (each listed flat by another worker), and a finished folder's
evidence names them as handed on, as a walk's does. Folders the rules decline (whitelist, blacklist, max_depth)
and keys no URL can name are reported once, as the walk reports them; their keys are passed over.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from beamtrawl.transforms.batches import MOST
from beamtrawl.transforms.records import FrontierItem, Listing, event
from beamtrawl.transforms.urls import container_key


class _Folder:
    """A folder open in a flat listing: its entries not yet handed on, its evidence so far."""

    def __init__(self, item: FrontierItem | None, prefix: str):
        self.item, self.prefix = item, prefix  # item None: declined (or odd), its keys passed over
        self.listing = uuid.uuid4().hex[:16]
        self.held: list = []
        self.seen: set[str] = set()
        self.children: set[str] = set()  # containers handed on, or whose listing failed

    def add(self, record) -> list:
        """Hold an entry of this folder (marked as its listing's); the held ones once MOST are held (a folder
        that large is not compared in place)."""
        if record.route != "entries":
            return [record]
        self.seen.add(record.url)
        self.held.append(record.listed_by(self.listing))
        if len(self.held) < MOST:
            return []
        held, self.held = self.held, []
        return held

    def done(self) -> list:
        """Its held entries and its evidence: listed whole."""
        if self.item is None:
            return []
        held, self.held = self.held, []
        return [*held, Listing(container_key(self.item.url), self.listing, True, len(self.seen),
                               sorted(self.children - {container_key(self.item.url)}))]


def folders_of(key: str, prefix: str) -> list[str]:
    """The prefixes between ``prefix`` and key ``key``, shallowest first (``a/b/c.txt`` below "" → a/, a/b/)."""
    parts = key[len(prefix):].split("/")[:-1]
    return [prefix + "/".join(parts[:n]) + "/" for n in range(1, len(parts) + 1)]


def flat_listing(store, item: FrontierItem, rules, budget: int | None, where: tuple[str, str]) -> Iterator:
    """Records of ``where`` (bucket, prefix) listed flat (see the module docstring): entries, events,
    listings, and frontier items past ``budget`` entries."""
    bucket, prefix = where
    chain = [_Folder(item, prefix)]
    last, listed = "", 0
    try:
        pages = _ahead(store.pages_after(item.url, bucket, prefix, "", delimited=False), store._pool())
        for page in pages:
            yield event("listed", count=len(page.objects))
            for stored in page.objects:
                if stored.key <= last or not stored.key.startswith(prefix):
                    raise OutOfOrder(f"the store listed {stored.key!r} after {last!r}, out of key order")
                last = stored.key
                yield from _enter(store, chain, folders_of(stored.key, prefix), rules)
                if chain[-1].item is not None:
                    for record in store._object(stored, chain[-1].item, rules):
                        yield from chain[-1].add(record)
            listed += len(page.objects)
            if budget is not None and listed >= budget:
                pages.close()
                yield from _finish(store, chain, rules, last, bucket)
                return
    except (*store.failures(), OutOfOrder) as err:
        yield from (record for folder in chain for record in folder.held)  # found, but nothing there is deleted
        yield _cannot(item.url, bucket, prefix, store.reason(err))
        return
    while chain:
        yield from chain.pop().done()


def _enter(store, chain: list[_Folder], folders: list[str], rules) -> Iterator:
    """Close the open folders the next key is not in (listed whole), open those it is in."""
    depth = len(chain) - 1  # chain[0] is the listed prefix itself
    keep = 0
    while keep < min(depth, len(folders)) and chain[keep + 1].prefix == folders[keep]:
        keep += 1
    while len(chain) > keep + 1:
        yield from chain.pop().done()
    for folder in folders[keep:]:
        parent = chain[-1]
        if parent.item is None:
            return  # below a declined folder: passed over
        handed: list[FrontierItem] = []
        yield from store._prefix(folder, parent.item, rules, handed)  # declined or odd: its one event
        chain.append(_Folder(handed[0] if handed else None, folder))


def _finish(store, chain: list[_Folder], rules, last: str, bucket: str) -> Iterator:
    """Past the budget: each open folder, the deepest first, listed on from ``last`` with the delimiter; its
    sub-prefixes not reached are handed on. One whose listing fails is named in its parent's evidence as
    handed on, so nothing below it is deleted."""
    opened = {folder.prefix for folder in chain}
    lost = ""  # the folder below, whose listing failed
    while chain:
        folder = chain.pop()
        if folder.item is None:
            lost = ""
            continue
        if lost:
            folder.children.add(lost)
            lost = ""
        handed: list[FrontierItem] = []
        try:
            for page in store.pages_after(folder.item.url, bucket, folder.prefix, last, delimited=True):
                yield event("listed", count=len(page.objects) + len(page.prefixes))
                for stored in page.objects:
                    for record in store._object(stored, folder.item, rules):
                        yield from folder.add(record)
                for common in page.prefixes:
                    if common > last and common not in opened:
                        opened.add(common)
                        yield from store._prefix(common, folder.item, rules, handed)
        except store.failures() as err:
            yield from folder.held
            yield from handed
            yield _cannot(folder.item.url, bucket, folder.prefix, store.reason(err))
            lost = container_key(folder.item.url)
            continue
        yield from handed
        folder.children.update(container_key(h.url) for h in handed)
        yield from folder.done()


def _cannot(url: str, bucket: str, prefix: str, reason: str):
    return event("incomplete", url, "discover", f"cannot list {url.split('://', 1)[0]}://{bucket}/{prefix}: {reason}")


class OutOfOrder(ValueError):
    """A store listed a key before one it listed already: what the listing says about folders cannot be trusted."""


def _ahead(pages: Iterator, pool: ThreadPoolExecutor) -> Iterator:
    """``pages``, the next one asked for while this one is handled (a page waits on the store far longer than
    the listing spends on it). Closing it stops asking."""
    pages = iter(pages)
    coming = pool.submit(next, pages, None)
    try:
        while (page := coming.result()) is not None:
            coming = pool.submit(next, pages, None)
            yield page
    finally:
        coming.cancel()
