"""``beamtrawl serve`` benchmark: the web layer's cost over the index it searches.

Run from the repository root (beamtrawl installed; Java and Maven for the OpenSearch node)::

    python bench/serve_bench.py [--docs 100000] [--requests 120] [--url OPENSEARCH_URL] [--only embedded|opensearch]
                                [--tiny]

1. N generated documents (a Zipf vocabulary of made-up words, 60-150 words each, 300 folders, five types,
   a tenth of them in the group ``hr``; a few fixed phrases spread over 2% of them) are written
   **through the index's own write API** (``EmbeddedIndex.upsert`` in batches of 1,000, and
   ``OpenSearchIndex.upsert``), not by a crawl: crawling 100,000 files would take longer than the
   measurement and is measured by bench/crawl_bench.py. Writing time is printed, not the figure.
2. ``beamtrawl serve`` runs as its own process on loopback (a real uvicorn server); the clients are
   threads of this process, each with one keep-alive HTTP/1.1 connection on a plain socket (a request
   written at once, the answer read by its Content-Length: a few microseconds, where http.client's
   header parsing costs a tenth of a millisecond that is not the server's), asking ``/api/search`` for
   page 1 (20 hits, facets, total) as an anonymous searcher.
3. The baseline runs in the same run and process: the same queries through ``parse_query`` and the
   target's ``search_page`` with the arguments the server passes (page size, offset, order, facet
   size, the anonymous searcher's groups), from the same number of threads, each thread with a target
   of its own (as the server's pool gives each of its search threads). Both are warmed first.
4. Web and direct alternate in short blocks (``clients`` x BLOCK_ROUNDS requests each), in the order
   web, direct, direct, web, ..., so that a change of the machine's load, and caches warmed by one
   side, hit both alike.
5. Three kinds of query, ten of each in rotation: one word (a word of rank 40-60), a phrase, and a
   word with a filter (``extension:pdf`` or ``path:``). 1 and 8 concurrent clients. Printed: p50 and
   p95 latency in ms of both, web/direct at p50 (target <= 1.5), the load average, and the verdict.

The same is then done against OpenSearch (a node of tests/servers/opensearch.py, or ``--url``).
``--tiny`` (tests/test_benchmarks.py runs it, with the suite's node as ``--url``): 1,000 documents and
16 requests per row and side.
Exit code 0 when the figures were measured (targets may be missed), 1 when a check fails.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path

import yaml
from beamtrawl.pipeline.serve.asking import FACET_SIZE, PER_PAGE
from beamtrawl.transforms.index import EmbeddedIndex
from beamtrawl.transforms.index.query import parse_query
from beamtrawl.transforms.records import IndexDoc
from beamtrawl.transforms.urls import doc_id

REPO = Path(__file__).resolve().parent.parent
PHRASES = ["quarterly numbat census", "field station log", "termite mound survey", "banded back sighting",
           "creek water sample", "night camera trap", "burrow entrance width", "dry season count",
           "ranger patrol notes", "fox bait program"]
TYPES = [("txt", "text/plain"), ("pdf", "application/pdf"), ("html", "text/html"), ("md", "text/markdown"),
         ("csv", "text/csv")]
FOLDERS = 300
PAGE = PER_PAGE  # what /api/search answers without per_page
FACETS = FACET_SIZE
TARGET = 1.5  # web/direct at p50
BLOCK_ROUNDS = 2  # requests per client thread in a block of one side before the other side's turn
IDLE = 4.0  # seconds after which a client opens a new connection (uvicorn closes those idle for 5 s)


def vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    syllables = ["ka", "lo", "mi", "tu", "ra", "ne", "so", "vi", "da", "pe", "gu", "zo", "ba", "ri", "fe", "no"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def documents(n: int, seed: int = 7):
    """N IndexDocs, generated fast and the same for a seed; yields batches of 1,000."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    batch = []
    for i in range(n):
        content = rng.choices(words, weights, k=rng.randint(60, 150))
        if rng.random() < 0.02:
            content.insert(rng.randrange(len(content)), rng.choice(PHRASES))
        extension, mimetype = TYPES[i % len(TYPES)]
        folder = f"/srv/corpus/dir{rng.randrange(FOLDERS):03d}/"
        filename = f"{'-'.join(rng.choices(words[:2000], k=2))}-{i}.{extension}"
        url = "file://" + folder + filename
        mtime = 1_600_000_000 + rng.randrange(100_000_000)
        text = " ".join(content)
        batch.append(IndexDoc(
            id=doc_id(url), url=url, root="file:///srv/corpus", title=" ".join(rng.choices(words, weights, k=3)),
            content=text, summary=text[:200], headlines="", metadata="", mimetype=mimetype, extension=extension,
            filename=filename, path=folder, size=len(text), mtime_ns=mtime * 10**9,
            last_modified=datetime.fromtimestamp(mtime, UTC).isoformat(timespec="milliseconds"),
            groups=["hr"] if i % 10 == 0 else [], preparation_error="", content_hash="", etag="",
            http_last_modified="", prep_fingerprint="", outlinks=[], indexed_at="2026-12-01T00:00:00.000+00:00"))
        if len(batch) == 1000:
            yield batch
            batch = []
    if batch:
        yield batch


