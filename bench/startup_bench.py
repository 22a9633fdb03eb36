"""Start-up time of ``beamtrawl search`` (load the configuration, open the index, answer), this checkout
against a baseline checkout, in the same run: issue 17 §1 moved the configuration onto a pydantic schema,
and a search's start counts.

    git -C /work/main worktree add /tmp/cfg-old 2d22915      # the code before the schema
    python bench/startup_bench.py --baseline /tmp/cfg-old [--runs 21] [--tiny]

Each checkout is imported as ``beamtrawl.*`` through a folder of links put first on PYTHONPATH, so both
run with the same interpreter and packages, and the same search on the same index (made by this checkout's
crawl of examples/corpus). Runs alternate between the two; the figure is the median
wall and CPU time of one ``python -m beamtrawl.pipeline.cli search`` process, and the in-process import time of
the configuration package (``beamtrawl.pipeline.config``, pydantic included), each with its ratio
current/baseline. ``--tiny`` (tests/test_benchmarks.py runs it): 2 runs, and without ``--baseline`` this
checkout is its own baseline (the ratio then shows the noise alone: a test has no older checkout).

It then times the start-up of a crawl (issue 27, target 2: at most 2 s of wall time on a quiet machine): a
``beamtrawl crawl`` of a tree of one small HTML file into a fresh index, two workers, start to exit, wall and
CPU time (the command, its workers and their preparing children), median of ``--crawl-runs`` runs (default
5; 1 with ``--tiny``) of each checkout, alternating, and the wall time of its phases (start, plan, pipeline,
rest: :func:`phases`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
ROOTS = ("pipeline", "transforms", "plugins", "runners")
CONFIG = """\
start: [{{url: "{corpus}"}}]
index: {{path: "{index}"}}
blacklist: [{{regex: ".*/\\\\.git/.*"}}]
auxiliary_fields: [{{name: project, regex: "/projects/([^/]*)/"}}]
"""
ONE_FILE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Sourdough starter</title></head>
<body><h1>Sourdough starter</h1><p>Feed the starter twice a day with flour and water.</p></body></html>
"""
CRAWL_TARGET_S = 2.0
IMPORT = "import time; t = time.perf_counter(); import beamtrawl.pipeline.config; print(time.perf_counter() - t)"
PARTS = """\
import time, yaml, beamtrawl.plugins.manager, beamtrawl.transforms.enrich.access
t0 = time.process_time(); import pydantic, pydantic.main
t1 = time.process_time(); import beamtrawl.pipeline.config
t2 = time.process_time(); import beamtrawl.transforms.preparators.registry
t3 = time.process_time(); print(t1 - t0, t2 - t1, t3 - t2)
"""


