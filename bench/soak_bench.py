"""Soak: a large tree crawled once, then re-crawled unchanged many times; every re-crawl must delete nothing.

An unchanged re-crawl of a million files once deleted 54,021 of them with exit 0 (issue 33): entries lost
between the listing and the freshness join. This runs that case and prints, for each crawl, its exit code,
the counts of its summary line, its wall seconds and the peak RSS of its process tree, against the time of
``find`` listing the same tree (the floor, measured in the same run)::

    python bench/soak_bench.py [--files 1000000] [--rounds 5] [--load 2] [--workdir DIR] [--beamtrawl EXE]
    python bench/soak_bench.py --tiny        # 2,000 files, 2 re-crawls (the test suite runs this)
    python bench/soak_bench.py --workdir DIR --reuse [--rounds 5]   # re-crawls only, of DIR's index

The tree is folders of 100 small text files, three levels deep (a million files: 10 × 100 × 10 folders),
made once in the work folder and kept for the next run. ``--load N`` runs N busy loops beside the crawls,
as the issue's second reproduction did. ``--beamtrawl`` names the command to run (another checkout's, to
compare). Exit code 1 when a re-crawl deleted anything, or discovered fewer files than the tree holds without
listing the rest again (``listed_again`` in its report: the containers whose entries the runner lost, crawled
again in a second pass) or a "lost in transit" line, or exited other than 0 (or 1 with such lines: entries
lost in both passes, reported and kept).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crawl_bench import measure, time_find

PER_FOLDER = 100


def build_tree(root: Path, files: int) -> int:
    """The tree for ``files`` (rounded to whole folders of 100); made once, then reused. Returns its size."""
    folders = max(1, files // PER_FOLDER)
    marker = root.with_name(f"{root.name}-{folders * PER_FOLDER}.complete")
    if not marker.exists():
        for i in range(folders):
            folder = root / f"t{i // 1000}" / f"m{i // 10 % 100:02d}" / f"l{i % 10}"
            folder.mkdir(parents=True, exist_ok=True)
            for f in range(PER_FOLDER):
                (folder / f"f{f:02d}.txt").write_text(f"soak word{i} file{f}\n")
        marker.touch()
    return folders * PER_FOLDER


def crawl(beamtrawl: str, config: Path, log: Path) -> dict:
    """One crawl: its exit code, summary counts, wall seconds and peak RSS of its process tree."""
    run = measure([beamtrawl, "crawl", str(config)], log)
    text = log.read_text(errors="replace")
    summary = re.search(r"^beamtrawl-summary (.*)$", text, re.MULTILINE)
    counts = dict(field.split("=", 1) for field in summary.group(1).split()) if summary else {}
    report = config.parent / "soak.report.json"
    written = json.loads(report.read_text()) if report.exists() else {}
    lost = sum(1 for p in written.get("problems", []) if "lost in transit" in p["reason"])  # the terminal shows ten
    again = written.get("listed_again", {})
    return {"exit": run["exit"], "counts": counts, "seconds": run["seconds"], "peak": run["peak_rss"], "lost": lost,
            "again": again.get("containers", 0), "again_found": again.get("counts", {}).get("accepted", 0)}


def _busy() -> None:
    while True:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5, help="unchanged re-crawls after the first crawl")
    parser.add_argument("--load", type=int, default=0, help="busy loops running beside the crawls")
    parser.add_argument("--workdir", type=Path, help="where the tree and index live (default: a temporary folder)")
    parser.add_argument("--beamtrawl", default=str(Path(sys.executable).with_name("beamtrawl")))
    parser.add_argument("--tiny", action="store_true", help="2,000 files, 2 re-crawls: that it runs, not a figure")
    parser.add_argument("--reuse", action="store_true",
                        help="re-crawl the index an earlier run left in --workdir (no first crawl)")
    args = parser.parse_args(argv)
    if args.tiny:
        args.files, args.rounds = 2_000, 2
    work = args.workdir or Path(tempfile.mkdtemp(prefix="beamtrawl-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    build_tree(work / "tree", args.files)
    total = sum(len(files) for _, _, files in os.walk(work / "tree"))  # what find counts: every file is expected
    index = work / "soak.sqlite"
    for stale in () if args.reuse else work.glob("soak.*"):
        stale.unlink() if stale.is_file() else shutil.rmtree(stale)
    config = work / "soak.yaml"
    config.write_text(f'start: [{{url: "{(work / "tree").as_uri()}"}}]\nindex: {{path: {index}}}\n')
    floor = time_find(work / "tree")
    print(f"tree: {total:,} files in {total // PER_FOLDER:,} folders; find lists it in {floor:.2f} s; "
          f"load: {args.load} busy loops; {args.beamtrawl}")
    burners = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(args.load)]
    for burner in burners:
        burner.start()
    bad = []
    try:
        for n in range(1 if args.reuse else 0, args.rounds + 1):
            what = "first crawl" if n == 0 else f"re-crawl {n}"
            result = crawl(args.beamtrawl, config, work / f"crawl-{n}.log")
            c = result["counts"]
            print(f"{what:12} exit={result['exit']} discovered={c.get('discovered', '?')} new={c.get('new', '?')} "
                  f"unchanged={c.get('unchanged', '?')} deleted={c.get('deleted', '?')} kept={c.get('kept', '?')} "
                  f"problems={c.get('problems', '?')}  {result['seconds']:.1f} s ({result['seconds'] / floor:.0f}× find)"
                  f"  peak {result['peak'] / 2**30:.2f} GiB"
                  + (f"  (the runner lost entries: {result['again']} containers listed again, "
                     f"{result['again_found']:,} files found there)" if result["again"] else "")
                  + (f"  ({result['lost']} listings lost in transit, reported; nothing of them deleted)"
                     if result["lost"] else ""), flush=True)
            silent = c.get("discovered") != str(total) and not result["lost"] and not result["again"]
            if result["exit"] not in (0, 1) or (result["exit"] == 1 and not result["lost"]) or silent \
                    or (n and c.get("deleted") != "0"):
                bad.append(what)
    finally:
        for burner in burners:
            burner.kill()
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS: every re-crawl deleted nothing, and any entry lost in transit was listed again or reported"
          if not bad else
          f"FAIL: {', '.join(bad)} (logs in {work})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
