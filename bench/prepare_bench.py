"""Preparation benchmark: documents and megabytes per second per format family through beamtrawl's
Prepare stage, against the same preparator callables in a plain loop, measured in one run.

Run from the repository root::

    PYTHONPATH=$PWD python bench/prepare_bench.py [--variants 75] [--keep DIR] [--tiny]

It generates a mixed corpus with tests/format_corpus.py (every format the preparators read, made by
reportlab, python-docx, openpyxl, python-pptx, the email package, zipfile/tarfile, sox and mutagen,
plus the LibreOffice samples of tests/data/samples; ``--variants`` copies with their own words, 27
documents each, 75 → 2,025 documents; generation is not timed). Then, for the whole corpus and for
each format family on its own:

- **loop**: one process of its own, no Beam: for each file, read its bytes, ``MimeSniffer``, ``Chain.run`` over
  the built-in preparators (the same callables, in this process), ``make_document``.
- **beam×W** for W = 1 and 2: a real Beam pipeline (FnApiRunner, multi-processing, as
  ``runners/direct.py`` sets it up, in a process of its own whose workers are forked from it as a crawl's
  command forks them) of ``Create(entries) | Prepare(...)``: the same reading, sniffing,
  preparators and ``make_document``, plus what the stage adds: routing per family and the isolation of
  preparators in a child process per DoFn (``preparation.isolate``, the default). Timed from
  ``Pipeline.run`` to the end, worker and child start-up included; the documents made are counted
  and must equal the loop's.

Each is measured in wall seconds and in CPU seconds (the loop's process; the pipeline's process with its
workers and their preparing children): on a shared machine the CPU figures move far less with the load.

The peer gets the same work: the same files, the same preparators, each document read and prepared
once. Note what beam×1 is: one Beam worker process plus its preparing child; the worker reads and sniffs
the next documents while the child prepares (a few wait in its pipe), so on two or more cores it can match the loop
despite Beam's per-element and start-up costs. Start-up dominates the per-family runs (75–225
documents): read their loop figures as the libraries' own speed. Targets: beam×1 ≥ 0.9× the loop, beam×2 ≥ 1.6× the loop.
``--tiny`` (tests/test_benchmarks.py runs it): one copy (27 documents), the mixed corpus only. Exit code 0
when measured (targets may be missed), 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import apache_beam as beam
import format_corpus
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from beamtrawl.runners import direct, forked_workers
from beamtrawl.transforms.preparators import BUILTIN, Chain, Prepared
from beamtrawl.transforms.preparators.isolation import Bounds
from beamtrawl.transforms.preparators.mime import MimeSniffer
from beamtrawl.transforms.prepare import Prepare, PrepareOptions, make_document
from beamtrawl.transforms.records import Entry, RawDocument, use_row_coders
from beamtrawl.transforms.sources.file import path_to_url
from beamtrawl.transforms.urls import doc_id

MAX_FILE_SIZE = 100 * 1024**2
MAX_SUMMARY = 250_000
FINGERPRINT = "bench"


def generate(root: Path, variants: int) -> dict[str, list[Path]]:
    """{family: files}; one sox tone per audio format, tagged per copy."""
    audio = format_corpus._Audio()
    families: dict[str, list[Path]] = {}
    for variant in range(variants):
        docs = format_corpus.documents(variant, audio)
        format_corpus.write(root, docs)
        for doc in docs:
            families.setdefault(doc.family, []).append(root / doc.name)
    return families


def entries_of(paths: list[Path]) -> list[Entry]:
    entries = []
    for path in paths:
        st = path.stat()
        url = path_to_url(str(path))
        entries.append(Entry(doc_id(url), url, "file://" + str(path.parent), 1, st.st_size, st.st_mtime_ns, "",
                             None, "", [], "", "", "", ""))
    return entries


def _cpu() -> float:
    """CPU seconds so far of this process and of its children that ended (the workers, which waited for their
    preparing children): on a shared machine they move far less with the load than wall seconds."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_loop(entries: list[Entry]) -> tuple[float, float, int]:
    """Seconds, CPU seconds and documents made, in this process."""
    sniff = MimeSniffer()
    chain = Chain(BUILTIN, sniff)
    options = PrepareOptions(BUILTIN, FINGERPRINT, MAX_FILE_SIZE, MAX_SUMMARY)
    started, cpu = time.perf_counter(), _cpu()
    made = 0
    for entry in entries:
        with open(entry.url.removeprefix("file://"), "rb") as handle:
            data = handle.read(MAX_FILE_SIZE + 1)
        mimetype = sniff(data, entry.url)
        prepared, _errors = chain.run(data, entry.url, mimetype)
        make_document(RawDocument(entry, mimetype, data, ""), prepared or Prepared(), options)
        made += 1
    return time.perf_counter() - started, _cpu() - cpu, made


