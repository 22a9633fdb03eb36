"""Semantic search benchmark (issue 31): answer quality of keyword, semantic and hybrid search on questions
nobody here wrote the answers to, the cost of embedding in the crawl, and query latency per mode.

Run from the repository root (beamtrawl installed, tests/package_files.py fetched: Debian's python3.X-doc)::

    python bench/semantic_bench.py [--repeat 5] [--copies 1]
    python bench/semantic_bench.py --tiny      # a few pages and questions: what the suite runs
    python bench/semantic_bench.py --scale 100000  # at N documents: latency, vector lists' recall and MRR
    python bench/semantic_bench.py --scale 100000 --questions 20 --index /tmp/scale.sqlite  # kept for a rerun
    python bench/semantic_bench.py --target opensearch --url http://127.0.0.1:9200 [--scale N [--keep]]  # there
    python bench/semantic_bench.py --target delta   # the same on a Delta table (by meaning only; no --scale)

The corpus is Python's library reference as Debian ships it (about 320 Sphinx pages), prepared by the HTML
preparator and embedded by the crawl's own embedding stage (``transforms/embed/stage.py``'s DoFn) into an
embedded index; ``--copies N`` writes every page N times more under other URLs (each a document of its own, an
index N+1 times larger; their copies are one hit, so quality does not change). The questions
(bench/semantic_questions.yaml) are natural-language questions, each answered by one page.

Prints:

* **MRR@10** of each mode on the questions, and on keyword-like queries (module names): the reciprocal rank
  of the answer page among the first ten hits (0 when it is not there), averaged. ``auto`` is what a search
  without ``--mode`` runs: hybrid for questions, keyword for names. Targets: hybrid >= 0.75 on questions;
  auto on names no worse than keyword.
* **embedding throughput**: documents per second through the embedding stage against the model called in a
  plain loop on the same passages (the baseline, same run); target >= 0.9.
* **query p50** per mode (median over the questions of the median of ``--repeat`` runs), and hybrid/keyword.
* the index's size per document with vectors and without.

``--scale N`` measures at a size the real corpus does not reach: the pages and the hidden copies, and N − pages
documents made of the pages' passages (10 each, drawn at random, each vector moved by noise to a cosine of about
0.9 with its passage's: :func:`variants`). It prints the time the crawl's end takes to build the vector lists,
each mode's p50 and p95 on the real questions with a warm reader (``serve``: what it read stays in memory) and
the p50 with a cold one (a reader opened for the query, as ``search`` opens one), hybrid/keyword, the recall@10
of the lists' semantic hits against the exact scan's (target >= 0.95) and MRR@10 with the lists and exact.

``--target opensearch --url URL`` measures the same on an OpenSearch node with the k-NN plugin
(tests/servers/opensearch.py runs one), in aliases named ``semantic-bench-*`` it removes afterwards: the index
size per document is the store of the primaries after a force merge to one segment; it also prints the seconds
per document of writing the pages with vectors and without (what embeddings add to a crawl's index writes; the
embedding itself is the stage's figure above). ``--scale N`` there is latency alone, warm, on N generated documents (100 words of a 5,000-word vocabulary,
``--passages`` random unit vectors each, 10 by default), p50 and p95 over 20 queries (two words, a random vector) per
mode; they are written by the target's ``upsert`` (its mapping and documents), two requests at a time of up to
40 MiB, with refresh off and no replicas until written (each index's settings restored after), and what a write
could not take (429, time-outs) is sent again after a pause. ``--keep`` keeps the alias and reuses it when it holds
N documents, so the queries can be run again; a node for 100,000 documents wants a larger heap than the tests'::

    python tests/servers/opensearch.py run --workdir /tmp/bench-node --heap 4g
    python bench/semantic_bench.py --target opensearch --url URL --scale 100000 --passages 1 --repeat 3 --keep

Exit code 0 when the figures were measured, 1 when a check fails (a hit the searcher may not see, no vectors).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from beamtrawl.transforms.embed import WordLlamaSettings, load_model
from beamtrawl.transforms.embed.passages import passages
from beamtrawl.transforms.embed.stage import BATCH, _Embed, encode
from beamtrawl.transforms.index import EmbeddedIndex, semantic, vector_lists
from beamtrawl.transforms.index.query import asking
from beamtrawl.transforms.preparators import Prepared
from beamtrawl.transforms.preparators.html import prepare_html
from beamtrawl.transforms.prepare import PrepareOptions, make_document
from beamtrawl.transforms.records import Entry, IndexDoc, RawDocument
from beamtrawl.transforms.urls import doc_id

_SET = yaml.safe_load((Path(__file__).resolve().parent / "semantic_questions.yaml").read_text(encoding="utf-8"))
QUESTIONS: dict[str, str] = _SET["questions"]
#: Keyword-like queries (a module's name) and their page: ranked by keywords, they must not get worse.
NAMES = {name: f"{name}.html" for name in _SET["names"]}

MODES = (semantic.KEYWORD, semantic.SEMANTIC, semantic.HYBRID, semantic.AUTO)


def documents(folder: Path, names: list[str], copies: int) -> list[IndexDoc]:
    """The pages prepared as a crawl prepares them (HTML preparator, make_document), ``copies`` more of each."""
    docs = []
    for name in names:
        data = (folder / name).read_bytes()
        for copy in range(copies + 1):
            url = f"file://{folder}/{name}" + (f"?copy={copy}" if copy else "")
            prepared: Prepared = prepare_html(data, url, "text/html", {})
            entry = Entry(doc_id(url), url, f"file://{folder}", 1, len(data), 0, "", None, "", [], "", "", "", "", [])
            docs.append(make_document(RawDocument(entry, "text/html", data, ""), prepared,
                                      PrepareOptions((), "bench", 2**26, 1000)))
    return docs


def embed_all(docs: list[IndexDoc], settings, rounds: int) -> tuple[list[IndexDoc], float, float, float, float]:
    """The documents through the embedding stage's DoFn, batch by batch; (embedded, then the best of ``rounds``
    of: stage seconds, seconds of the model alone in a plain loop over the same passages, and the CPU seconds of
    each). The two alternate, so a busy moment of a shared machine falls on both alike."""
    stage = _Embed(settings)
    stage.setup()
    batches = [docs[i:i + BATCH] for i in range(0, len(docs), BATCH)]
    texts = [[t for d in b for t in passages(d.title, d.headlines, d.content, settings.passage_words,
                                              settings.max_passages)[1]] for b in batches]
    model = stage.model
    model.embed(texts[0])  # warm-up for both
    timings = []
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        for batch in texts:
            model.embed(batch)
        loop = (time.perf_counter() - wall, time.process_time() - cpu)
        wall, cpu = time.perf_counter(), time.process_time()
        done = [out for batch in batches for out in stage._embed(batch) if isinstance(out, IndexDoc)]
        timings.append((time.perf_counter() - wall, loop[0], time.process_time() - cpu, loop[1]))
    return (done, *(min(t[i] for t in timings) for i in range(4)))


def reciprocal_rank(hits, answer: str) -> float:
    for rank, hit in enumerate(hits[:10], 1):
        if hit.url.split("?")[0].endswith("/" + answer):
            return 1.0 / rank
    return 0.0


def run_queries(target, queries: dict[str, str], embedder, repeat: int,
                modes=MODES) -> dict[str, tuple[float, list[float]]]:
    """mode → (MRR@10, per-query median seconds)."""
    found = {}
    for mode in modes:
        ranks, times = [], []
        for text, answer in queries.items():
            query = asking(text, mode=mode)
            spent = []
            for _ in range(repeat):
                started = time.perf_counter()
                page = semantic.search_page(target, query, embedder, 10) if not target.pages_unavailable() else \
                    SimpleNamespace(hits=semantic.unpaged_hits(target, query, embedder, 10))
                spent.append(time.perf_counter() - started)
                for hit in page.hits:
                    if "/hidden/" in hit.url:
                        sys.exit(f"FAILED: a public search found {hit.url}, a document of the group 'staff'")
            ranks.append(reciprocal_rank(page.hits, answer))
            times.append(statistics.median(spent))
        found[mode] = (statistics.mean(ranks), times)
    return found


def generated(n: int, passages: int = 10):
    """Batches of 1,000 generated documents (see the module's docstring) of ``passages`` vectors each."""
    import random

    import numpy as np

    rng, vocabulary = np.random.default_rng(7), [f"w{i}" for i in range(5000)]
    random.seed(7)
    for start in range(0, n, 1000):
        docs = []
        for k in range(start, min(n, start + 1000)):
            url = f"file:///srv/scale/{k}.txt"
            vectors = rng.standard_normal((passages, 256)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            docs.append(IndexDoc(doc_id(url), url, "file:///srv", "", " ".join(random.choices(vocabulary, k=100)),
                                 "", "", "", "text/plain", "txt", f"{k}.txt", "/srv/scale/", 1, 0, "2024-01-01", [],
                                 "", str(k), "", "", "", [], "", passages=[x for i in range(passages) for x in (i, i + 1)],
                                 vectors=encode(vectors))._replace(indexed_at="2024-01-01T00:00:00+00:00"))
        yield docs


def scale_queries(count: int) -> list[tuple[str, object]]:
    """``count`` queries of the generated documents: two words of their vocabulary, and a random unit vector."""
    import numpy as np

    rng = np.random.default_rng(11)
    queries = []
    for _ in range(count):
        vector = rng.standard_normal(256).astype(np.float32)
        queries.append((" ".join(f"w{i}" for i in rng.choice(5000, 2, replace=False)), vector / np.linalg.norm(vector)))
    return queries


def scale_opensearch(n: int, repeat: int, url: str, passages: int = 10, keep: bool = False, queries: int = 20) -> None:
    """Warm latency per mode at ``n`` generated documents in an OpenSearch alias, written with the target's own
    ``upsert`` (its mapping and documents) under :func:`bulk_loading`; ``keep``: the alias (one per ``n``: a run of
    another size leaves it be) is kept afterwards, and used as it is, whatever its passages, when it holds ``n``
    documents; ``queries`` per mode, each timed ``repeat`` times."""
    target = opensearch_target(url, f"scale-{n}", keep)
    try:
        target.client.indices.refresh(index=target.name)  # what a load stopped half-way wrote counts too
        if target.count() == n:
            print(f"{n:,} documents on OpenSearch (the alias --keep left, as it was)")
        else:
            if target.count():
                drop(target)
                target = opensearch_target(url, f"scale-{n}")
            started = time.perf_counter()
            with bulk_loading(target):
                load(target, generated(n, passages))
            target.client.indices.refresh(index=target.name)
            written = time.perf_counter() - started
            print(f"{n:,} documents, {n * passages:,} passages written in {written:,.0f} s "
                  f"({written / n * 1000:.1f} ms per document)")
        target.finish(succeeded=True)  # as a crawl ends: the point in time opensearch_target opened is released
        stats = target.client.indices.stats(index=target.name, metric="store,segments")["_all"]["primaries"]
        print(f"index: {stats['store']['size_in_bytes'] / n:,.0f} bytes per document in "
              f"{stats['segments']['count']} segments (not merged)")
        queries = scale_queries(queries)
        figures = {}
        for mode in (semantic.KEYWORD, semantic.SEMANTIC, semantic.HYBRID):
            semantic.search_page(target, asking(queries[0][0], mode=mode), lambda _: [queries[0][1]], 10, facet_size=1)
            spent = []
            for words, vector in queries:
                times = []
                for _ in range(repeat):
                    started = time.perf_counter()
                    semantic.search_page(target, asking(words, mode=mode), lambda _, v=vector: [v], 10, facet_size=1)
                    times.append(time.perf_counter() - started)
                spent.append(statistics.median(times))
            figures[mode] = spent
        print(f"query ms ({len(queries)} queries, median of {repeat} each)   p50      p95")
        for mode, spent in figures.items():
            print(f"  {mode:9}{'':28}{percentile(spent, 50):8.1f} {percentile(spent, 95):8.1f}")
        ratio = statistics.median(figures[semantic.HYBRID]) / statistics.median(figures[semantic.KEYWORD])
        print(f"hybrid/keyword p50 at {n:,} documents: {ratio:.2f} (target <= 2)")
    finally:
        if not keep:
            drop(target)


@contextlib.contextmanager
def bulk_loading(target):
    """Refresh off and no replicas on the alias's indices while loading (no searcher opened every 5 s over a
    million vectors, nothing copied twice), then each index's own settings back, also after a failure."""
    client, indices = target.client, target._all_partitions
    names = ("refresh_interval", "number_of_replicas")
    before = client.indices.get_settings(index=indices, name=[f"index.{k}" for k in names], include_defaults=True)
    client.indices.put_settings(index=",".join(before), body={"index": {"refresh_interval": "-1",
                                                                        "number_of_replicas": 0}})
    try:
        yield
    finally:
        for index, found in before.items():
            own = {**found.get("defaults", {}).get("index", {}), **found["settings"].get("index", {})}
            client.indices.put_settings(index=index, body={"index": {k: own[k] for k in names if k in own}})


def load(target, batches, writers: int = 2, attempts: int = 6) -> None:
    """The batches through ``target.upsert``, ``writers`` at once (one bulk request keeps one of the node's cores
    busy), with requests of up to LOAD_REQUEST_BYTES; the documents a batch could not write (429 past the
    client's own retries, time-outs) are written again after a pause that doubles, up to ``attempts`` times."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    from beamtrawl.transforms.index import opensearch

    def write(docs):
        for attempt in range(attempts):
            failed = {url for url, _ in target.upsert(docs)}
            if not failed:
                return
            docs = [doc for doc in docs if doc.url in failed]
            time.sleep(min(120, 5 * 2 ** attempt))
        sys.exit(f"FAILED: {len(docs)} documents were not written after {attempts} attempts: {docs[0].url}")

    opensearch.MAX_REQUEST_BYTES, saved = LOAD_REQUEST_BYTES, opensearch.MAX_REQUEST_BYTES
    try:
        with ThreadPoolExecutor(writers) as pool:
            running = set()
            for docs in batches:
                if len(running) >= writers:  # no more batches made than are written
                    done, running = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        future.result()
                running.add(pool.submit(write, docs))
            for future in running:
                future.result()
    finally:
        opensearch.MAX_REQUEST_BYTES = saved


LOAD_REQUEST_BYTES = 40 * 1024 * 1024  # a bulk request of the load (the node takes up to 100 MB)


def percentile(seconds: list[float], p: int) -> float:
    """The ``p``th percentile of ``seconds``, in milliseconds."""
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] * 1000


def opensearch_target(url: str, label: str, keep: bool = False):
    """The bench's alias ``label``, new (``keep``: as it is, if it exists); a request may take 5 minutes."""
    from beamtrawl.transforms.index.opensearch import OpenSearchIndex
    from beamtrawl.transforms.values import NodeOptions

    target = OpenSearchIndex(url, f"semantic-bench-{label}", NodeOptions(timeout=300))
    if not keep:
        drop(target)
    target.prepare()
    target.snapshot_splits()
    return target


def drop(target) -> None:
    """An OpenSearch alias of the bench and every index behind it."""
    client = target.client
    client.indices.delete(index=f"{target.name}-bt-*", ignore_unavailable=True)
    client.indices.delete_index_template(name=f"{target.name}-beamtrawl", ignore=[404])


def variants(pages: list[IndexDoc], n: int, seed: int = 7):
    """``n`` documents made of the pages' passages: each of PASSAGES_PER_VARIANT passages drawn at random from
    all pages (its text cut at 300 characters), its vector moved by noise to a cosine of about 0.9 with the
    passage's own, so that no two are alike; in batches of 1,000."""
    import numpy as np

    rng = np.random.default_rng(seed)
    texts, rows = [], []
    for doc in pages:
        spans = list(zip(doc.passages[::2], doc.passages[1::2], strict=True))
        rows.append(np.frombuffer(doc.vectors, dtype=np.float16).reshape(len(spans), -1).astype(np.float32))
        texts.extend(" ".join(doc.content[a:b].split())[:300] or doc.title for a, b in spans)
    pool = np.concatenate(rows)
    for start in range(0, n, 1000):
        batch = []
        for k in range(start, min(n, start + 1000)):
            drawn = rng.choice(len(pool), PASSAGES_PER_VARIANT, replace=False)
            vectors = pool[drawn] + rng.normal(0, 0.03, (len(drawn), pool.shape[1])).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            content, spans = "", []
            for i in drawn:
                spans += [len(content), len(content) + len(texts[i])]
                content += texts[i] + "\n"
            url = f"file:///srv/variants/{k}.txt"
            batch.append(IndexDoc(doc_id(url), url, "file:///srv", f"Notes {k}", content, "", "", "", "text/plain",
                                  "txt", f"{k}.txt", "/srv/variants/", len(content), 0, "2024-01-01", [], "", str(k),
                                  "", "", "", [], "", passages=spans, vectors=encode(vectors)))
        yield batch


PASSAGES_PER_VARIANT = 10


def scale(embedded: list[IndexDoc], n: int, model, questions: dict[str, str], repeat: int, keep: str = "") -> int:
    """At ``n`` documents (the pages themselves and n − pages :func:`variants`): the time to build the vector
    lists, each mode's query p50/p95 on the questions (warm: ``serve``'s reader; cold: a reader opened for the
    query, as ``search`` opens one), hybrid/keyword, and the lists' recall@10 and MRR@10 against the exact scan.
    ``keep``: the index's file, kept afterwards, and used as it is when it exists (``--index``)."""
    from beamtrawl.transforms.index import sqlite_vectors

    pages = [d for d in embedded if "/hidden/" not in d.url]
    with tempfile.TemporaryDirectory() as work:
        path = keep or os.path.join(work, "scale.sqlite")
        written = built = 0.0
        if not os.path.exists(path):
            target = EmbeddedIndex(path)
            target.prepare()
            started = time.perf_counter()
            target.upsert(embedded)
            for batch in variants(pages, n - len(pages)):
                target.upsert(batch)
            written = time.perf_counter() - started
            started = time.perf_counter()
            target.finish(True)
            built = time.perf_counter() - started
        target = EmbeddedIndex(path)
        passages = target._reader().execute("SELECT sum(length(vectors)) / 512 FROM vectors").fetchone()[0]
        lists = target._reader().execute("SELECT count(*) FROM vector_list_rows").fetchone()[0]
        target.close()
        made = f"written in {written:.0f} s, {lists:,} vector lists built in {built:.1f} s" if written else \
            f"{lists:,} vector lists (the index --index names, as it was)"
        print(f"\n{n:,} documents ({len(pages)} pages, the rest made of their passages), {passages:,} passages, "
              f"{os.path.getsize(path) / n:,.0f} bytes per document; {made}")
        exact = EmbeddedIndex(path)
        exact._matrices = sqlite_vectors.Matrices(approximate=False)
        warm = EmbeddedIndex(path)
        figures, found = {}, {}
        for mode in (semantic.KEYWORD, semantic.SEMANTIC, semantic.HYBRID):
            spent, ranks, cold = [], [], []
            for text, answer in questions.items():
                query = asking(text, mode=mode)
                times = []
                for _ in range(repeat):
                    started = time.perf_counter()
                    page = semantic.search_page(warm, query, model.embed, 10, facet_size=1)
                    times.append(time.perf_counter() - started)
                if any("/hidden/" in hit.url for hit in page.hits):
                    sys.exit(f"FAILED: a public search found a document of the group 'staff' ({mode}: {text})")
                spent.append(statistics.median(times))
                ranks.append(reciprocal_rank(page.hits, answer))
                found[mode, text] = [hit.url for hit in page.hits]
                reader = EmbeddedIndex(path)
                started = time.perf_counter()
                semantic.search_page(reader, query, model.embed, 10, facet_size=1)
                cold.append(time.perf_counter() - started)
                reader.close()
            figures[mode] = (spent, cold, statistics.mean(ranks))
        recall, exact_ranks = [], {semantic.SEMANTIC: [], semantic.HYBRID: []}
        for text, answer in questions.items():
            for mode, ranked in exact_ranks.items():
                hits = semantic.search_page(exact, asking(text, mode=mode), model.embed, 10).hits
                ranked.append(reciprocal_rank(hits, answer))
                if mode == semantic.SEMANTIC:
                    truth = {hit.url for hit in hits}
                    recall.append(len(truth & set(found[mode, text])) / max(1, len(truth)))
        warm.close()
        exact.close()
    print(f"query (ms, {len(questions)} questions)   p50 warm  p95 warm  p50 cold   MRR@10 lists  exact")
    for mode, (spent, cold, mrr) in figures.items():
        reference = f"{statistics.mean(exact_ranks[mode]):6.3f}" if mode in exact_ranks else "     -"
        print(f"  {mode:9}{'':20}{percentile(spent, 50):9.1f} {percentile(spent, 95):9.1f} {percentile(cold, 50):9.1f}"
              f"   {mrr:11.3f} {reference}")
    ratio = statistics.median(figures[semantic.HYBRID][0]) / statistics.median(figures[semantic.KEYWORD][0])
    cold = statistics.median(figures[semantic.HYBRID][1]) / statistics.median(figures[semantic.KEYWORD][1])
    print(f"hybrid/keyword p50 at {n:,} documents: {ratio:.2f} warm, {cold:.2f} cold (target <= 2); "
          f"recall@10 of the lists against the exact scan: {statistics.mean(recall):.3f} (target >= 0.95)")
    return 0


def main() -> int:
    logging.getLogger("opensearch").setLevel(logging.WARNING)  # its client logs every request at INFO
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--copies", type=int, default=0)
    parser.add_argument("--scale", type=int, default=0)
    parser.add_argument("--target", choices=("sqlite", "opensearch", "delta"), default="sqlite")
    parser.add_argument("--url", default=None, help="the OpenSearch node (--target opensearch)")
    parser.add_argument("--questions", type=int, default=0, help="with --scale: the first N questions only")
    parser.add_argument("--index", default="", help="with --scale: the index file, kept (used as it is if it exists)")
    parser.add_argument("--passages", type=int, default=10, help="--target opensearch --scale: vectors per document")
    parser.add_argument("--keep", action="store_true",
                        help="--target opensearch --scale: keep the alias (used as it is if it holds N documents)")
    args = parser.parse_args()
    if args.target == "opensearch" and not args.url:
        parser.error("--target opensearch needs --url")
    if args.passages < 1:
        parser.error("--passages must be 1 or more")
    if args.scale and args.target == "opensearch":
        scale_opensearch(args.scale, args.repeat, args.url, args.passages, args.keep)
        return 0
    from tests.package_files import python_library_docs

    folder = python_library_docs()
    questions, names = QUESTIONS, NAMES
    pages = sorted(p.name for p in folder.glob("*.html"))
    if args.tiny:
        questions = dict(list(QUESTIONS.items())[:6])
        names = dict(list(NAMES.items())[:3])
        pages = sorted({*questions.values(), *names.values(), *pages[:12]})
        args.repeat = 1
    settings = WordLlamaSettings()
    docs = documents(folder, pages, args.copies)
    hidden = [d._replace(id=doc_id(d.url + "#hidden"), url=d.url.replace("/library/", "/hidden/"), groups=["staff"])
              for d in docs[:20]]  # the same pages for the group staff only: a public search never finds them
    embedded, *seconds = embed_all(docs + hidden, settings, 1 if args.tiny or args.scale else 3)
    if not all(d.vectors for d in embedded):
        print("FAILED: a document got no vectors", file=sys.stderr)
        return 1
    model = load_model(settings)
    if args.scale:
        questions = dict(list(questions.items())[:args.questions or None])
        return scale(embedded, args.scale, model, questions, args.repeat, args.index)
    bare = [d._replace(passages=[], vectors=b"") for d in embedded]
    if args.target == "delta":
        return delta(embedded, bare, len(docs), seconds, questions, names, model, args.repeat)
    if args.target == "opensearch":
        sizes, targets = {}, {}
        try:
            for label, written in (("with vectors", embedded), ("without", bare)):
                targets[label] = target = opensearch_target(args.url, label.split()[0])
                started = time.perf_counter()
                assert target.upsert(written) == []
                target.finish(succeeded=True)
                target.client.indices.refresh(index=target.name)
                seconds_per_doc = (time.perf_counter() - started) / len(written)
                target.client.indices.forcemerge(index=target.name, max_num_segments=1)
                stats = target.client.indices.stats(index=target.name, metric="store")["_all"]["primaries"]
                sizes[label] = stats["store"]["size_in_bytes"] / len(written)
                print(f"OpenSearch writes: {seconds_per_doc * 1000:.1f} ms per document {label}")
            on_questions = run_queries(targets["with vectors"], questions, model.embed, args.repeat)
            on_names = run_queries(targets["with vectors"], names, model.embed, args.repeat)
        finally:
            for target in targets.values():
                drop(target)
        report(len(docs), len(embedded), seconds, on_questions, on_names, sizes)
        if args.tiny:
            scale_opensearch(300, 1, args.url, queries=3)
        return 0
    with tempfile.TemporaryDirectory() as work:
        sizes = {}
        for label, written in (("with vectors", embedded), ("without", bare)):
            target = EmbeddedIndex(os.path.join(work, f"{label.split()[0]}.sqlite"))
            target.prepare()
            assert target.upsert(written) == []
            target.close()
            sizes[label] = os.path.getsize(target.path) / len(written)
        target = EmbeddedIndex(os.path.join(work, "with.sqlite"))
        on_questions = run_queries(target, questions, model.embed, args.repeat)
        on_names = run_queries(target, names, model.embed, args.repeat)
    report(len(docs), len(embedded), seconds, on_questions, on_names, sizes)
    if args.tiny:  # the --scale path too, at a size that takes seconds, with vector lists from 1,000 passages on
        vector_lists.MIN_ROWS = 1000
        return scale(embedded, 600, model, questions, 1)
    return 0


def delta(embedded, bare, pages, seconds, questions, names, model, repeat: int) -> int:
    """The same on a Delta table (by meaning only: no keyword mode); its size is the folder's bytes on disk."""
    from beamtrawl.transforms.index.table import DeltaIndex

    modes = (semantic.SEMANTIC, semantic.HYBRID, semantic.AUTO)
    with tempfile.TemporaryDirectory() as work:
        sizes, tables = {}, {}
        for label, written in (("with vectors", embedded), ("without", bare)):
            folder = os.path.join(work, f"{label.split()[0]}.delta")
            target = DeltaIndex(folder)
            target.prepare()
            target.upsert(written)
            target.commit(target.take_staged())
            target.finish(succeeded=True)
            tables[label] = DeltaIndex(folder)
            sizes[label] = sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file()) / len(written)
        on_questions = run_queries(tables["with vectors"], questions, model.embed, repeat, modes)
        on_names = run_queries(tables["with vectors"], names, model.embed, repeat, modes)
    report(pages, len(embedded), seconds, on_questions, on_names, sizes)
    return 0


def report(pages, embedded, seconds, on_questions, on_names, sizes) -> None:
    stage_s, loop_s, stage_cpu, loop_cpu = seconds
    print(f"corpus: {pages} pages of Python's library reference (+ {embedded - pages} copies only the group staff sees)")
    print("\nMRR@10            questions   names")
    for mode in on_questions:
        print(f"  {mode:9}        {on_questions[mode][0]:8.3f}  {on_names[mode][0]:6.3f}")
    keyword = on_names.get(semantic.KEYWORD, (float("nan"),))[0]
    print(f"hybrid on questions: {on_questions[semantic.HYBRID][0]:.3f} (target >= 0.75); "
          f"auto/keyword on names: {on_names[semantic.AUTO][0]:.3f}/{keyword:.3f}")
    print(f"\nembedding: stage {embedded / stage_s:,.1f} docs/s, model in a plain loop {embedded / loop_s:,.1f} "
          f"docs/s; stage/loop: {loop_s / stage_s:.2f} (target >= 0.9); per CPU-second {loop_cpu / stage_cpu:.2f}")
    print("\nquery ms          questions p50  p95    names p50")
    for mode in on_questions:
        print(f"  {mode:9}        {percentile(on_questions[mode][1], 50):8.2f} {percentile(on_questions[mode][1], 95):8.2f}"
              f"  {percentile(on_names[mode][1], 50):6.2f}")
    if semantic.KEYWORD in on_questions:
        keyword = statistics.median(on_questions[semantic.KEYWORD][1])
        print(f"hybrid/keyword p50 on questions: {statistics.median(on_questions[semantic.HYBRID][1]) / keyword:.2f}")
    print(f"\nindex bytes per document: {sizes['with vectors']:,.0f} with vectors, {sizes['without']:,.0f} without")


if __name__ == "__main__":
    sys.exit(main())