def shim(checkout: Path, folder: Path) -> dict:
    """An environment importing ``checkout`` as beamtrawl.*."""
    package = folder / "beamtrawl"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for root in ROOTS:
        (package / root).symlink_to(checkout / root)
    return {**os.environ, "PYTHONPATH": str(folder)}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], env: dict) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one process: on a shared machine the CPU time is the
    steadier figure."""
    start, cpu = time.perf_counter(), _cpu()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    elapsed, used = time.perf_counter() - start, _cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return elapsed, used


def crawl_start_up(folder: Path, envs: dict, runs: int) -> tuple[dict, dict, dict]:
    """Wall and CPU seconds of ``beamtrawl crawl`` of a one-file tree into a fresh index, by checkout, and the
    wall seconds of its phases (:func:`phases`)."""
    tree = folder / "one-file"
    tree.mkdir()
    (tree / "starter.html").write_text(ONE_FILE, encoding="utf-8")
    walls: dict[str, list[float]] = {name: [] for name in envs}
    cpus: dict[str, list[float]] = {name: [] for name in envs}
    parts: dict[str, list[tuple[float, ...]]] = {name: [] for name in envs}
    for run in range(runs):
        for name, env in envs.items():
            config = folder / f"one-{name}-{run}.yaml"
            config.write_text(f'start: [{{url: "{tree}"}}]\nindex: {{path: "{folder / config.stem}.sqlite"}}\n',
                              encoding="utf-8")
            wall, cpu = timed([sys.executable, "-m", "beamtrawl.pipeline.cli", "crawl", str(config),
                               "--direct_num_workers=2"], env)
            walls[name].append(wall)
            cpus[name].append(cpu)
            parts[name].append(phases(wall, folder / f"{config.stem}.report.json"))
    return walls, cpus, parts


def phases(wall: float, report: Path) -> tuple[float, ...]:
    """Wall seconds of a crawl's phases from its report's timings: the command's start (Python, Beam's import,
    the configuration, the workers forked), the plan (the index opened and checked), the pipeline (the graph
    built and run, the work folder read back), and the rest (the report, the exit)."""
    timings = json.loads(report.read_text(encoding="utf-8"))["timings"]
    return (wall - timings["total_s"], timings["plan_s"], timings["pipeline_s"],
            timings["total_s"] - timings["plan_s"] - timings["pipeline_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="a checkout of the code to compare with (default /tmp/cfg-old)")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--crawl-runs", type=int, default=5, help="one-file crawls of each checkout (default 5)")
    parser.add_argument("--tiny", action="store_true", help="2 runs, against this checkout unless --baseline")
    args = parser.parse_args()
    if args.tiny:
        args.runs, args.crawl_runs = 2, 1
    if args.baseline is None:
        args.baseline = str(HERE) if args.tiny else "/tmp/cfg-old"
    if not (Path(args.baseline) / "pipeline").is_dir():
        raise SystemExit(f"no checkout at {args.baseline}: make one as the docstring shows")
    with tempfile.TemporaryDirectory(prefix="beamtrawl-startup-") as tmp:
        folder = Path(tmp)
        envs = {"baseline": shim(Path(args.baseline).resolve(), folder / "old"), "current": shim(HERE, folder / "new")}
        index = folder / "index.sqlite"
        config = folder / "crawl.yaml"
        config.write_text(CONFIG.format(corpus=HERE / "examples" / "corpus", index=index), encoding="utf-8")
        crawl = [sys.executable, "-m", "beamtrawl.pipeline.cli", "crawl", str(config), "--direct_num_workers=1"]
        done = subprocess.run(crawl, env=envs["current"], capture_output=True, text=True, check=False)
        if done.returncode not in (0, 1):  # an index with documents: searching an empty one fails (see report)
            raise SystemExit(f"the crawl of examples/corpus failed: {done.stderr.strip()[-500:]}")
        search = [sys.executable, "-m", "beamtrawl.pipeline.cli", "search", "sourdough", "--config", str(config)]
        imports = [sys.executable, "-c", IMPORT]
        for env in envs.values():  # warm the page cache and the bytecode of the standard library
            timed(search, env)
        walls: dict[str, list[float]] = {name: [] for name in envs}
        cpus: dict[str, list[float]] = {name: [] for name in envs}
        loads: dict[str, list[float]] = {name: [] for name in envs}
        for _ in range(args.runs):
            for name, env in envs.items():
                wall, cpu = timed(search, env)
                walls[name].append(wall)
                cpus[name].append(cpu)
                loads[name].append(float(subprocess.run(imports, env=env, capture_output=True, text=True,
                                                        check=True).stdout))
        starts = crawl_start_up(folder, envs, args.crawl_runs)
        parts = [[float(x) for x in subprocess.run([sys.executable, "-c", PARTS], env=envs["current"], check=True,
                                                   capture_output=True, text=True).stdout.split()]
                 for _ in range(args.runs)]
    print(f"beamtrawl search start-up, median of {args.runs} runs each (baseline: {args.baseline})")
    print(f"  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for label, figures in (("search process, wall", walls), ("search process, CPU", cpus),
                           ("import beamtrawl.pipeline.config", loads)):
        old, new = statistics.median(figures["baseline"]), statistics.median(figures["current"])
        print(f"  {label:34s} baseline {old * 1000:7.1f} ms   current {new * 1000:7.1f} ms   "
              f"difference {(new - old) * 1000:+7.1f} ms   ratio {new / old:5.2f}")
    for label, figures in (("one-file crawl, wall", starts[0]), ("one-file crawl, CPU", starts[1])):
        old, new = statistics.median(figures["baseline"]), statistics.median(figures["current"])
        print(f"  {label:34s} baseline {old:7.2f} s    current {new:7.2f} s    "
              f"difference {new - old:+7.2f} s    ratio {new / old:5.2f}")
    for name in starts[2]:
        start, plan, pipeline, rest = (statistics.median(p[i] for p in starts[2][name]) for i in range(4))
        print(f"  one-file crawl, {name:8s} phases (wall, medians): start {start:.2f} s, plan {plan:.2f} s, "
              f"pipeline {pipeline:.2f} s, rest {rest:.2f} s")
    wall = statistics.median(starts[0]["current"])
    print(f"  one-file crawl (2 workers), current: {wall:.2f} s wall, target <= {CRAWL_TARGET_S:g} s on a quiet machine: "
          f"{'PASS' if wall <= CRAWL_TARGET_S else 'MISS'} (load average {os.getloadavg()[0]:.1f})")
    pydantic, schema, preparators = (statistics.median(p[i] for p in parts) * 1000 for i in range(3))
    print(f"  current, CPU: pydantic's import {pydantic:.0f} ms + the schema's models {schema:.0f} ms; the "
          f"preparators, which a search no longer imports: {preparators:.0f} ms")


if __name__ == "__main__":
    main()
