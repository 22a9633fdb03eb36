"""Timing benchmark (issue 26, item 5; issue 31, item 4): does the time of a search — keyword, semantic or
hybrid — show whether documents the searcher may not see hold its word or lie near its meaning?

Run from the repository root (beamtrawl installed; Java and Maven for the OpenSearch test node)::

    python bench/hidden_timing_bench.py [--public 20000] [--hidden 3000] [--searches 400] [--runs 5]
                                        [--modes keyword,semantic,hybrid] [--passages N]
                                        [--control] [--no-opensearch] [--url URL] [--tiny]

An index holds ``--public`` public documents (made-up words) and ``--hidden`` documents of the group
``hr`` that all hold the word "zanzibar"; no public document holds it, and no document at all holds
"zanzibaq". Every document has ``--passages`` passages with vectors of 256 values (the built-in model's
width): a hidden document's lie near a fixed unit vector (cosine about 0.9), Q_hidden, a public one's are
random, and a second unit vector, Q_none, orthogonal to Q_hidden, has no document near it. By default a
document gets enough passages that the public partition holds vector_lists.MIN_ROWS of them, so the embedded
index builds its vector lists and a search probes them (``--passages 1``: searched exactly).

An anonymous searcher (who may see the public ones only) searches the way the search page does
(``semantic.search_page`` with a model that embeds "zanzibar" as Q_hidden and "zanzibaq" as Q_none: hits,
total, facets), in each of ``--modes``: for "zanzibar" and for "zanzibaq", alternating, ``--searches`` times per
run, after a warm-up. Each run gives the 10th percentile (p10) of both; ``--runs`` runs give their spread.
Printed per index and mode: both p10s per run, the difference of their medians, the run-to-run spread
(max - min of the p10s) of each, and the verdict: the difference must lie below the spread of either
(keyword, before issue 26: p10 1.05 ms against 0.65 ms on the embedded index). The baseline is the other query
in the same run. Checks: a keyword search finds nothing; a semantic or hybrid search shows no hidden document.
``--tiny`` (tests/test_hidden_timing.py runs it) uses 300 public and 100 hidden documents, 40 searches and 2
runs, embedded only; its documents get enough passages for the lists too.
``--control`` then deletes the hidden documents and measures again: what the two queries cost apart with nothing
hidden (the public documents the vectors reach, the lists or graph nodes they probe), to read a difference
against.
Exit code 0 when the figures were measured (targets may be missed), 1 when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from beamtrawl.transforms.index import EmbeddedIndex, semantic, vector_lists
from beamtrawl.transforms.index.query import asking
from beamtrawl.transforms.records import IndexDoc
from beamtrawl.transforms.urls import doc_id
from ranking_bench import word  # one made-up vocabulary for both benchmarks

HIDDEN_WORD, NOBODYS_WORD = "zanzibar", "zanzibaq"
MODES = (semantic.KEYWORD, semantic.SEMANTIC, semantic.HYBRID)
DIMENSIONS = 256
NOISE = 0.03  # per value, around Q_hidden: a cosine of about 1 / √(1 + 256 × NOISE²) ≈ 0.9


@functools.cache
def query_vectors(seed: int = 11) -> dict[str, np.ndarray]:
    """The vector the bench's model gives each word: Q_hidden for the hidden word, Q_none (orthogonal) for the other."""
    rng = np.random.default_rng(seed)
    hidden, none = rng.standard_normal((2, DIMENSIONS))
    hidden /= np.linalg.norm(hidden)
    none -= (none @ hidden) * hidden
    return {HIDDEN_WORD: hidden.astype(np.float32), NOBODYS_WORD: (none / np.linalg.norm(none)).astype(np.float32)}


def passage_vectors(count: int, rng: np.random.Generator, near=None) -> np.ndarray:
    """``count`` unit rows, float16: random, or within NOISE of ``near``."""
    rows = rng.standard_normal((count, DIMENSIONS)).astype(np.float32)
    if near is not None:
        rows = near + NOISE * rows
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float16)


