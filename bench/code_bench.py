"""Source code benchmark: what the ``code`` preparator (a tree-sitter parse for title and headlines) costs
over the plain ``text`` preparator it replaced for source files, measured in one run on the same files.

Run from the repository root::

    PYTHONPATH=$PWD python bench/code_bench.py [--limit 400] [--tiny] [FILE_OR_FOLDER ...]

Without arguments it takes the ``.py`` files of the running Python's standard library (real code, a few
hundred files); give folders of Go, Rust, Java, C or JavaScript to measure those. Each file is read once
(not timed), then prepared by ``prepare_text`` and by ``prepare_code``, each timed over all files, after
one warm-up file (the grammar's load is start-up, not per-file work). Prints files, megabytes, wall and
CPU seconds (on a shared machine the wall clock mostly measures the others), megabytes and files per
CPU second of both, the ratio code/text (the baseline is ``text``, on the same files), and the headlines
found. ``--tiny`` (tests/test_benchmarks.py runs it) takes 20 files.
"""

from __future__ import annotations

import argparse
import sysconfig
import time
from pathlib import Path

from beamtrawl.transforms.preparators.code import URL_PATTERN, prepare_code
from beamtrawl.transforms.preparators.text import prepare_text


def _files(paths: list[str], limit: int) -> list[Path]:
    roots = [Path(p) for p in paths] or [Path(sysconfig.get_paths()["stdlib"])]
    found = []
    for root in roots:
        candidates = [root] if root.is_file() else sorted(root.rglob("*"))
        found.extend(p for p in candidates if p.is_file() and URL_PATTERN.search(p.name))
    return found[:limit]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--limit", type=int, default=400)
    parser.add_argument("--tiny", action="store_true", help="20 files: the test suite's run")
    args = parser.parse_args()
    if args.tiny:
        args.limit = 20
    files = [(p.read_bytes(), f"file://{p}") for p in _files(args.paths, args.limit)]
    if not files:
        print("no source files found")
        return 1
    prepare_code(*files[0], "text/plain", {})  # load the grammar: start-up, not per-file work
    megabytes = sum(len(data) for data, _ in files) / 1e6
    figures, headlines = {}, 0
    for name, prepare in (("text", prepare_text), ("code", prepare_code)):
        wall, cpu = time.perf_counter(), time.process_time()
        for data, url in files:
            prepared = prepare(data, url, "text/plain", {})
            headlines += len(prepared.headlines) if name == "code" else 0
        figures[name] = (time.perf_counter() - wall, time.process_time() - cpu)
    print(f"{len(files)} files, {megabytes:.1f} MB, {headlines} headlines")
    for name, (wall, cpu) in figures.items():
        print(f"{name:5s} {wall:7.2f} s wall {cpu:7.2f} s CPU  {megabytes / cpu:8.2f} MB/s  "
              f"{len(files) / cpu:8.1f} files/s of CPU")
    print(f"ratio code/text (CPU time): {figures['code'][1] / figures['text'][1]:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
