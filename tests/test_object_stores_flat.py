"""A bucket listed flat (transforms/sources/flat_listing.py) against moto's S3 server on loopback, step by step
without a pipeline: the same entries, report lines and delete decisions as the per-prefix walk on a bucket of odd
keys under whitelist, blacklist and max_depth, at every budget; and where a page fails (a 503 storm, a 403, a
bucket deleted mid-crawl, a store listing out of order) or the bucket changes between pages, every folder in the
range not read keeps its documents. Delete decisions are transforms/listings.py's own, fed the records."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from tests.servers.refusing import Rule, refusing
from tests.test_object_stores import new_bucket

KEYS = ["a", "a/", "a/b.txt", "a/c/d.txt", "a/c-e.txt", "a/c0.txt", "a/c/", "b/x y ü😀~!@$&'()*+,;=:%[]{}<>^`|\"#?.txt",
        "b//odd.txt", "b/./dot.txt", "deep/1/2/3/4.txt", "deep/1/2.txt", "skip/me.txt", "skip/more/me.txt",
        "top.txt", "z/last.txt"]
#: Documents an earlier crawl indexed that are gone now, in every kind of folder (the delete decisions' input).
GONE = ["a/gone.txt", "a/c/gone.txt", "a/c/new/gone.txt", "deep/1/2/3/gone.txt", "skip/gone.txt", "gone.txt",
        "zz/gone.txt", "b/gone.txt"]


@pytest.fixture
def bucket(s3_server, monkeypatch):
    return new_bucket(s3_server, monkeypatch, {key: key for key in KEYS})


def _source(endpoint: str, walk: bool = False, **settings):
    """The S3 source and the accept rules of a crawl of the bucket (``walk``: the per-prefix walk instead)."""
    from beamtrawl.pipeline.config import parse_config
    from beamtrawl.transforms.accept import Rules
    from beamtrawl.transforms.sources.object_store import ObjectStore
    from beamtrawl.transforms.sources.s3 import S3Source
    from beamtrawl.transforms.sources.settings import SourceSettings

    start = settings.pop("start")
    config = parse_config({"start": [{"url": start, "parse": True, "index": False}], "index": {"path": "/tmp/x.sqlite"},
                           "s3": {"endpoint_url": endpoint, "max_attempts": 2, **settings.pop("s3", {})}, **settings},
                          "/tmp/flat.yaml")
    kind = type("Walked", (S3Source,), {"pages_after": ObjectStore.pages_after, "pages": lambda self, *where: (
        S3Source.pages_after(self, *where, "", delimited=True))}) if walk else S3Source
    return kind(SourceSettings.from_config(config)), Rules(config), start


def _crawl(source, rules, start: str, budget: int | None, between=None) -> list:
    """Every record of a discovery of ``start`` in rounds (the last without a budget), as _ExpandItem makes them;
    ``between(n)`` runs before round n > 0."""
    from beamtrawl.transforms.records import FrontierItem
    from beamtrawl.transforms.sources.walk import item_evidence

    frontier, records = [FrontierItem(start, start, 0, start, [], "", "")], []
    for n in range(4):
        if n and between:
            between(n)
        found = []
        for item in frontier:
            found += list(item_evidence(item.url, source.expand(item, rules, False, None if n == 3 else budget)))
        records += found
        frontier = [r for r in found if r.route == "frontier"]
    assert not frontier
    return records


def _deleted(records, start: str, urls: list[str]) -> set[str]:
    """Which of ``urls`` (indexed, not found now) transforms/listings.py deletes, given the discovery's records."""
    from beamtrawl.transforms.listings import _container, _Decide, _verdict
    from beamtrawl.transforms.records import SnapshotEntry, arrival
    from beamtrawl.transforms.urls import container_key

    by_listing = defaultdict(list)
    for record in records:
        if record.route == "listings":
            by_listing[record.listing].append(record)
        elif record.route == "entries":
            by_listing[record.listing].append(arrival(record.listing))
    by_container = defaultdict(list)
    for keyed in by_listing.items():
        for out in _verdict(keyed):
            if isinstance(out, tuple):
                by_container[out[0]].append(out[1])
    verdicts = dict(_container(keyed) for keyed in by_container.items())
    decide = _Decide(frozenset({container_key(start)}))
    decide.setup()
    gone = set()
    for url in urls:
        old = SnapshotEntry(url, url, 0, 0, "", "", "", "")
        if any(isinstance(out, SnapshotEntry) for out in decide._decide(old, verdicts)):
            gone.add(url)
    return gone


