"""Ranking benchmark: what it costs that scores depend only on the documents a searcher may see.

Run from the repository root (beamtrawl installed; Java and Maven for the OpenSearch test node)::

    python bench/ranking_bench.py [--docs 100000] [--repeat 7] [--seed 7] [--no-opensearch] [--no-embedded] [--url URL]
    python bench/ranking_bench.py --tiny [--url URL]   # 300 documents, one run: what the suite runs

It writes N generated documents (Zipf-distributed words from a 20,000-word vocabulary, 20-200 words
each; 60 % public, the rest in 30 group sets of one to three of 12 groups) into an embedded index and,
unless ``--no-opensearch``, into an OpenSearch index (a test node is started without ``--url``).
Writing is not timed. Then, for three searchers (public; one group; three groups) and six queries (a
frequent, a middle and a rare word, two words, a phrase, a prefix) it times ``search(query, 10)``:

* **closed** — the target's search: on the embedded index FTS5's bm25 recomputed with the statistics
  of the visible partitions (``_visible_scores``); on OpenSearch the visible partitions found by an
  aggregation, then searched with ``dfs_query_then_fetch``.
* **leaking** (the baseline, as before the fix) — on the embedded index one statement ordered by
  FTS5's own ``bm25()`` (statistics of each partition's table, not rescored); on OpenSearch the same query through the
  alias, all partitions, plain ``query_then_fetch`` (per-index statistics).

Each figure is the median of ``--repeat`` runs after one warm-up; the ratio is closed/leaking. Checks:
on the embedded index both return the same hits and scores for the public searcher (who sees exactly one
partition, whose own statistics are then the visible ones)
(on OpenSearch they differ there: the baseline ranks each partition with its own statistics), and the
closed search never returns a document the searcher may not see. Exit code 0 when the figures were measured, 1 when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from beamtrawl.transforms.index import sqlite_parts as parts
from beamtrawl.transforms.index.query import parse_query
from beamtrawl.transforms.index.sqlite import _WEIGHTS, EmbeddedIndex, _fts_match, _visible
from beamtrawl.transforms.records import IndexDoc
from beamtrawl.transforms.urls import doc_id
from crawl_bench import print_table

VOCABULARY = 20_000
GROUPS = [f"team{n:02d}" for n in range(12)]
SEARCHERS = {"public": (), "one group": ("team03",), "three groups": ("team01", "team05", "team09")}
EVERYONE = tuple(GROUPS)


def fail(message: str) -> None:
    print(f"\nFAILED: {message}", file=sys.stderr)
    sys.exit(1)


def word(rank: int) -> str:
    """A pronounceable made-up word for a vocabulary rank (no stemming collapses two of them)."""
    consonants, vowels = "bdfgklmnprstvz", "aeiou"
    letters, n = [], rank + 1
    while n:
        n, c = divmod(n, len(consonants))
        n, v = divmod(n, len(vowels))
        letters.append(consonants[c] + vowels[v])
    return "".join(letters) + "x"


def generate(count: int, seed: int) -> list[IndexDoc]:
    rng = random.Random(seed)
    cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(VOCABULARY)))
    words = [word(rank) for rank in range(VOCABULARY)]
    group_sets = [sorted(rng.sample(GROUPS, rng.randint(1, 3))) for _ in range(30)]
    docs = []
    for i in range(count):
        text = rng.choices(words, cum_weights=cumulative, k=rng.randint(20, 200))
        groups = [] if rng.random() < 0.6 else group_sets[rng.randrange(len(group_sets))]
        url = f"file:///bench/folder-{i // 1000:03d}/doc-{i:07d}.txt"
        docs.append(IndexDoc(
            id=doc_id(url), url=url, root="file:///bench/", title=" ".join(text[:4]), content=" ".join(text),
            summary="", headlines="", metadata="", mimetype="text/plain", extension="txt",
            filename=f"doc-{i:07d}.txt", path=url.rsplit("/", 1)[0] + "/", size=len(text), mtime_ns=i,
            last_modified="2024-01-01T00:00:00+00:00", groups=groups, preparation_error="", content_hash=str(i),
            etag="", http_last_modified="", prep_fingerprint="bench", outlinks=[],
            indexed_at="2024-01-01T00:00:00+00:00"))
    return docs


QUERIES = {
    "frequent word": word(2), "middle word": word(300), "rare word": word(9000),
    "two words": f"{word(5)} {word(40)}", "phrase": f'"{word(0)} {word(1)}"', "prefix": word(60)[:4] + "*",
}


def leaking_embedded(index: EmbeddedIndex, query, limit: int = 10) -> list[tuple[str, float]]:
    """The search without rescoring: FTS5's own bm25() over each visible partition's table, each with that
    table's statistics, so scores of different partitions are not on one scale."""
    db = index._reader()
    visible, params = _visible(query.groups)
    shown = parts.visible_parts(db, visible, params)
    match = _fts_match(query.clauses)

    def arm(part: int) -> tuple[str, list]:
        table = parts.fts(part)
        sql = (f"SELECT docs.url, -bm25({table}, {_WEIGHTS}) AS score FROM {table} JOIN docs "
               f"ON docs.rid = {table}.rowid WHERE {table} MATCH ? AND {visible}")
        return sql, [match, *params]

    sql, values = parts.each(shown, arm)
    if not sql:
        return []
    rows = db.execute(f"SELECT * FROM ({sql}) ORDER BY score DESC, url LIMIT ?", [*values, limit])
    return [(url, round(score, 4)) for url, score in rows]


