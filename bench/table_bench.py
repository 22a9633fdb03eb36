"""The Delta table target against the embedded index, and its sink against ``write_deltalake``.

Run from the repository root (beamtrawl installed with its test extra)::

    python bench/table_bench.py [--files 20000] [--workers 2] [--keep DIR] [--seed 7] [--tiny]

On the tree of bench/crawl_bench.py (generation not timed) it measures, in one run:

(a) full crawl: ``beamtrawl crawl`` into a new Delta table and into a new embedded index, whole
    processes, documents per second and the ratio table/embedded;
(b) the unchanged re-crawl of both (the table's must commit nothing: no new version);
(c) the sink's write throughput: the table's rows as index documents, written in one process through
    the target's own worker and driver code (``upsert`` per batch of 500 = one Parquet file, then
    ``commit`` of the staged files) against ``to_arrow`` + one ``write_deltalake`` of the same
    documents into a new table (target: at least 0.8x);
(d) size on disk: the table's folder against the embedded index's file.

Both crawls must hold the same documents (ids and content hashes), else it fails: each side of a ratio
gets the same work. ``--tiny`` (tests/test_benchmarks.py runs it): 100 files. Exit code 0 when the
figures were measured (targets may be missed), 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from beamtrawl.transforms.index.table import DeltaIndex, from_arrow, to_arrow
from crawl_bench import generate_tree

REPO = Path(__file__).resolve().parent.parent


def crawl(config: Path, workers: int) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "beamtrawl.pipeline.cli", "crawl", str(config), "--quiet",
                           f"--direct_num_workers={workers}", "--report", "-"], capture_output=True, text=True,
                          cwd=REPO, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"crawl of {config} failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds, json.loads(done.stdout)


def size_of(path: Path) -> int:
    if path.is_file():
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))  # -wal, -shm too
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def sink_throughput(docs, work: Path) -> tuple[float, float]:
    """(seconds of the sink, seconds of to_arrow + write_deltalake) for the same documents."""
    from deltalake import write_deltalake

    target = DeltaIndex(str(work / "sink.delta"))
    started = time.perf_counter()
    target.prepare()
    for start in range(0, len(docs), 500):
        target.upsert(docs[start:start + 500])
    target.commit(target.take_staged())
    target.finish(succeeded=True)
    sink = time.perf_counter() - started

    started = time.perf_counter()
    write_deltalake(str(work / "baseline.delta"), to_arrow(docs, "baseline"), mode="error")
    baseline = time.perf_counter() - started
    return sink, baseline


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temporary folder)")
    parser.add_argument("--tiny", action="store_true", help="100 files: the test suite's run")
    args = parser.parse_args()
    if args.tiny:
        args.files = 100
    work = args.keep or Path(tempfile.mkdtemp(prefix="table-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        tree = work / "tree"
        if not tree.exists():
            generate_tree(tree, args.files, args.seed)
        configs = {}
        for name, index in (("embedded", {"path": "index.sqlite"}), ("table", {"table": "docs.delta"})):
            configs[name] = work / f"{name}.yaml"
            configs[name].write_text(yaml.safe_dump({"start": [{"url": f"file://{tree}"}], "index": index}))
        full, again = {}, {}
        for name in ("embedded", "table"):
            full[name] = crawl(configs[name], args.workers)
        version = _version(work / "docs.delta")
        for name in ("embedded", "table"):
            again[name] = crawl(configs[name], args.workers)
        table_docs = [from_arrow(row) for row in _table(work / "docs.delta").to_pylist()]
        embedded = dict(sqlite3.connect(work / "index.sqlite").execute("SELECT id, content_hash FROM docs"))
        if {d.id: d.content_hash for d in table_docs} != embedded or len(embedded) != args.files:
            print("FAIL: the table and the embedded index hold different documents")
            return 1
        if _version(work / "docs.delta") != version or again["table"][1]["counts"]["read"] != 0:
            print("FAIL: the unchanged re-crawl read or committed something")
            return 1
        sink, baseline = sink_throughput(table_docs, work)
        rows = [
            ("full crawl, table", f"{full['table'][0]:.1f} s", f"{args.files / full['table'][0]:.0f} docs/s"),
            ("full crawl, embedded", f"{full['embedded'][0]:.1f} s", f"{args.files / full['embedded'][0]:.0f} docs/s"),
            ("  table / embedded (time)", f"{full['table'][0] / full['embedded'][0]:.2f}x", ""),
            ("unchanged re-crawl, table", f"{again['table'][0]:.1f} s", "no new version"),
            ("unchanged re-crawl, embedded", f"{again['embedded'][0]:.1f} s", ""),
            ("sink: upsert x500 + commit", f"{sink:.2f} s", f"{len(table_docs) / sink:.0f} docs/s"),
            ("to_arrow + write_deltalake", f"{baseline:.2f} s", f"{len(table_docs) / baseline:.0f} docs/s"),
            ("  sink throughput / write_deltalake", f"{baseline / sink:.2f}x",
             "PASS (>= 0.8x)" if baseline / sink >= 0.8 else "MISS (< 0.8x)"),
            ("size on disk, table", f"{size_of(work / 'docs.delta') / 2**20:.1f} MiB", ""),
            ("size on disk, embedded", f"{size_of(work / 'index.sqlite') / 2**20:.1f} MiB", ""),
            ("  table / embedded (size)", f"{size_of(work / 'docs.delta') / size_of(work / 'index.sqlite'):.2f}x", ""),
        ]
        print(f"{args.files:,} files, {args.workers} workers, DirectRunner")
        for row in rows:
            print(f"{row[0]:<38} {row[1]:>10}  {row[2]}")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def _table(path: Path) -> pa.Table:
    from deltalake import DeltaTable

    return DeltaTable(str(path)).to_pyarrow_table()


def _version(path: Path) -> int:
    from deltalake import DeltaTable

    return DeltaTable(str(path)).version()


if __name__ == "__main__":
    sys.exit(main())