def _summary(records, start: str, gone: list[str]):
    entries = sorted(r.url for r in records if r.route == "entries")
    lines = Counter((r.kind, r.url) for r in records if r.route == "events" and r.kind != "listed")
    return entries, lines, _deleted(records, start, gone)


def _urls(name: str, keys) -> list[str]:
    from beamtrawl.transforms.sources.object_store import object_url

    return [object_url("s3", name, key) for key in keys]


@pytest.mark.parametrize("settings", [
    {},
    {"whitelist": [{"regex": r"^s3://[^/]+/($|a|deep/|b/)"}], "blacklist": [{"prefix": "s3://BUCKET/a/c/"}]},
    {"max_depth": 2},
], ids=["all", "whitelist-blacklist", "max-depth"])
def test_a_flat_listing_finds_and_deletes_what_the_walk_does(bucket, s3_server, settings):
    name, _client = bucket
    settings = {k: [{**e, **({"prefix": e["prefix"].replace("BUCKET", name)} if "prefix" in e else {})} for e in v]
                if isinstance(v, list) else v for k, v in settings.items()}
    start = f"s3://{name}/"
    walked = _summary(_crawl(*_source(s3_server.endpoint, walk=True, start=start, **settings)[:2], start, None),
                      start, _urls(name, GONE))
    assert walked[0] and walked[2]  # something found, something deleted
    for budget, page_size in [(None, 1000), (1, 1), (3, 2), (7, 3)]:
        source, rules, _ = _source(s3_server.endpoint, start=start, s3={"page_size": page_size}, **settings)
        records = _crawl(source, rules, start, budget)
        assert _summary(records, start, _urls(name, GONE)) == walked, (budget, page_size)
        listings = [r for r in records if r.route == "listings"]
        counted = Counter(r.listing for r in records if r.route == "entries")
        assert all(counted[r.listing] == r.documents for r in listings)  # the evidence counts every entry
        assert _each_folder_in_one_run(records)


def _each_folder_in_one_run(records) -> bool:
    """Does each folder's evidence follow a run of exactly its entries (what transforms/compare.py needs to
    compare the folder where it is listed)?"""
    run = []
    for record in records:
        if record.route == "entries":
            run.append(record)
        elif record.route == "listings":
            if run and (len(run) != record.documents or {e.listing for e in run} != {record.listing}):
                return False
            run = []
    return True