def documents(public: int, hidden: int, passages: int, seed: int = 7) -> list[IndexDoc]:
    rng, vectors = random.Random(seed), np.random.default_rng(seed)
    vocabulary = [word(rank) for rank in range(5000)]
    near = query_vectors()[HIDDEN_WORD]
    docs = []
    for i in range(public + hidden):
        secret = i >= public
        text = rng.choices(vocabulary, k=rng.randint(20, 120)) + ([HIDDEN_WORD] if secret else [])
        content = " ".join(text)
        step = max(1, len(content) // passages)
        url = f"file:///bench/{'hr' if secret else 'public'}/doc-{i:07d}.txt"
        docs.append(IndexDoc(
            id=doc_id(url), url=url, root="file:///bench", title=" ".join(text[:3]), content=content,
            summary="", headlines="", metadata="", mimetype="text/plain", extension="txt",
            filename=f"doc-{i:07d}.txt", path=url.rsplit("/", 1)[0] + "/", size=len(text), mtime_ns=i,
            last_modified="2024-01-01T00:00:00+00:00", groups=["hr"] if secret else [], preparation_error="",
            content_hash=str(i), etag="", http_last_modified="", prep_fingerprint="bench", outlinks=[],
            indexed_at="2024-01-01T00:00:00+00:00",
            passages=[at for k in range(passages) for at in (min(k * step, len(content)), min((k + 1) * step, len(content)))],
            vectors=passage_vectors(passages, vectors, near if secret else None).tobytes()))
    return docs


def embed(texts: list[str]) -> list[np.ndarray]:
    """The bench's model: the fixed vector of each word (semantic.search_page embeds the query's words)."""
    return [query_vectors()[text] for text in texts]


def p10_ms(target, text: str, mode: str, count: int) -> float:
    query = asking(text, mode=mode)
    times = []
    for _ in range(count):
        started = time.perf_counter()
        page = semantic.search_page(target, query, embed, 20, offset=0, order="relevance", facet_size=10)
        times.append((time.perf_counter() - started) * 1000)
        if mode == semantic.KEYWORD and page.total:
            raise SystemExit(f"check failed: an anonymous keyword search for {text!r} found {page.total} documents")
        if any("/hr/" in url for hit in page.hits for url in (hit.url, *hit.locations)):
            raise SystemExit(f"check failed: an anonymous {mode} search for {text!r} showed a hidden document")
        if mode != semantic.KEYWORD and not page.hits:
            raise SystemExit(f"check failed: an anonymous {mode} search for {text!r} found no public document")
    return statistics.quantiles(times, n=10)[0]


def measure(name: str, target, mode: str, args, hidden_documents: int) -> str:
    for text in (HIDDEN_WORD, NOBODYS_WORD):  # warm-up
        p10_ms(target, text, mode, max(args.searches // 4, 5))
    hidden, nobody = [], []
    for _ in range(args.runs):
        for _block in range(4):  # alternating blocks: a change of load hits both alike
            hidden.append(p10_ms(target, HIDDEN_WORD, mode, args.searches // 4))
            nobody.append(p10_ms(target, NOBODYS_WORD, mode, args.searches // 4))
    per_run = lambda values: [statistics.median(values[r * 4:(r + 1) * 4]) for r in range(args.runs)]
    hidden, nobody = per_run(hidden), per_run(nobody)
    difference = statistics.median(hidden) - statistics.median(nobody)
    spreads = (max(hidden) - min(hidden), max(nobody) - min(nobody))
    met = abs(difference) < min(spreads)
    held = "held by" if mode == semantic.KEYWORD else "near"
    return (f"{name}, {mode}: p10 of an anonymous search, ms per run — {HIDDEN_WORD!r} ({held} {hidden_documents} hidden "
            f"documents): {', '.join(f'{v:.3f}' for v in hidden)}; {NOBODYS_WORD!r} ({held} none): "
            f"{', '.join(f'{v:.3f}' for v in nobody)}; difference of medians {difference:+.3f} ms "
            f"(ratio {statistics.median(hidden) / statistics.median(nobody):.2f}); run-to-run spread "
            f"{spreads[0]:.3f} and {spreads[1]:.3f} ms; target (difference below either spread): "
            f"{'met' if met else 'MISSED'}")


def written(target, docs: list[IndexDoc], what: str) -> None:
    for start in range(0, len(docs), 500):
        if target.upsert(docs[start:start + 500]):
            raise SystemExit(f"check failed: {what} refused documents")
    target.finish(succeeded=True)  # the embedded index builds its vector lists here


def hidden_deleted(target, docs: list[IndexDoc]) -> None:
    """``--control``: the hidden documents gone (the public partition, its lists and its graph untouched)."""
    hidden = [doc.id for doc in docs if doc.groups]
    for start in range(0, len(hidden), 500):
        target.delete(hidden[start:start + 500])
    target.finish(succeeded=True)


def embedded(args, work: Path, docs: list[IndexDoc]) -> None:
    index = EmbeddedIndex(str(work / "index.sqlite"))
    index.prepare()
    written(index, docs, "the embedded index")
    index.close()
    reader = EmbeddedIndex(str(work / "index.sqlite"))
    try:
        lists = dict(reader._reader().execute(
            "SELECT p.groups, count(*) FROM vector_list_rows AS r JOIN parts AS p ON p.n = r.part GROUP BY p.groups"))
        print(f"embedded: {args.public * args.passages:,} public and {args.hidden * args.passages:,} hidden "
              f"passages; vector lists (from {vector_lists.MIN_ROWS:,} passages a partition): public "
              f"{lists.get(json.dumps([]), 'none')}, hidden {lists.get(json.dumps(['hr']), 'none')}", flush=True)
        for mode in args.modes:
            print(measure("embedded", reader, mode, args, args.hidden), flush=True)
        if args.control:
            writer = EmbeddedIndex(str(work / "index.sqlite"))
            hidden_deleted(writer, docs)
            writer.close()
            for mode in args.modes:
                print(measure("embedded without the hidden documents", reader, mode, args, 0), flush=True)
    finally:
        reader.close()


def opensearch(args, work: Path, docs: list[IndexDoc]) -> None:
    from beamtrawl.transforms.index.opensearch import OpenSearchIndex

    with contextlib.ExitStack() as stack:
        url = args.url
        if url is None:
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ is not installed
            from tests.servers.opensearch import running_node

            (work / "node").mkdir()
            for folder in (work, work / "node"):
                folder.chmod(0o755)
            url = stack.enter_context(running_node(work / "node", heap="1g"))
        target = OpenSearchIndex(url, f"timing-bench-{int(time.time())}")
        target.prepare()
        if not target.knn and set(args.modes) - {semantic.KEYWORD}:
            raise SystemExit(f"check failed: the OpenSearch node at {url} has no k-NN plugin")
        target.snapshot_splits()
        started = time.perf_counter()
        written(target, docs, "OpenSearch")
        print(f"opensearch: {len(docs):,} documents written in {time.perf_counter() - started:.0f} s", flush=True)
        try:
            for mode in args.modes:
                print(measure("opensearch", target, mode, args, args.hidden), flush=True)
            if args.control:
                hidden_deleted(target, docs)
                for mode in args.modes:
                    print(measure("opensearch without the hidden documents", target, mode, args, 0), flush=True)
        finally:
            target.client.indices.delete(index=f"{target.physical}*")
            target.close()


def modes(value: str) -> list[str]:
    chosen = [mode.strip() for mode in value.split(",") if mode.strip()]
    if not chosen or set(chosen) - set(MODES):
        raise argparse.ArgumentTypeError(f"a comma-separated list of {', '.join(MODES)}, got {value!r}")
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--public", type=int, default=20_000)
    parser.add_argument("--hidden", type=int, default=3_000)
    parser.add_argument("--searches", type=int, default=400)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--modes", type=modes, default=list(MODES), help="default: keyword,semantic,hybrid")
    parser.add_argument("--passages", type=int, help="per document (default: enough for the public partition's "
                        "vector lists)")
    parser.add_argument("--control", action="store_true", help="measure again with the hidden documents deleted")
    parser.add_argument("--no-opensearch", action="store_true")
    parser.add_argument("--url", help="an OpenSearch node to use instead of starting one")
    parser.add_argument("--tiny", action="store_true", help="a small index, embedded only (the test suite)")
    args = parser.parse_args()
    if args.tiny:
        args.public, args.hidden, args.searches, args.runs, args.no_opensearch = 300, 100, 40, 2, True
    if args.passages is None:  # enough for the public partition's lists, where 200 a document reach them
        args.passages = min(200, max(1, math.ceil(vector_lists.MIN_ROWS / max(args.public, 1))))
    if min(args.public, args.hidden, args.searches // 8, args.runs) < 1 or not 1 <= args.passages <= 200:
        parser.error("--public, --hidden and --runs must be at least 1, --searches at least 8, --passages 1 to 200 "
                     "(embeddings.max_passages's default)")
    docs = documents(args.public, args.hidden, args.passages)
    work = Path(tempfile.mkdtemp(prefix="beamtrawl-timing-bench-"))
    try:
        embedded(args, work, docs)
        if not args.no_opensearch:
            opensearch(args, work, docs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
