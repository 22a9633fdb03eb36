"""OpenSearch benchmark: how fast beamtrawl's OpenSearch target writes documents and reads its snapshot.

Run from the repository root (beamtrawl installed; Java and Maven for the test node)::

    python bench/opensearch_bench.py [--docs 20000] [--snapshot-docs 100000] [--url URL] [--seed 7] [--tiny]

Without ``--url`` it starts a real single-node OpenSearch (tests/servers/opensearch.py) in a temporary
folder. It first indexes the snapshot documents of (2), untimed. Then:

(1) indexing: N prepared documents (generated text and HTML of 1-4 KB, prepared by the built-in
    preparators and ``make_document``; not timed) are pickled into shards of 500. The beamtrawl sink
    loads them inside the workers (as in a crawl, where documents are made in the workers, never
    sent from the driver) and writes them with ``WriteIndex(target)`` on FnApiRunner with 2 worker
    processes into a fresh index; its time is the whole pipeline run, Beam's start-up included. The
    baseline is a plain one-process ``helpers.streaming_bulk`` loop through a default client (no
    compression, like the target) with the same chunking (500 documents, at most 10 MiB), the same
    ``_id`` and ``_source`` (the module's ``_source(doc)``) into another fresh index with the same
    mapping and settings. Headline: sink/loop in docs/s, target >= 0.8. Both indexes must hold exactly
    N documents, with identical sources in a sample. An untimed warm-up bulk of 2,000 documents runs
    first.
(2) snapshot read of M documents: through the target as a crawl reads it (``snapshot_splits`` +
    ``read_snapshot_batches`` of every split: folder batches; splits of 50,000 documents, each read in
    ranges of under 10,000, two at a time), the same as records (``read_snapshot``), through
    ``ReadSnapshot(target, by_folder=True)`` with 2 workers, and with a plain ``helpers.scan`` of the
    same fields in pages of the same size (hits counted, no record made). Rounds run each read in turn;
    every read must return M records, and no point in time may be left open at the end.

``--tiny`` (tests/test_benchmarks.py runs it, with the suite's node as ``--url``): 300 documents to
index and 1,000 to read.

Exit code 0 when the figures were measured (targets may be missed), 1 when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import pickle
import random
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from beamtrawl.runners import make_runner, pipeline_options
from beamtrawl.transforms.batches import Batch, Columns
from beamtrawl.transforms.index.opensearch import (
    _SNAPSHOT_FIELDS,
    MAX_REQUEST_BYTES,
    PAGE,
    READERS,
    SLICE_DOCS,
    OpenSearchIndex,
    _source,
    analysis,
    mapping,
)
from beamtrawl.transforms.index.write import BATCH, ReadSnapshot, WriteIndex
from beamtrawl.transforms.preparators import BUILTIN, chain_for
from beamtrawl.transforms.prepare import PrepareOptions, make_document
from beamtrawl.transforms.records import Entry, IndexDoc, RawDocument, use_row_coders
from beamtrawl.transforms.urls import doc_id
from beamtrawl.transforms.values import NodeOptions
from crawl_bench import Row, _html_file, _sentences, _text_file, check, print_table, verdict
from opensearchpy import OpenSearch, helpers

REPO = Path(__file__).resolve().parent.parent

ANALYZER = "english"
SETTINGS = {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "5s"}  # as prepare() makes
CHUNK = 500  # chunk_size of streaming_bulk in OpenSearchIndex.upsert
WORKERS = 2
SAMPLE = 200  # documents whose sources are compared between the two indexes
FINGERPRINT = hashlib.sha256(b"opensearch-bench").hexdigest()[:16]


def fail(message: str) -> None:
    print(f"\nFAILED: {message}", file=sys.stderr)
    sys.exit(1)


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f} docs/s ({seconds:.2f} s)"


# ---------------------------------------------------------------------------------------------
# Documents
# ---------------------------------------------------------------------------------------------

def generate_docs(count: int, seed: int) -> list[IndexDoc]:
    """``count`` prepared documents, half plain text and half HTML of 1-4 KB, deterministic."""
    rng = random.Random(seed)
    pool = _sentences(rng)
    docs = []
    for i in range(count):
        size = rng.randint(1024, 4096)
        name, mimetype, text = ((f"page-{i:06d}.html", "text/html", _html_file(rng, pool, size)) if i % 2 else
                                (f"note-{i:06d}.txt", "text/plain", _text_file(rng, pool, size)))
        url = f"file:///bench/area-{i % 7:02d}/team-{i // 100 % 13:02d}/{name}"
        data = text.encode("utf-8")
        entry = Entry(id=doc_id(url), url=url, root="file:///bench/", depth=2, size=len(data),
                      mtime_ns=1_700_000_000_000_000_000 + i * 1_000_000_000, identity="", content=data,
                      mimetype=mimetype, outlinks=[], etag="", http_last_modified="", source_url="",
                      link_text="")
        prepared = chain_for(BUILTIN, mimetype, url)[0](data, url, mimetype)
        docs.append(make_document(RawDocument(entry, mimetype, data, ""), prepared,
                                  PrepareOptions(BUILTIN, FINGERPRINT, 2**30, 250_000)))
    return docs


def snapshot_actions(index: str, count: int):
    """Small documents (a title and a sentence) for the snapshot part."""
    for i in range(count):
        url = f"file:///snapshot/folder-{i // 1000:03d}/file-{i:07d}.txt"
        doc = IndexDoc(id=doc_id(url), url=url, root="file:///snapshot/", title=f"File {i}",
                       content=f"Small document number {i}.", summary="", headlines="", metadata="",
                       mimetype="text/plain", extension="txt", filename=f"file-{i:07d}.txt",
                       path=url.rsplit("/", 1)[0] + "/", size=20 + i % 100, mtime_ns=1_700_000_000 * 10**9 + i,
                       last_modified="2023-11-14T22:13:20.000+00:00", groups=[], preparation_error="",
                       content_hash=hashlib.sha256(url.encode()).hexdigest(), etag="", http_last_modified="",
                       prep_fingerprint=FINGERPRINT, outlinks=[], indexed_at="2024-01-01T00:00:00+00:00")
        yield {"_index": index, "_id": doc.id, "_source": _source(doc)}


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------

def counters(result, namespace: str) -> dict[str, int]:
    found = result.metrics().query(MetricsFilter().with_namespace(namespace))["counters"]
    totals: dict[str, int] = {}
    for c in found:
        totals[c.key.metric.name] = totals.get(c.key.metric.name, 0) + (c.committed or c.attempted or 0)
    return totals


def bulk(client: OpenSearch, actions) -> int:
    """The plain loop: streaming_bulk with the target's chunking; returns the documents written."""
    written = 0
    for ok, item in helpers.streaming_bulk(client, actions, chunk_size=CHUNK, max_chunk_bytes=MAX_REQUEST_BYTES,
                                           raise_on_error=False):
        if not ok:
            fail(f"the plain loop could not write a document: {item}")
        written += 1
    return written