def leaking_opensearch(target, query, limit: int = 10) -> list[tuple[str, float]]:
    """The search as it was: through the alias, every partition, per-index statistics."""
    from beamtrawl.transforms.index.opensearch import _bool_query

    body = {"size": limit, "query": _bool_query(query),
            "_source": ["url", "title", "filename", "mimetype", "size", "last_modified", "summary", "aux_stored"],
            "highlight": {"fields": {"content": {}, "title": {}, "headlines": {}}, "fragment_size": 160,
                          "number_of_fragments": 1},
            "sort": ["_score", {"url": "asc"}], "track_scores": True}
    hits = target.client.search(index=target.name, body=body)["hits"]["hits"]
    return [(hit["_source"]["url"], round(hit["_score"], 4)) for hit in hits]


def closed(target, query, limit: int = 10) -> list[tuple[str, float]]:
    return [(hit.url, hit.score) for hit in target.search(query, limit)]


def _same(hits: list[tuple[str, float]], baseline: list[tuple[str, float]]) -> bool:
    """The same documents in the same order with the same scores (to a part in 10,000)."""
    return ([u for u, _ in hits] == [u for u, _ in baseline]
            and all(abs(a - b) <= 1e-4 * max(abs(a), abs(b), 1.0) for (_, a), (_, b) in zip(hits, baseline, strict=True)))


def median_ms(run, repeat: int) -> tuple[float, list]:
    result = run()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000, result