def test_a_flat_listing_asks_as_many_requests_as_a_plain_listing(bucket, s3_server):
    name, _client = bucket
    start = f"s3://{name}/"
    before = len(s3_server.log.read_text(errors="replace").splitlines())
    _crawl(*_source(s3_server.endpoint, start=start, s3={"page_size": 4})[:2], start, None)
    asked = [line for line in s3_server.log.read_text(errors="replace").splitlines()[before:] if f"GET /{name}" in line]
    assert len(asked) == -(-len(KEYS) // 4), asked  # ceil(16 / 4) pages, as list_objects_v2 pages the bucket


def test_a_directory_bucket_is_walked_prefix_by_prefix(s3_server):
    """S3 Express directory buckets list out of key order and take no StartAfter: walked, not listed flat."""
    source, _rules, _start = _source(s3_server.endpoint, start="s3://docs/")
    assert source.lists_flat("docs") and not source.lists_flat("docs--use1-az4--x-s3")


def _failing(s3_server, name: str, rule: Rule, page_size: int, budget: int | None):
    start = f"s3://{name}/"
    with refusing(s3_server.endpoint, "s3", rule) as proxy:
        source, rules, _ = _source(f"http://127.0.0.1:{proxy.server_port}", start=start, s3={"page_size": page_size})
        records = _crawl(source, rules, start, budget)
    _entries, _lines, deleted = _summary(records, start, _urls(name, GONE))
    return [r for r in records if r.route == "events" and r.kind == "incomplete"], deleted


def test_a_503_storm_mid_listing_keeps_every_folder_not_read_whole(bucket, s3_server):
    name, _client = bucket
    failed, deleted = _failing(s3_server, name, Rule("continuation-token", 503), 8, None)  # from the second page on
    assert [r.url for r in failed] == [f"s3://{name}/"] and "SlowDown (HTTP 503)" in failed[0].reason
    # the first page ends in b/: a/ and what is below it were read whole, so their gone documents go
    assert set(_urls(name, ["a/gone.txt", "a/c/gone.txt", "a/c/new/gone.txt"])) <= deleted
    assert not deleted & set(_urls(name, ["deep/1/2/3/gone.txt", "skip/gone.txt", "gone.txt", "zz/gone.txt",
                                          "b/gone.txt"]))  # the rest was not


def test_a_403_on_a_folder_listed_on_past_the_budget_keeps_that_folder_only(bucket, s3_server):
    name, _client = bucket
    failed, deleted = _failing(s3_server, name, Rule("prefix=a/", 403), 3, 3)  # the first page ends in a/
    assert [r.url for r in failed] == [f"s3://{name}/a"] and "AccessDenied (HTTP 403)" in failed[0].reason
    assert not deleted & set(_urls(name, ["a/gone.txt", "a/c/gone.txt", "a/c/new/gone.txt"]))
    assert set(_urls(name, ["deep/1/2/3/gone.txt", "gone.txt", "zz/gone.txt", "b/gone.txt"])) <= deleted


def test_a_bucket_deleted_between_rounds_keeps_what_was_not_listed(bucket, s3_server):
    name, client = bucket

    def delete_bucket(n):
        if n == 1:
            for key in KEYS:
                client.delete_object(Bucket=name, Key=key)
            client.delete_bucket(Bucket=name)

    start = f"s3://{name}/"
    source, rules, _ = _source(s3_server.endpoint, start=start, s3={"page_size": 2})
    records = _crawl(source, rules, start, 2, between=delete_bucket)
    _entries, lines, deleted = _summary(records, start, _urls(name, GONE))
    assert {kind for kind, _url in lines} >= {"incomplete"}
    assert all("NoSuchBucket" in r.reason for r in records if r.route == "events" and r.kind == "incomplete")
    assert _urls(name, ["a/gone.txt"])[0] in deleted  # listed whole in round 0
    assert not deleted & set(_urls(name, ["deep/1/2/3/gone.txt", "skip/gone.txt"]))  # handed on, never listed


def test_objects_added_and_deleted_between_pages_delete_nothing_present(bucket, s3_server):
    name, client = bucket
    from beamtrawl.transforms.sources.s3 import S3Source

    class Changing(S3Source):  # the bucket changes after the first page was read, before the second is asked for
        def pages_after(self, *args, **kwargs):
            for n, page in enumerate(super().pages_after(*args, **kwargs)):
                if n == 0:
                    client.put_object(Bucket=name, Key="a/b0.txt", Body=b"added before the last key read")
                    client.put_object(Bucket=name, Key="top2.txt", Body=b"added after it")
                    client.delete_object(Bucket=name, Key="deep/1/2.txt")
                yield page

    start = f"s3://{name}/"
    plain, rules, _ = _source(s3_server.endpoint, start=start, s3={"page_size": 4})
    source = Changing(plain.settings)
    entries, lines, deleted = _summary(_crawl(source, rules, start, None), start, _urls(name, GONE + ["deep/1/2.txt"]))
    assert _urls(name, ["top2.txt"])[0] in entries  # written after the last key read: found
    assert _urls(name, ["a/b0.txt"])[0] not in entries  # written behind it: found by the next crawl
    assert _urls(name, ["deep/1/2.txt"])[0] in deleted  # deleted before it was reached: gone
    assert not [line for line in lines if line[0] == "incomplete"]


def test_a_store_listing_out_of_order_is_one_line_and_deletes_nothing(bucket, s3_server):
    name, _client = bucket
    from beamtrawl.transforms.sources.object_store import Page
    from beamtrawl.transforms.sources.s3 import S3Source

    class Unordered(S3Source):
        def pages_after(self, *args, **kwargs):
            for page in super().pages_after(*args, **kwargs):
                yield Page(list(reversed(page.objects)), page.prefixes)

    start = f"s3://{name}/"
    plain, rules, _ = _source(s3_server.endpoint, start=start)
    _entries, lines, deleted = _summary(_crawl(Unordered(plain.settings), rules, start, None), start,
                                        _urls(name, GONE))
    assert [url for kind, url in lines if kind == "incomplete"] == [start] and not deleted