def refreshed_count(client: OpenSearch, index: str) -> int:
    client.indices.refresh(index=index)
    return client.count(index=index)["count"]


OPENED: set[str] = set()  # the points in time this benchmark's reads opened (the node may serve others meanwhile)


def opened(target: OpenSearchIndex) -> None:
    if target.pit_id:
        OPENED.add(target.pit_id)


def open_pits(client: OpenSearch) -> int:
    """How many of the points in time this benchmark opened are still open."""
    return len(OPENED & {pit["pit_id"] for pit in client.get_all_pits().get("pits", [])})


# ---------------------------------------------------------------------------------------------
# (1) indexing
# ---------------------------------------------------------------------------------------------

def _count_event(e) -> None:
    Metrics.counter("bench", e.kind).inc(e.count)
    if e.kind == "written":  # one per upsert call, so: how many batches WriteIndex made
        Metrics.counter("bench", "batches").inc()


def _load_shard(path: str) -> list[IndexDoc]:
    with open(path, "rb") as handle:
        return pickle.load(handle)


def run_sink(url: str, name: str, paths: list[str]) -> tuple[float, dict, str]:
    """Shards loaded in the workers ``| WriteIndex(target)`` on 2 workers; (seconds, event counters, index)."""
    target = OpenSearchIndex(url, name, NodeOptions(analyzer=ANALYZER))
    target.prepare()
    succeeded = False
    try:
        started = time.perf_counter()
        options = pipeline_options(None, [f"--direct_num_workers={WORKERS}"], target)
        with beam.Pipeline(runner=make_runner(options), options=options) as p:
            docs = (p | "Shards" >> beam.Create(paths)
                    | "Load" >> beam.FlatMap(_load_shard).with_output_types(IndexDoc))
            # WriteIndex takes a tuple of branches (one per preparator family in a crawl): here one
            events = (docs,) | "WriteIndex" >> WriteIndex(target)
            _ = events | "CountEvents" >> beam.Map(_count_event)
        seconds = time.perf_counter() - started
        succeeded = True
    finally:
        target.finish(succeeded)
        target.close()
    return seconds, counters(p.result, "bench"), target.physical