def queries(seed: int = 7) -> dict[str, list[str]]:
    words = vocabulary(random.Random(seed))  # the same words in the same order as the documents use
    rng = random.Random(seed + 1)
    common = words[40:60]
    return {"one word": common[:10],
            "phrase": [f'"{p}"' for p in PHRASES],
            "filtered": [f"{w} extension:pdf" if k % 2 else f"{w} path:/srv/corpus/dir{rng.randrange(FOLDERS):03d}"
                         for k, w in enumerate(common[10:20])]}


def write(target, n: int) -> float:
    started = time.perf_counter()
    target.prepare()
    for batch in documents(n):
        failures = target.upsert(batch)
        if failures:
            raise SystemExit(f"write failed: {failures[0]}")
    target.finish(True)
    return time.perf_counter() - started


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000


def run_threads(clients: int, requests: int, work, first: int = 0) -> list[float]:
    """``requests`` calls of ``work(client, k)``, k from ``first`` on, spread over ``clients`` threads;
    the latencies."""
    latencies: list[float] = []
    lock = threading.Lock()

    def client(c: int) -> None:
        mine = []
        for k in range(first + c, first + requests, clients):
            started = time.perf_counter()
            work(c, k)
            mine.append(time.perf_counter() - started)
        with lock:
            latencies.extend(mine)
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies


