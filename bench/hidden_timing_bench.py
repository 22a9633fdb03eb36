"""Timing benchmark (issue 26, item 5): does the time of a search show whether documents the searcher may
not see hold its word?

Run from the repository root (beamtrawl installed; Java and Maven for the OpenSearch test node)::

    python bench/hidden_timing_bench.py [--public 20000] [--hidden 3000] [--searches 400] [--runs 5]
                                        [--no-opensearch] [--url URL] [--tiny]

An index holds ``--public`` public documents (made-up words) and ``--hidden`` documents of the group
``hr`` that all hold the word "zanzibar"; no public document holds it, and no document at all holds
"zanzibaq". An anonymous searcher (who may see the public ones only) searches for each, the way the
search page does (``search_page``: hits, total, facets), alternating, ``--searches`` times per run,
after a warm-up. Each run gives the 10th percentile (p10) of both; ``--runs`` runs give their spread.
Printed per index: both p10s per run, the difference of their medians, the run-to-run spread
(max - min of the p10s) of each, and the verdict: the difference must lie below the spread of either
(before: p10 1.05 ms against 0.65 ms on the embedded index). The baseline is the other word in the same
run. Both must find nothing. ``--tiny`` (tests/test_hidden_timing.py runs it) uses 300 public and 100
hidden documents, 40 searches and 2 runs, embedded only.
Exit code 0 when the figures were measured (targets may be missed), 1 when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from beamtrawl.transforms.index import EmbeddedIndex
from beamtrawl.transforms.index.query import parse_query
from beamtrawl.transforms.records import IndexDoc
from beamtrawl.transforms.urls import doc_id
from ranking_bench import word  # one made-up vocabulary for both benchmarks

HIDDEN_WORD, NOBODYS_WORD = "zanzibar", "zanzibaq"


def documents(public: int, hidden: int, seed: int = 7) -> list[IndexDoc]:
    rng = random.Random(seed)
    vocabulary = [word(rank) for rank in range(5000)]
    docs = []
    for i in range(public + hidden):
        secret = i >= public
        text = rng.choices(vocabulary, k=rng.randint(20, 120)) + ([HIDDEN_WORD] if secret else [])
        url = f"file:///bench/{'hr' if secret else 'public'}/doc-{i:07d}.txt"
        docs.append(IndexDoc(
            id=doc_id(url), url=url, root="file:///bench", title=" ".join(text[:3]), content=" ".join(text),
            summary="", headlines="", metadata="", mimetype="text/plain", extension="txt",
            filename=f"doc-{i:07d}.txt", path=url.rsplit("/", 1)[0] + "/", size=len(text), mtime_ns=i,
            last_modified="2024-01-01T00:00:00+00:00", groups=["hr"] if secret else [], preparation_error="",
            content_hash=str(i), etag="", http_last_modified="", prep_fingerprint="bench", outlinks=[],
            indexed_at="2024-01-01T00:00:00+00:00"))
    return docs


def p10_ms(target, text: str, count: int) -> float:
    query = parse_query(text)
    times = []
    for _ in range(count):
        started = time.perf_counter()
        page = target.search_page(query, 20, 0, "relevance", 10)
        times.append((time.perf_counter() - started) * 1000)
        if page.total:
            raise SystemExit(f"check failed: an anonymous search for {text!r} found {page.total} documents")
    return statistics.quantiles(times, n=10)[0]


def measure(name: str, target, args) -> str:
    for text in (HIDDEN_WORD, NOBODYS_WORD):  # warm-up
        p10_ms(target, text, max(args.searches // 4, 5))
    hidden, nobody = [], []
    for _ in range(args.runs):
        for _block in range(4):  # alternating blocks: a change of load hits both alike
            hidden.append(p10_ms(target, HIDDEN_WORD, args.searches // 4))
            nobody.append(p10_ms(target, NOBODYS_WORD, args.searches // 4))
    per_run = lambda values: [statistics.median(values[r * 4:(r + 1) * 4]) for r in range(args.runs)]
    hidden, nobody = per_run(hidden), per_run(nobody)
    difference = statistics.median(hidden) - statistics.median(nobody)
    spreads = (max(hidden) - min(hidden), max(nobody) - min(nobody))
    met = abs(difference) < min(spreads)
    return (f"{name}: p10 of an anonymous search, ms per run — {HIDDEN_WORD!r} (held by {args.hidden} hidden "
            f"documents): {', '.join(f'{v:.3f}' for v in hidden)}; {NOBODYS_WORD!r} (held by none): "
            f"{', '.join(f'{v:.3f}' for v in nobody)}; difference of medians {difference:+.3f} ms "
            f"(ratio {statistics.median(hidden) / statistics.median(nobody):.2f}); run-to-run spread "
            f"{spreads[0]:.3f} and {spreads[1]:.3f} ms; target (difference below either spread): "
            f"{'met' if met else 'MISSED'}")


def embedded(args, work: Path, docs: list[IndexDoc]) -> str:
    index = EmbeddedIndex(str(work / "index.sqlite"))
    index.prepare()
    for start in range(0, len(docs), 1000):
        if index.upsert(docs[start:start + 1000]):
            raise SystemExit("check failed: the embedded index refused documents")
    index.close()
    reader = EmbeddedIndex(str(work / "index.sqlite"))
    try:
        return measure("embedded", reader, args)
    finally:
        reader.close()


def opensearch(args, work: Path, docs: list[IndexDoc]) -> str:
    from beamtrawl.transforms.index.opensearch import OpenSearchIndex

    with contextlib.ExitStack() as stack:
        url = args.url
        if url is None:
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ is not installed
            from tests.servers.opensearch import running_node

            (work / "node").mkdir()
            for folder in (work, work / "node"):
                folder.chmod(0o755)
            url = stack.enter_context(running_node(work / "node"))
        target = OpenSearchIndex(url, f"timing-bench-{int(time.time())}")
        target.prepare()
        target.snapshot_splits()
        for start in range(0, len(docs), 1000):
            if target.upsert(docs[start:start + 1000]):
                raise SystemExit("check failed: OpenSearch refused documents")
        target.finish(succeeded=True)
        try:
            return measure("opensearch", target, args)
        finally:
            target.client.indices.delete(index=f"{target.physical}*")
            target.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--public", type=int, default=20_000)
    parser.add_argument("--hidden", type=int, default=3_000)
    parser.add_argument("--searches", type=int, default=400)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-opensearch", action="store_true")
    parser.add_argument("--url", help="an OpenSearch node to use instead of starting one")
    parser.add_argument("--tiny", action="store_true", help="a small index, embedded only (the test suite)")
    args = parser.parse_args()
    if args.tiny:
        args.public, args.hidden, args.searches, args.runs, args.no_opensearch = 300, 100, 40, 2, True
    docs = documents(args.public, args.hidden)
    work = Path(tempfile.mkdtemp(prefix="beamtrawl-timing-bench-"))
    try:
        print(embedded(args, work, docs))
        if not args.no_opensearch:
            print(opensearch(args, work, docs))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