def run_loop(client: OpenSearch, index: str, docs: list[IndexDoc]) -> float:
    client.indices.create(index=index, body={"settings": {**SETTINGS, "analysis": analysis(ANALYZER)},
                                             "mappings": mapping(ANALYZER)})
    started = time.perf_counter()
    written = bulk(client, ({"_index": index, "_id": d.id, "_source": _source(d)} for d in docs))
    seconds = time.perf_counter() - started
    if written != len(docs):
        fail(f"the plain loop wrote {written} of {len(docs)} documents")
    return seconds


def same_sources(client: OpenSearch, a: str, b: str, docs: list[IndexDoc]) -> bool:
    ids = [d.id for d in random.Random(1).sample(docs, min(SAMPLE, len(docs)))]
    left, right = (client.mget(index=i, body={"ids": ids})["docs"] for i in (a, b))
    return all(x["found"] and y["found"] and x["_source"] == y["_source"] for x, y in zip(left, right))


def indexing(url: str, client: OpenSearch, run: str, docs: list[IndexDoc]) -> list[Row]:
    n = len(docs)
    print(f"\n(1) indexing {n:,} prepared documents, each run into its own fresh index")
    run_loop(client, f"bench-warmup-{run}", docs[:2000])  # untimed: JIT and analyzers warm for both runs
    client.indices.delete(index=f"bench-warmup-{run}")
    loop_s = run_loop(client, f"bench-loop-{run}", docs)
    with tempfile.TemporaryDirectory(prefix="beamtrawl-os-bench-shards-") as shards:
        paths = []
        for k in range(0, n, BATCH):
            paths.append(os.path.join(shards, f"docs-{k:07d}.pickle"))
            with open(paths[-1], "wb") as handle:
                pickle.dump(docs[k:k + BATCH], handle)
        sink_s, events, sink_index = run_sink(url, f"bench-sink-{run}", paths)
    ratio = loop_s / sink_s
    batches = events.get("batches", 0)
    print(f"  beamtrawl sink: {rate(n, sink_s):>24}  {len(paths)} pickled shards loaded in the workers "
          f"| WriteIndex,\n{'':42}FnApiRunner, {WORKERS} workers, whole pipeline run; {batches} batches "
          f"of {n / max(1, batches):.0f} on average")
    print(f"  plain loop:     {rate(n, loop_s):>24}  helpers.streaming_bulk in one process, default client")
    print(f"  sink/loop:      {ratio:7.2f}x docs/s   target >= 0.8  {verdict(ratio >= 0.8)}")
    print(f"  Both write the same documents (same _id, same _source from the module's _source(doc)) with the\n"
          f"  same chunking (streaming_bulk chunk_size={CHUNK}, max_chunk_bytes={MAX_REQUEST_BYTES >> 20} MiB, "
          f"no compression;\n  WriteIndex hands each upsert exactly {BATCH}) into fresh indexes with the same "
          f"mapping and settings;\n  index creation is in neither time. The sink's time includes Beam's pipeline "
          f"start-up (worker\n  processes, bundles). The documents are loaded in the workers because in a crawl "
          f"they are made\n  there, never sent from the driver through beam.Create.")
    indexes = {"sink": sink_index, "loop": f"bench-loop-{run}"}
    counts = {what: refreshed_count(client, index) for what, index in indexes.items()}
    print("  documents in the indexes: " + ", ".join(f"{what} {c:,}" for what, c in counts.items()))
    if set(counts.values()) != {n} or events.get("written") != n:
        fail(f"each index should hold {n} documents: {counts}, sink events {events}")
    if not same_sources(client, sink_index, indexes["loop"], docs):
        fail(f"a sample of {SAMPLE} documents differs between the indexes")
    print(f"  a sample of {SAMPLE} documents has identical _source in both: OK")
    return [("index, beamtrawl sink", rate(n, sink_s), "", ""),
            ("index, plain streaming_bulk", rate(n, loop_s), "", ""),
            check("index sink / loop (docs/s)", f"{ratio:.2f}x", ">= 0.8", ratio >= 0.8)]