def measure(name: str, target, leaking, docs: list[IndexDoc], repeat: int) -> list[tuple[str, ...]]:
    groups_of = {doc.url: set(doc.groups) for doc in docs}
    print(f"\n{name}: median ms of search(query, 10) over {repeat} runs")
    print(f"  {'searcher':13} {'query':14} {'closed':>9} {'leaking':>9} {'ratio':>6}")
    totals = [0.0, 0.0]
    for searcher, groups in {**SEARCHERS, "every group": EVERYONE}.items():
        for label, text in QUERIES.items():
            query = parse_query(text, groups=groups)
            closed_ms, hits = median_ms(lambda q=query: closed(target, q), repeat)
            leaking_ms, baseline = median_ms(lambda q=query: leaking(target, q), repeat)
            for url, _ in hits:
                if groups_of[url] and not groups_of[url] & set(groups):
                    fail(f"{name}: {searcher} found {url}, which it may not see")
            if not groups and name == "embedded" and not _same(hits, baseline):
                # a public searcher sees one partition exactly: its own bm25() statistics are the visible ones
                fail(f"{name}: {label}: scores differ where the searcher sees one whole partition: "
                     f"{hits[:3]} {baseline[:3]}")
            if groups != EVERYONE:
                totals[0] += closed_ms
                totals[1] += leaking_ms
            print(f"  {searcher:13} {label:14} {closed_ms:9.2f} {leaking_ms:9.2f} {closed_ms / leaking_ms:6.2f}")
    ratio = totals[0] / totals[1]
    print(f"  all searches of the three searchers: closed {totals[0]:.1f} ms, leaking {totals[1]:.1f} ms, "
          f"ratio {ratio:.2f}")
    return [(f"{name}: mean search, closed", f"{totals[0] / 18:.2f} ms", "", ""),
            (f"{name}: mean search, leaking", f"{totals[1] / 18:.2f} ms", "", ""),
            (f"{name}: closed / leaking", f"{ratio:.2f}", "", "")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-opensearch", action="store_true")
    parser.add_argument("--no-embedded", action="store_true")
    parser.add_argument("--url", help="an OpenSearch node to use instead of starting one")
    parser.add_argument("--tiny", action="store_true",
                        help="300 documents, one run each: checks that the benchmark works (the suite runs it)")
    args = parser.parse_args()
    if args.tiny:
        args.docs, args.repeat = 300, 1

    started = time.perf_counter()
    docs = generate(args.docs, args.seed)
    print(f"generated {len(docs):,} documents in {time.perf_counter() - started:.1f} s "
          f"({sum(not d.groups for d in docs):,} public); writing is not timed")
    rows = []
    work = Path(tempfile.mkdtemp(prefix="beamtrawl-ranking-bench-"))
    try:
        if not args.no_embedded:
            rows += embedded(args, work, docs)
        if not args.no_opensearch:
            rows += opensearch(args, work, docs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(rows)
    return 0


def embedded(args, work: Path, docs: list[IndexDoc]) -> list[tuple[str, ...]]:
    index = EmbeddedIndex(str(work / "index.sqlite"))
    index.prepare()
    started = time.perf_counter()
    for start in range(0, len(docs), 500):
        if index.upsert(docs[start:start + 500]):
            fail("the embedded index refused documents")
    print(f"embedded index written in {time.perf_counter() - started:.1f} s")
    rows = measure("embedded", index, leaking_embedded, docs, args.repeat)
    index.close()
    return rows


def opensearch(args, work: Path, docs: list[IndexDoc]) -> list[tuple[str, ...]]:
    from beamtrawl.transforms.index.opensearch import OpenSearchIndex

    with contextlib.ExitStack() as stack:
        url = args.url
        if url is None:
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ is not installed
            from tests.servers.opensearch import running_node

            (work / "node").mkdir()
            (work / "node").chmod(0o755)
            work.chmod(0o755)
            url = stack.enter_context(running_node(work / "node"))
        target = OpenSearchIndex(url, f"ranking-bench-{int(time.time())}")
        target.prepare()
        started = time.perf_counter()
        target.snapshot_splits()
        for start in range(0, len(docs), 500):
            if target.upsert(docs[start:start + 500]):
                fail("OpenSearch refused documents")
        target.finish(succeeded=True)
        target.client.indices.forcemerge(index=target.name, max_num_segments=1)
        print(f"OpenSearch index written in {time.perf_counter() - started:.1f} s "
              f"({len(target.client.indices.get_alias(name=target.name))} partition indices)")
        rows = measure("opensearch", target, leaking_opensearch, docs, args.repeat)
        target.client.indices.delete(index=",".join(target.client.indices.get_alias(name=target.name)))
        target.close()
        return rows


if __name__ == "__main__":
    sys.exit(main())