class _Count(beam.DoFn):
    def __init__(self):
        self.made = Metrics.counter("bench", "documents")

    def process(self, doc):
        self.made.inc()


def run_apart(paths: list[Path], workers: int) -> tuple[float, float, int]:
    """:func:`beam_run` (``workers`` > 0) or :func:`run_loop` in a process of its own: the pipeline as a crawl's
    command runs it, its worker processes forked from it before the pipeline is built (runners/forked_workers.py),
    which a process that ran a pipeline before (Beam leaves threads behind) can no longer do; the loop without the
    format libraries the corpus's generation imported here (the preparing child imports them anew)."""
    with tempfile.NamedTemporaryFile("w", suffix=".paths") as listing:
        listing.write("".join(f"{path}\n" for path in paths))
        listing.flush()
        run = subprocess.run([sys.executable, __file__, "--apart", str(workers), listing.name],
                             check=False, capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"the {'loop' if not workers else f'pipeline with {workers} workers'} failed:\n{run.stderr[-4000:]}")
    return tuple(json.loads(run.stdout.splitlines()[-1]))


def apart(listing: str, workers: int) -> None:
    """Print [seconds, CPU seconds, documents made] of :func:`beam_run` or :func:`run_loop` (``workers`` 0) over
    the files named in ``listing``."""
    entries = entries_of([Path(line) for line in Path(listing).read_text().splitlines()])
    print(json.dumps(beam_run(entries, workers) if workers else run_loop(entries)))


def beam_run(entries: list[Entry], workers: int) -> tuple[float, float, int]:
    """Seconds and CPU seconds (this process and its workers) of a pipeline that prepares ``entries``, timed from
    Pipeline.run to the end, and the documents it made."""
    forked_workers.prestart(workers)
    use_row_coders()
    options = PipelineOptions(direct.arguments([f"--direct_num_workers={workers}"]))
    p = beam.Pipeline(runner=direct.runner(options), options=options)
    docs, _events, _gone = (p | beam.Create(entries, reshuffle=True).with_output_types(Entry)
                     | Prepare(PrepareOptions(BUILTIN, FINGERPRINT, MAX_FILE_SIZE, MAX_SUMMARY, Bounds())))
    for i, family_docs in enumerate(docs):
        _ = family_docs | f"Count{i}" >> beam.ParDo(_Count())
    started, cpu = time.perf_counter(), _cpu()
    result = p.run()
    result.wait_until_finish()
    seconds, cpu = time.perf_counter() - started, _cpu() - cpu
    counters = result.metrics().query(MetricsFilter().with_name("documents"))["counters"]
    return seconds, cpu, sum(c.committed or c.attempted or 0 for c in counters)