def measure(name: str, index_config: dict, make_target, requests: int, folder: Path) -> bool:
    """Serve ``index_config``, then time the web and the direct search for every kind and concurrency."""
    config = folder / f"{name}.yaml"
    config.write_text(yaml.safe_dump({"start": [{"url": "file:///srv/corpus"}], "index": index_config}))
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "beamtrawl.pipeline.cli", "serve", "--config", str(config),
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ok = True
    try:
        _wait(port, server)
        print(f"\n{name}: /api/search (page of {PAGE}, facets, total) against search_page directly, in blocks "
              f"of clients x {BLOCK_ROUNDS} requests alternating web, direct, direct, web; {requests} requests "
              f"per side and row; client: one keep-alive socket per thread; load average "
              f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())} (cores: {os.cpu_count()})")
        print(f"{'query':<10} {'clients':>7} {'web p50':>9} {'web p95':>9} {'direct p50':>11} {'direct p95':>11} "
              f"{'ratio p50':>9}")
        missed = []
        for kind, texts in queries().items():
            for clients in (1, 8):
                web_p50, web_p95, direct_p50, direct_p95 = compare(port, texts, clients, requests, make_target)
                ratio = web_p50 / direct_p50
                if ratio > TARGET:
                    missed.append(f"{kind}/{clients}")
                print(f"{kind:<10} {clients:>7} {web_p50:>9.1f} {web_p95:>9.1f} {direct_p50:>11.1f} "
                      f"{direct_p95:>11.1f} {ratio:>8.2f}x{'' if ratio <= TARGET else f'  (target <= {TARGET}x missed)'}")
        print(f"{name}: target web/direct <= {TARGET}x at p50 " + (f"missed in {len(missed)} of 6 rows ({', '.join(missed)})"
                                                            if missed else "met in all 6 rows")
              + f"; load average now {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
        # The check: the web answer is the direct answer.
        text = queries()["filtered"][0]
        page = make_target().search_page(parse_query(text), PAGE, 0, "relevance", FACETS)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        connection.request("GET", "/api/search?" + urllib.parse.urlencode({"q": text}))
        answer = json.loads(connection.getresponse().read())
        if answer["total"] != page.total or [h["id"] for h in answer["hits"]] != [h.id for h in page.hits]:
            print(f"CHECK FAILED: /api/search and search_page differ for {text!r}")
            ok = False
    finally:
        server.terminate()
        server.wait(10)
    return ok


def compare(port: int, texts: list[str], clients: int, requests: int, make_target) -> tuple[float, ...]:
    """(web p50, web p95, direct p50, direct p95) in ms of ``requests`` searches of ``texts`` in rotation
    from ``clients`` threads on each side: through /api/search and through ``search_page`` in this
    process, in alternating blocks."""
    connections = [Client(port) for _ in range(clients)]
    targets = [make_target() for _ in range(clients)]

    def web(c: int, k: int) -> None:
        path = "/api/search?" + urllib.parse.urlencode({"q": texts[k % len(texts)]})
        status, body = connections[c].get(path)
        if status != 200:
            raise SystemExit(f"{path}: {status} {body[:200]!r}")

    def direct(c: int, k: int) -> None:  # what the server's search thread does for an anonymous searcher
        targets[c].search_page(parse_query(texts[k % len(texts)], (), ()), PAGE, 0, "relevance", FACETS)

    block = clients * BLOCK_ROUNDS
    try:
        for connection in connections:
            connection.ready()
        for side in (web, direct):  # warm both, every connection and target: cold pages are read once
            run_threads(clients, clients * len(texts), side, 0)
        times: dict = {web: [], direct: []}
        for b, first in enumerate(range(0, requests, block)):
            for side in ((web, direct) if b % 2 == 0 else (direct, web)):
                if side is web:
                    for connection in connections:
                        connection.ready()
                times[side] += run_threads(clients, min(block, requests - first), side, first)
        return (*percentiles(times[web]), *percentiles(times[direct]))
    finally:
        for connection in connections:
            connection.close()
        for target in targets:
            target.close()


class Client:
    """One keep-alive HTTP/1.1 connection on a plain socket: a GET written at once, the answer read by its
    Content-Length (the server's answers to /api/search have one)."""

    def __init__(self, port: int):
        self.port = port
        self.sock: socket.socket | None = None
        self.used = 0.0

    def ready(self) -> None:
        """A new connection if there is none or it was idle long enough for the server to close it."""
        if self.sock is None or time.monotonic() - self.used > IDLE:
            self.close()
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=120)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.used = time.monotonic()

    def get(self, path: str) -> tuple[int, bytes]:
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += self._recv()
        head, _, body = data.partition(b"\r\n\r\n")
        length = re.search(rb"(?im)^content-length:[ \t]*([0-9]+)", head)
        if not length:
            raise SystemExit(f"an answer without Content-Length: {head[:200]!r}")
        while len(body) < int(length[1]):
            body += self._recv()
        self.used = time.monotonic()
        return int(head[9:12]), body

    def _recv(self) -> bytes:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise SystemExit("the server closed a connection during a request")
        return chunk

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(port: int, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"beamtrawl serve ended: {server.stderr.read().decode()[-500:]}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            connection.request("GET", "/health")
            if connection.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("beamtrawl serve did not answer /health")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=120, help="requests per kind, concurrency and side")
    parser.add_argument("--url", help="an OpenSearch node to use instead of starting one")
    parser.add_argument("--only", choices=("embedded", "opensearch"), help="measure one index only")
    parser.add_argument("--tiny", action="store_true", help="1,000 documents, 16 requests: the test suite's run")
    args = parser.parse_args()
    if args.tiny:
        args.docs, args.requests = 1000, 16
    sys.stdout.reconfigure(line_buffering=True)  # each figure as it is measured, also into a file
    ok = True
    with tempfile.TemporaryDirectory(prefix="serve-bench-") as work:
        folder = Path(work)
        path = str(folder / "index.sqlite")
        if args.only != "opensearch":
            seconds = write(EmbeddedIndex(path), args.docs)
            print(f"embedded index: {args.docs:,} documents written through EmbeddedIndex.upsert in {seconds:.1f} s")
            ok &= measure("embedded", {"path": path}, lambda: EmbeddedIndex(path), args.requests, folder)
        if args.only != "embedded":
            ok &= _opensearch(args, folder)
    return 0 if ok else 1


def _opensearch(args, folder: Path) -> bool:
    from beamtrawl.transforms.index.opensearch import OpenSearchIndex

    def run(url: str) -> bool:
        name = f"serve-bench-{int(time.time())}"
        seconds = write(OpenSearchIndex(url, name), args.docs)
        OpenSearchIndex(url, name).client.indices.refresh(index=name)
        print(f"\nOpenSearch: {args.docs:,} documents written through OpenSearchIndex.upsert in {seconds:.1f} s")
        try:
            return measure("opensearch", {"url": url, "name": name}, lambda: OpenSearchIndex(url, name),
                           args.requests, folder)
        finally:
            OpenSearchIndex(url, name).client.indices.delete(index=f"{name}-bt-*", ignore_unavailable=True)

    if args.url:
        return run(args.url)
    sys.path.insert(0, str(REPO))  # tests/ is not installed
    from tests.servers.opensearch import running_node

    with tempfile.TemporaryDirectory(prefix="serve-bench-os-", dir="/tmp") as node, running_node(node) as url:
        return run(url)


if __name__ == "__main__":
    sys.exit(main())