# ---------------------------------------------------------------------------------------------
# (2) snapshot read
# ---------------------------------------------------------------------------------------------

def node_cpu(client: OpenSearch) -> float:
    """CPU seconds the node's process has used so far (its own account, so any node URL will do)."""
    stats = client.nodes.stats(metric="process", params={"filter_path": "nodes.*.process.cpu"})
    return sum(node["process"]["cpu"]["total_in_millis"] for node in stats["nodes"].values()) / 1000


def measured(client: OpenSearch, read, count) -> tuple[float, float, float, int]:
    """(wall seconds, this process's CPU seconds, the node's CPU seconds, records) of ``read()``; ``count``
    makes the records of what it returned, untimed."""
    wall, cpu, node = time.perf_counter(), time.process_time(), node_cpu(client)
    found = read()
    figures = time.perf_counter() - wall, time.process_time() - cpu, node_cpu(client) - node
    return (*figures, count(found))


def read_direct(target: OpenSearchIndex, batched: bool = True) -> list:
    """Every split read in this process, one after the other, in folder batches as a crawl reads them
    (``read_snapshot_batches``), or as records (``read_snapshot``); what was read."""
    read, succeeded = [], False
    try:
        splits = target.snapshot_splits()
        opened(target)
        for split in splits:
            read += target.read_snapshot_batches(split) if batched else target.read_snapshot(split)
        succeeded = True
    finally:
        target.finish(succeeded)
    return read


def _records(batch) -> int:
    return Columns([batch[1]]).n


def read_beam(target: OpenSearchIndex | None) -> int:
    """``ReadSnapshot(target, by_folder=True)`` (a crawl's read) counted on 2 workers (None: the same pipeline
    over no splits, for Beam's own cost); the records."""
    succeeded = False
    try:
        options = pipeline_options(None, [f"--direct_num_workers={WORKERS}"], target)
        with beam.Pipeline(runner=make_runner(options), options=options) as p:
            found = (p | "ReadSnapshot" >> ReadSnapshot(target, by_folder=True) if target else
                     p | "NoSplits" >> beam.Create([]).with_output_types(Batch))
            if target:
                opened(target)
            _ = (found
                 | "Records" >> beam.Map(_records)
                 | "Count" >> beam.CombineGlobally(sum)
                 | "Report" >> beam.Map(lambda n: Metrics.counter("bench", "entries").inc(n)))
        succeeded = True
    finally:
        if target:
            target.finish(succeeded)
    return counters(p.result, "bench").get("entries", 0)


def read_scan(target: OpenSearchIndex) -> int:
    """The peer: a plain ``helpers.scan`` (one scroll) of the same fields through the target's client (the same
    connection and JSON parsing), pages of PAGE; the hits, counted (no record made of them)."""
    return sum(1 for _ in helpers.scan(target.client, index=target.physical, size=PAGE,
                                       query={"_source": _SNAPSHOT_FIELDS}))


