"""Real-world crawl figures: the corpus of tests/test_real_world_corpus.py (files ten Debian packages ship).

Run from the repository root (beamtrawl installed; apt-get and dpkg-deb fetch the corpus once)::

    python bench/real_world_bench.py [--workers 2] [--blacklist REGEX] [--package NAME ...] [--tiny]

It crawls the cached tree (tests/real_corpus.py) into a fresh embedded index, then again unchanged,
each timed as a whole process, and prints: files and symbolic links on disk, documents in the index,
the crawl's exit code and counts, documents and failures by MIME type (a failure at discovery has no
document: its MIME type is shown as ``-``), the time of both crawls, and their ratio to a baseline
measured in the same run: one Python process walking the same tree and reading every file's bytes.
``--blacklist`` leaves out files (e.g. ``'.*/testtar\\.tar'``) to see the figures of the rest when one
file still stops the crawl. ``--package`` crawls only that package's folder of the tree (repeatable);
``--tiny`` (tests/test_benchmarks.py runs it) crawls bash-doc and r-cran-readxl (about 125 files: PDF,
HTML, spreadsheets).

Exit code 0 when the figures were measured, 1 when a crawl did not produce a report.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.real_corpus import PACKAGES, corpus

TINY = ("bash-doc", "r-cran-readxl")


def _tree(tree: Path, packages: list[str]) -> Path:
    """The corpus, or a copy of the chosen packages' folders (links kept as links; not timed), so that the
    crawl and the baseline read just those, the way the full run reads all of them."""
    if not packages:
        return tree
    unknown = [p for p in packages if not (tree / p).is_dir()]
    if unknown:
        raise SystemExit(f"not in the corpus: {', '.join(unknown)} (it has {', '.join(sorted(PACKAGES))})")
    chosen = Path(tempfile.mkdtemp(prefix="beamtrawl-real-tree-"))
    for package in packages:
        shutil.copytree(tree / package, chosen / package, symlinks=True)
    return chosen


def _read_everything(tree: Path) -> tuple[int, int, float]:
    """The baseline: walk the tree and read every regular file once; (files, links, seconds)."""
    started, files, links = time.perf_counter(), 0, 0
    for folder, _, names in os.walk(tree):
        for name in names:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                links += 1
                continue
            with open(path, "rb") as handle:
                while handle.read(1 << 20):
                    pass
            files += 1
    return files, links, time.perf_counter() - started


def _crawl(config: Path, workers: int) -> tuple[float, int, dict]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "beamtrawl.pipeline.cli", "crawl", str(config),
                           f"--direct_num_workers={workers}"], cwd=REPO, capture_output=True, text=True,
                          check=False)
    seconds = time.perf_counter() - started
    report_file = config.parent / "index.report.json"
    report = json.loads(report_file.read_text(encoding="utf-8")) if report_file.exists() else {}
    if not report:
        print(done.stdout[-2000:], done.stderr[-2000:], sep="\n")
    return seconds, done.returncode, report


def _by_mime(index: Path, report: dict, tree: Path) -> list[tuple[str, int, int, int]]:
    """(MIME type, documents, failed, metadata only) for every type, most documents first."""
    with sqlite3.connect(index) as db:
        mime_of = dict(db.execute("SELECT url, mimetype FROM docs"))
    documents = collections.Counter(mime_of.values())
    kinds: dict[str, collections.Counter] = {"failed": collections.Counter(),
                                             "metadata_only": collections.Counter()}
    for problem in report.get("problems", []):
        if problem["kind"] in kinds:
            kinds[problem["kind"]][mime_of.get(problem["url"], "-")] += 1
    types = set(documents) | set(kinds["failed"]) | set(kinds["metadata_only"])
    rows = [(t, documents[t], kinds["failed"][t], kinds["metadata_only"][t]) for t in types]
    return sorted(rows, key=lambda row: (-row[1], row[0]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--blacklist", action="append", default=[], metavar="REGEX")
    parser.add_argument("--package", action="append", default=[], metavar="NAME",
                        help="crawl only this package of the corpus (repeatable)")
    parser.add_argument("--tiny", action="store_true", help="two small packages: the test suite's run")
    args = parser.parse_args()
    if args.tiny:
        args.package = args.package or list(TINY)
    tree = _tree(corpus(), args.package)
    try:
        return _measure(tree, args)
    finally:
        if args.package:
            shutil.rmtree(tree, ignore_errors=True)


def _measure(tree: Path, args) -> int:
    files, links, baseline = _read_everything(tree)
    with tempfile.TemporaryDirectory(prefix="beamtrawl-real-") as folder:
        config = Path(folder) / "crawl.yaml"
        url = "file://" + str(tree)
        settings = {"start": [{"url": url, "parse": True, "index": False}], "whitelist": [{"prefix": url}],
                    "blacklist": [{"regex": regex} for regex in args.blacklist],
                    "index": {"path": str(Path(folder) / "index.sqlite")}}
        config.write_text(json.dumps(settings), encoding="utf-8")
        full, code, report = _crawl(config, args.workers)
        if not report:
            print(f"the crawl exited {code} without a report")
            return 1
        rows = _by_mime(Path(folder) / "index.sqlite", report, tree)
        again, code_again, report_again = _crawl(config, args.workers)
    counts, counts_again = report["counts"], report_again.get("counts", {})
    print(f"beamtrawl real-world crawl: {tree} ({args.workers} workers, {os.cpu_count()} CPUs)")
    print(f"  files on disk: {files:,} regular files, {links:,} symbolic links")
    print(f"  documents in the index: {report.get('documents_in_index', 0):,}; exit code {code}; "
          f"fatal: {report.get('fatal') or 'none'}")
    print("  counts: " + ", ".join(f"{k} {counts[k]:,}" for k in
                                   ("written", "failed", "metadata_only", "fallback", "symlink_skipped")))
    print(f"\n  {'MIME type':<72} {'documents':>9} {'failed':>7} {'metadata only':>13}")
    for mime, documents, failed, metadata_only in rows:
        print(f"  {mime[:72]:<72} {documents:>9,} {failed:>7,} {metadata_only:>13,}")
    print(f"  {'total':<72} {sum(r[1] for r in rows):>9,} {sum(r[2] for r in rows):>7,} "
          f"{sum(r[3] for r in rows):>13,}")
    print(f"\n  full crawl:       {full:7.1f} s   {files / full:6.0f} files/s")
    print(f"  unchanged crawl:  {again:7.1f} s   exit code {code_again}, read {counts_again.get('read')}, "
          f"unchanged {counts_again.get('unchanged')}")
    print(f"  baseline (one process reads every file): {baseline:.2f} s; "
          f"full crawl / baseline {full / baseline:.0f}x, unchanged crawl / full crawl {again / full:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
