"""Load benchmark: a crawl of 200,000 files completes with bounded memory and loses no document.

Run from the repository root (beamtrawl installed, psutil present)::

    python bench/load_bench.py [--files 200000] [--workers 2] [--targets embedded,opensearch] [--keep DIR]
                               [--url OPENSEARCH_URL] [--tiny]

It generates the tree of bench/crawl_bench.py (small .txt and .html files) twice: the large one and a
baseline of a tenth of its size. It crawls both into a fresh embedded index and/or a fresh alias on an
OpenSearch node started from tests/servers/opensearch.py (``--targets``) and prints, per
target: wall seconds, documents per second, the peak RSS summed over the crawl's process tree (driver
and workers, sampled every 0.1 s), the ratio of that peak to the baseline's (bounded memory means the
ratio stays well below the tenfold growth of the corpus), and the number of documents in the index, which
must equal the number of files; then the same of an unchanged re-crawl of each tree (it must read
nothing and find every file unchanged), and for the embedded index its ratio to the floor of bench/crawl_bench.py
(a scandir walk with stat plus reading ``url, mtime_ns, size`` from the index, in this process). The baseline is the crawl of the small tree, by the same command into
the same kind of index. ``--url`` uses that OpenSearch node instead of starting one (its aliases are
named per run and deleted at the end). ``--tiny`` (tests/test_benchmarks.py runs it, with the suite's
node as ``--url``): 300 files, and 30 for the baseline.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

from crawl_bench import REPO, generate_tree, mib, roles, run_measured, time_floor

sys.path.insert(0, str(REPO))

def write_config(work: Path, tree: Path, name: str, index: dict) -> Path:
    config = work / f"{name}.yaml"
    config.write_text(json.dumps({"start": [{"url": str(tree)}], "index": index,
                                  "report": str(work / f"{name}.report.json")}))
    return config


def count(index: dict) -> int:
    if "path" in index:
        from beamtrawl.transforms.index.sqlite import EmbeddedIndex
        target = EmbeddedIndex(index["path"])
    else:
        from beamtrawl.transforms.index.opensearch import OpenSearchIndex
        target = OpenSearchIndex(index["url"], index["name"])
    try:
        return target.count()
    finally:
        target.close()


def crawl(work: Path, tree: Path, name: str, index: dict, files: int, workers: int) -> dict:
    """The full crawl of ``tree`` into a fresh ``index``, then its unchanged re-crawl (``run["again"]``)."""
    config = write_config(work, tree, name, index)
    beamtrawl = shutil.which("beamtrawl") or sys.exit("the beamtrawl command is not on PATH (pip install -e .)")
    runs = []
    for log in (f"{name}.log", f"{name}-again.log"):
        run = run_measured([beamtrawl, "crawl", str(config), f"--direct_num_workers={workers}"], work / log)
        report = json.loads((work / f"{name}.report.json").read_text())
        run.update(count=count(index), files=files, failed=report["counts"].get("failed", 0),
                   read=report["counts"].get("read", 0), unchanged=report["counts"].get("unchanged", 0))
        runs.append(run)
    runs[0]["again"] = runs[1]
    if "path" in index:  # the floor of an unchanged re-crawl (issue 27, target 1: at most 4x at a million files)
        runs[1]["floor"] = time_floor(tree, Path(index["path"]))
    return runs[0]


def measure(work: Path, trees: dict[str, tuple[Path, int]], target: str, index_for, workers: int) -> bool:
    runs = {size: crawl(work, tree, f"{target}-{size}", index_for(size), files, workers)
            for size, (tree, files) in trees.items()}
    ratio = runs["large"]["peak_rss"] / runs["baseline"]["peak_rss"]
    ok = True
    print(f"\n{target}")
    for run in runs.values():
        lost = run["files"] - run["count"]
        ok &= lost == 0 and run["failed"] == 0
        print(f"  {run['files']:>8,} files: {run['seconds']:7.1f} s, {run['files'] / run['seconds']:6,.0f} docs/s, "
              f"peak RSS {mib(run['peak_rss'])} over {run['procs']} processes ({roles(run)}), PSS "
              f"{mib(run['peak_pss'])}; index holds {run['count']:,} "
              f"({'none lost' if lost == 0 else f'{lost} LOST'}, {run['failed']} failed)")
        again = run["again"]
        same = again["read"] == 0 and again["unchanged"] == run["files"] and again["count"] == run["files"]
        ok &= same
        print(f"  {'':>8} unchanged re-crawl: {again['seconds']:7.1f} s ({again['cpu']:.1f} CPU s), peak RSS "
              f"{mib(again['peak_rss'])} ({roles(again)}), PSS {mib(again['peak_pss'])}; read {again['read']}, unchanged {again['unchanged']:,}"
              f"{'' if same else ' (WRONG: want read 0, every file unchanged)'}")
        if "floor" in again:
            floor, floor_cpu = again["floor"]
            print(f"  {'':>8} floor (scandir walk with stat + url, mtime_ns, size from the index; fastest of 3): "
                  f"{floor:.2f} s ({floor_cpu:.2f} CPU s): re-crawl / floor {again['seconds'] / floor:.1f}x wall, "
                  f"{again['cpu'] / floor_cpu:.1f}x CPU (issue 27: at most 4x at a million files)")
    small, large = runs["baseline"], runs["large"]
    growth = (large["peak_rss"] - small["peak_rss"]) / (large["files"] - small["files"]) * 10_000
    print(f"  peak memory ratio {large['files']:,} / {small['files']:,} files: {ratio:.2f}x for "
          f"{large['files'] / small['files']:.0f}x the documents ({mib(growth)} more per 10,000 documents)")
    print(f"  unchanged re-crawl: peak memory ratio {large['again']['peak_rss'] / small['again']['peak_rss']:.2f}x "
          f"({mib(small['again']['peak_rss'])} -> {mib(large['again']['peak_rss'])})")
    return ok


@contextlib.contextmanager
def _node(url: str | None, folder: Path):
    """The node at ``url``, or one of tests/servers/opensearch.py started in ``folder``."""
    if url:
        yield url
        return
    from tests.servers.opensearch import running_node
    with running_node(folder) as started:
        yield started


def _delete(url: str, run: str) -> None:
    """Remove this run's indexes and index templates from a node that outlives it."""
    from opensearchpy import OpenSearch

    client = OpenSearch(hosts=[url], timeout=60)
    client.indices.delete(index=f"load-*-{run}-bt-*", ignore_unavailable=True)
    for template in client.indices.get_index_template().get("index_templates", []):
        if f"-{run}-" in template["name"]:  # prepare() makes one per target name
            client.indices.delete_index_template(name=template["name"])
    client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--targets", default="embedded,opensearch",
                        help="comma-separated: embedded, opensearch (default: both)")
    parser.add_argument("--keep", help="work in this folder and keep it")
    parser.add_argument("--url", help="an OpenSearch node to use instead of starting one")
    parser.add_argument("--tiny", action="store_true", help="300 files: the test suite's run")
    args = parser.parse_args()
    if args.tiny:
        args.files = 300
    work = Path(args.keep or tempfile.mkdtemp(prefix="beamtrawl-load-"))
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)
    try:
        trees = {}
        for size, files in (("baseline", args.files // 10), ("large", args.files)):
            tree = work / f"tree-{files}"
            if not tree.exists():
                started = time.perf_counter()
                generate_tree(tree, files, seed=7)
                print(f"generated {files:,} files in {time.perf_counter() - started:.0f} s (not timed)")
            trees[size] = (tree, files)
        targets, ok = args.targets.split(","), True
        if "embedded" in targets:
            ok &= measure(work, trees, "embedded index", lambda size: {"path": str(work / f"{size}.sqlite")},
                          args.workers)
        if "opensearch" in targets:
            with _node(args.url, work / "node") as url:
                run = uuid.uuid4().hex[:8]
                try:
                    ok &= measure(work, trees, "OpenSearch",
                                  lambda size: {"url": url, "name": f"load-{size}-{run}"}, args.workers)
                finally:
                    _delete(url, run)
        sys.exit(0 if ok else 1)
    finally:
        if not args.keep:
            with contextlib.suppress(OSError):
                shutil.rmtree(work)


if __name__ == "__main__":
    main()