def measure(name: str, paths: list[Path], rows: list, checks: list[str], repeat: int) -> dict[str, tuple]:
    """Best of ``repeat`` interleaved runs of each (the machine may be shared: the best is the least
    disturbed): {run: (seconds, CPU seconds)}, each the least of its runs."""
    megabytes = sum(path.stat().st_size for path in paths) / 1e6
    figures: dict[str, tuple] = {}
    for _ in range(repeat):
        loop_s, loop_cpu, loop_made = run_apart(paths, 0)
        runs = {"loop": (loop_s, loop_cpu)}
        for workers in (1, 2):
            seconds, cpu, made = run_apart(paths, workers)
            runs[f"beam×{workers}"] = (seconds, cpu)
            if made != loop_made:
                checks.append(f"{name}: beam×{workers} made {made} documents, the loop {loop_made}")
        for label, (seconds, cpu) in runs.items():
            best = figures.get(label, (seconds, cpu))
            figures[label] = (min(seconds, best[0]), min(cpu, best[1]))
    loop_s, loop_cpu = figures["loop"]
    for label, (seconds, cpu) in figures.items():
        rows.append((name, label, len(paths), megabytes, seconds, len(paths) / seconds, megabytes / seconds,
                     loop_s / seconds, cpu, loop_cpu / cpu))
    return figures


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", type=int, default=75, help="copies of the 27-document set (default 75)")
    parser.add_argument("--keep", help="generate the corpus here and keep it")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each measurement; the best counts")
    parser.add_argument("--families", action="store_true", default=True)
    parser.add_argument("--no-families", dest="families", action="store_false",
                        help="measure only the mixed corpus")
    parser.add_argument("--tiny", action="store_true", help="one copy, mixed corpus only: the test suite's run")
    parser.add_argument("--apart", nargs=2, metavar=("WORKERS", "LISTING"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.apart:
        return apart(args.apart[1], int(args.apart[0]))
    if args.tiny:
        args.variants, args.families = 1, False

    root = Path(args.keep or tempfile.mkdtemp(prefix="prepare-bench-"))
    try:
        started = time.perf_counter()
        families = generate(root, args.variants)
        everything = [p for paths in families.values() for p in paths]
        sizes = Counter({f: sum(p.stat().st_size for p in paths) for f, paths in families.items()})
        print(f"corpus: {len(everything)} documents, {sum(sizes.values()) / 1e6:.1f} MB in {root} "
              f"(generated in {time.perf_counter() - started:.0f} s); cores: {os.cpu_count()}")
        print("families: " + ", ".join(f"{f} {len(p)}" for f, p in sorted(families.items())))
        rows: list = []
        checks: list[str] = []
        startup = {w: min(run_apart([], w)[:2] for _ in range(args.repeat)) for w in (1, 2)}
        mixed = measure("all (mixed)", everything, rows, checks, args.repeat)
        if args.families:
            for family, paths in sorted(families.items()):
                measure(family, paths, rows, checks, args.repeat)

        print()
        print(f"{'corpus':<12} {'run':<7} {'docs':>6} {'MB':>7} {'seconds':>8} {'docs/s':>8} {'MB/s':>7} "
              f"{'× loop':>7} {'CPU s':>7} {'× loop':>7}")
        for name, label, count, megabytes, seconds, rate, mbps, ratio, cpu, cpu_ratio in rows:
            print(f"{name:<12} {label:<7} {count:>6} {megabytes:>7.1f} {seconds:>8.2f} {rate:>8.1f} {mbps:>7.2f} "
                  f"{ratio:>7.2f} {cpu:>7.2f} {cpu_ratio:>7.2f}")
        (loop, loop_cpu), (one, one_cpu), (two, two_cpu) = (mixed[k] for k in ("loop", "beam×1", "beam×2"))
        print()
        print(f"mixed corpus: beam×1 = {loop / one:.2f}× the loop (target ≥ 0.9: {verdict(loop / one >= 0.9)}), "
              f"beam×2 = {loop / two:.2f}× the loop (target ≥ 1.6: {verdict(loop / two >= 1.6)})")
        print(f"  documents per CPU-second (this process and its workers with their preparing children): beam×1 = "
              f"{loop_cpu / one_cpu:.2f}× the loop, beam×2 = {loop_cpu / two_cpu:.2f}×")
        print(f"An empty pipeline (start-up and shut-down alone) takes {startup[1][0]:.1f} s ({startup[1][1]:.1f} CPU-s) "
              f"with 1 worker and {startup[2][0]:.1f} s ({startup[2][1]:.1f} CPU-s) with 2; without it, beam×1 = "
              f"{loop / (one - startup[1][0]):.2f}× and beam×2 = {loop / (two - startup[2][0]):.2f}× the loop; "
              f"per CPU-second {loop_cpu / (one_cpu - startup[1][1]):.2f}× and {loop_cpu / (two_cpu - startup[2][1]):.2f}×.")
        print("The loop and the pipelines prepare the same files with the same preparator callables; the pipeline "
              "times include starting its worker processes and a preparing child per worker.")
        print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
        for check in checks:
            print(f"CHECK FAILED: {check}")
        return 1 if checks else 0
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