def snapshot(url: str, client: OpenSearch, name: str, m: int, rounds: int) -> list[Row]:
    print(f"\n(2) snapshot read of {m:,} documents, {rounds} round(s), each read once per round in turn (the "
          f"wall ratio\n  is the median round's; CPU seconds, this process's and the node's, are summed over "
          f"the rounds;\n  the node's count whatever else it serves meanwhile)")
    target = OpenSearchIndex(url, name, NodeOptions(analyzer=ANALYZER))
    reads = {"target": (lambda: read_direct(target), lambda found: sum(map(_records, found))),
             "scan": (lambda: read_scan(target), int),
             "records": (lambda: read_direct(target, batched=False), len),
             "ReadSnapshot": (lambda: read_beam(target), int), "empty pipeline": (lambda: read_beam(None), int)}
    runs: dict[str, list] = {what: [] for what in reads}
    try:
        splits = len(target.snapshot_splits())
        opened(target)
        target.finish(False)
        for _ in range(rounds):
            for what, (read, count) in reads.items():
                runs[what].append(measured(client, read, count))
    finally:
        target.close()
    for what, figures in runs.items():
        wrong = [entries for *_, entries in figures if entries != (0 if what == "empty pipeline" else m)]
        if wrong:
            fail(f"{what} returned {wrong[0]} entries, not {m}")
    wall = {what: sorted(f[0] for f in figures)[len(figures) // 2] for what, figures in runs.items()}
    cpu = {what: (sum(f[1] for f in figures), sum(f[2] for f in figures)) for what, figures in runs.items()}
    beam_net = max(wall["ReadSnapshot"] - wall["empty pipeline"], 1e-3)
    ratio, cpu_ratio = wall["scan"] / wall["target"], sum(cpu["scan"]) / sum(cpu["target"])
    records_ratio = wall["scan"] / wall["records"]
    beam_ratio, net_ratio = wall["scan"] / wall["ReadSnapshot"], wall["scan"] / beam_net
    rounds_ratios = ", ".join(f"{s[0] / t[0]:.2f}" for s, t in zip(runs["scan"], runs["target"]))
    fields = ", ".join(_SNAPSHOT_FIELDS)

    def used(what: str) -> str:
        return f"CPU {cpu[what][0]:.2f} s here + {cpu[what][1]:.2f} s node"

    print(f"  target, one process:  {rate(m, wall['target']):>24}  {used('target')}\n{'':48}(folder batches, as a crawl "
          f"reads them: {splits} split(s) of at most {SLICE_DOCS:,}\n{'':48}docs read one after the other, each in "
          f"ranges of under {PAGE:,} docs,\n{'':48}{READERS} at a time; a point in time, index order, search_after)")
    print(f"  target, records:      {rate(m, wall['records']):>24}  {used('records')}\n{'':48}(the same read, "
          f"a SnapshotEntry per document)")
    print(f"  helpers.scan:         {rate(m, wall['scan']):>24}  {used('scan')}\n{'':48}(one plain scroll, pages of "
          f"{PAGE:,}, through the target's client,\n{'':48}hits counted, no record made)")
    print(f"  ReadSnapshot + Count: {rate(m, wall['ReadSnapshot']):>24}  (folder batches, FnApiRunner, {WORKERS} "
          f"workers, whole\n{'':48}pipeline run; the same pipeline over no splits takes "
          f"{wall['empty pipeline']:.2f} s)")
    print(f"  Each read returns the same fields of every document, from _source: {fields}.")
    print(f"  target/scan: {ratio:.2f}x docs/s (wall; rounds: {rounds_ratios}), {cpu_ratio:.2f}x docs per CPU-second "
          f"(here + node)   target >= 1.0  {verdict(ratio >= 1.0)}")
    print(f"  records/scan: {records_ratio:.2f}x docs/s")
    print(f"  ReadSnapshot/scan: {beam_ratio:.2f}x docs/s, {net_ratio:.2f}x without the empty pipeline's time")
    print(f"  every read returned {m:,} entries: OK")
    return [("snapshot, target direct", rate(m, wall["target"]), "", ""),
            ("snapshot, helpers.scan", rate(m, wall["scan"]), "", ""),
            ("snapshot, ReadSnapshot (Beam)", rate(m, wall["ReadSnapshot"]), "", ""),
            check("snapshot target / scan", f"{ratio:.2f}x", ">= 1.0", ratio >= 1.0),
            ("snapshot target / scan, CPU", f"{cpu_ratio:.2f}x", "", ""),
            ("snapshot records / scan", f"{records_ratio:.2f}x", "", ""),
            ("snapshot ReadSnapshot / scan", f"{beam_ratio:.2f}x ({net_ratio:.2f}x net)", "", "")]


# ---------------------------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------------------------

def benchmark(url: str, n: int, m: int, seed: int, rounds: int) -> list[Row]:
    client = OpenSearch(hosts=[url], timeout=120)
    version = client.info()["version"]["number"]
    run = uuid.uuid4().hex[:8]
    print(f"beamtrawl OpenSearch benchmark: OpenSearch {version} at {url}, {os.cpu_count()} CPUs, run {run}")
    started = time.perf_counter()
    docs = generate_docs(n, seed)
    if n:
        size = sum(len(d.content) for d in docs)
        print(f"prepared {n:,} documents in {time.perf_counter() - started:.1f} s (not part of any figure): half "
              f"text, half HTML,\n  content {size / n / 1024:.1f} KiB on average, seed {seed}")
    try:
        started = time.perf_counter()
        snap = OpenSearchIndex(url, f"bench-snapshot-{run}", NodeOptions(analyzer=ANALYZER))
        snap.prepare()
        bulk(client, snapshot_actions(snap.physical, m))
        client.indices.refresh(index=snap.physical)
        snap.close()
        print(f"indexed the {m:,} small snapshot documents with streaming_bulk in "
              f"{time.perf_counter() - started:.1f} s\n  (not part of any figure)")
        rows = (indexing(url, client, run, docs) if n else []) + snapshot(url, client, f"bench-snapshot-{run}", m, rounds)
        left = open_pits(client)
        print(f"\npoints in time this benchmark opened left open (GET /_search/point_in_time/_all): {left}  "
              f"{verdict(left == 0)}")
        if left:
            fail(f"{left} points in time left open")
        return [*rows, check("points in time left", str(left), "0", left == 0)]
    finally:
        client.indices.delete(index=f"bench-*-{run}*", ignore_unavailable=True)
        for template in client.indices.get_index_template().get("index_templates", []):
            if f"-{run}" in template["name"]:  # prepare() may leave an index template per target
                client.indices.delete_index_template(name=template["name"])
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20_000, help="documents to index (default 20000; 0: the snapshot read only)")
    parser.add_argument("--snapshot-docs", type=int, default=100_000, help="documents to read (default 100000)")
    parser.add_argument("--url", help="an OpenSearch to use (default: start one in a temporary folder)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated documents (default 7)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the snapshot reads (default 3)")
    parser.add_argument("--tiny", action="store_true", help="300 and 1,000 documents, one round: the test suite's run")
    args = parser.parse_args()
    if args.tiny:
        args.docs, args.snapshot_docs, args.rounds = 300, 1000, 1
    use_row_coders()
    if args.url:
        rows = benchmark(args.url, args.docs, args.snapshot_docs, args.seed, args.rounds)
    else:
        sys.path.insert(0, str(REPO))  # tests/ is not installed
        from tests.servers.opensearch import running_node

        work = tempfile.mkdtemp(prefix="beamtrawl-os-bench-", dir="/tmp")
        os.chmod(work, 0o755)  # as root the node runs as another user, who must reach it
        try:
            started = time.perf_counter()
            with running_node(work) as url:
                print(f"started OpenSearch in {time.perf_counter() - started:.1f} s (in {work})")
                rows = benchmark(url, args.docs, args.snapshot_docs, args.seed, args.rounds)
        finally:
            with contextlib.suppress(OSError):
                shutil.rmtree(work)
    print_table(rows)


if __name__ == "__main__":
    main()
