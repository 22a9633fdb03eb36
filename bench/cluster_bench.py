"""Cluster benchmark: the same file tree crawled into OpenSearch on the direct runner, on the tests' Flink session
cluster and on their Spark standalone cluster, full and unchanged, in one run.

Run from the repository root (beamtrawl installed, psutil; Java and the job servers' classpaths for the
clusters: ``python tests/servers/flink.py install``, ``spark.py install``)::

    python bench/cluster_bench.py [--files 20000] [--runners direct,flink,spark] [--url URL] [--seed 7] [--tiny]

It generates crawl_bench's deterministic tree (1-4 KB text and HTML files, ~100 per folder; not timed) and,
without ``--url``, starts an OpenSearch node (tests/servers/opensearch.py). Then for each runner in turn it
starts the cluster (tests/servers/flink.py ``session_cluster``, spark.py ``standalone_cluster``: its start is
timed apart, never part of a crawl), crawls the tree into a fresh index (``beamtrawl crawl CFG OPTIONS``, the
options the cluster prints), crawls it again unchanged, and stops the cluster. For each crawl it prints the
wall time and its ratio to the direct runner's (target for the full crawl: <= 1.5x), where the time goes (the
report's planning and pipeline seconds and its busiest stages; CPU seconds per process group) and the peak
RSS of each process group: the command (driver, and on the direct runner its workers), and each cluster
process (JobManager, TaskManager, job server, worker pool with the SDK harnesses it starts; Spark: master,
worker with its executors, job server, pool), sampled every 0.25 s. Every index must hold every file, and
the unchanged crawl must read none.

``--tiny`` (tests/test_benchmarks.py runs it, with the suite's node as ``--url``): 200 files on the direct runner
only. A cluster takes 30-60 s to start on two cores, too long for the suite; the full run measures them.

Exit code 0 when the figures were measured (targets may be missed), 1 when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import psutil
from crawl_bench import Row, check, fail, generate_tree, mib, print_table, verdict

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests/ is not installed
from tests.servers.flink import session_cluster
from tests.servers.spark import standalone_cluster

CLUSTERS = {"flink": ("Flink session cluster", session_cluster),
            "spark": ("Spark standalone cluster", standalone_cluster)}
TARGET = 1.5  # a full crawl on a cluster / on the direct runner
WORKERS = 2
SAMPLE_S = 0.25


def _family(pid: int) -> list[psutil.Process]:
    try:
        top = psutil.Process(pid)
        return [top, *top.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


class Groups:
    """Peak RSS and CPU seconds of process groups (a process and everything it starts), sampled in a thread."""

    def __init__(self, groups: dict[str, int]):
        self.groups = groups  # name → pid of its leader
        self.peak = dict.fromkeys(groups, 0)
        self.cpu: dict[str, dict[int, float]] = {name: {} for name in groups}
        self.before = {name: 0.0 for name in groups}
        self.done = threading.Event()
        self._sample()
        self.before = {name: sum(seen.values()) for name, seen in self.cpu.items()}
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        for name, pid in self.groups.items():
            rss = 0
            for member in _family(pid):
                try:
                    with member.oneshot():
                        rss += member.memory_info().rss
                        times = member.cpu_times()
                    self.cpu[name][member.pid] = times.user + times.system
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    pass
            self.peak[name] = max(self.peak[name], rss)

    def _run(self) -> None:
        while not self.done.wait(SAMPLE_S):
            self._sample()

    def stop(self) -> dict[str, tuple[int, float]]:
        """{group: (peak RSS, CPU seconds since the start)}."""
        self.done.set()
        self.thread.join()
        self._sample()
        return {name: (self.peak[name], sum(self.cpu[name].values()) - self.before[name]) for name in self.groups}


def crawl(config: Path, options: list[str], log: Path, cluster: dict[str, int]) -> dict:
    """``beamtrawl crawl`` with ``options``: wall seconds, report, and peak RSS and CPU of every process group."""
    command = [shutil.which("beamtrawl") or fail("the beamtrawl command is not on PATH (pip install -e .)"),
               "crawl", str(config), *options]
    with open(log, "w") as out:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        groups = Groups({"command": child.pid, **cluster})
        code = child.wait()
        seconds = time.perf_counter() - started
        usage = groups.stop()
    if code != 0:
        fail(f"{' '.join(command)} exited with {code}; its output:\n{log.read_text()[-4000:]}")
    report = json.loads((config.parent / f"beamtrawl-{_index(config)}.report.json").read_text())
    shutil.copy(config.parent / f"beamtrawl-{_index(config)}.report.json", log.with_suffix(".report.json"))
    return {"seconds": seconds, "report": report, "usage": usage}


def _index(config: Path) -> str:
    return config.read_text().split("name: ", 1)[1].split("}", 1)[0].strip()


def count(url: str, alias: str) -> int:
    with urllib.request.urlopen(f"{url}/{alias}/_count", timeout=60) as response:
        return json.load(response)["count"]


def where(run: dict) -> str:
    """The report's planning and pipeline seconds and its busiest stages."""
    timings = run["report"].get("timings", {})
    busy = sorted(timings.get("stage_busy_s", {}).items(), key=lambda item: -item[1])[:4]
    stages = ", ".join(f"{name} {s:.1f}" for name, s in busy) or "none reported"
    return f"plan {timings.get('plan_s', 0):.1f} s, pipeline {timings.get('pipeline_s', 0):.1f} s; busiest stages " \
           f"(worker seconds): {stages}"


def usage_lines(run: dict) -> list[str]:
    return [f"      {name:<11} peak {mib(rss):>10}  CPU {cpu:6.1f} s" for name, (rss, cpu) in run["usage"].items()]


def one_runner(name: str, work: Path, tree: Path, url: str, files: int) -> dict:
    """Start ``name``'s cluster (none for direct), crawl full and unchanged, stop it."""
    alias = f"cluster-bench-{name}-{uuid.uuid4().hex[:6]}"
    config = work / f"{name}.yaml"
    config.write_text(f"start:\n  - {{url: {json.dumps(str(tree))}}}\nwork_dir: {json.dumps(str(work / 'work'))}\n"
                      f"index: {{url: {url}, name: {alias}}}\n")
    with contextlib.ExitStack() as stack:
        started = time.perf_counter()
        if name == "direct":
            options, cluster = [f"--direct_num_workers={WORKERS}"], {}
        else:
            folder = work / name
            folder.mkdir(exist_ok=True)
            engine = stack.enter_context(CLUSTERS[name][1](folder))
            options, cluster = engine.options, {what: p.pid for what, p in engine.processes.items()}
        start_s = time.perf_counter() - started
        full = crawl(config, options, work / "logs" / f"{name}-full.log", cluster)
        again = crawl(config, options, work / "logs" / f"{name}-unchanged.log", cluster)
    indexed = count(url, alias)
    counts = full["report"]["counts"], again["report"]["counts"]
    if indexed != files or counts[0].get("written") != files:
        fail(f"{name}: the index holds {indexed} documents, the full crawl wrote {counts[0].get('written')}, not {files}")
    if counts[1].get("unchanged") != files or counts[1].get("read", 0):
        fail(f"{name}: the unchanged crawl counted {counts[1]}")
    return {"start_s": start_s, "full": full, "unchanged": again}


def benchmark(work: Path, url: str, files: int, seed: int, runners: list[str]) -> list[Row]:
    tree = work / "tree"
    started = time.perf_counter()
    size = generate_tree(tree, files, seed)
    print(f"beamtrawl cluster benchmark: {files:,} files ({mib(size)}) generated in "
          f"{time.perf_counter() - started:.1f} s (not timed), OpenSearch at {url}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    (work / "logs").mkdir(exist_ok=True)
    results, rows = {}, []
    for name in runners:
        label = CLUSTERS[name][0] if name in CLUSTERS else f"direct runner, {WORKERS} workers"
        print(f"\n{label}:", flush=True)
        results[name] = result = one_runner(name, work, tree, url, files)
        if name != "direct":
            print(f"  cluster started in {result['start_s']:.1f} s (not part of any figure)")
        for kind in ("full", "unchanged"):
            run = result[kind]
            ratio = run["seconds"] / results["direct"][kind]["seconds"] if "direct" in results else None
            versus = f"  {ratio:.2f}x direct" if ratio is not None and name != "direct" else ""
            print(f"  {kind:<9} {run['seconds']:7.1f} s{versus}  (load {os.getloadavg()[0]:.1f})\n"
                  f"    {where(run)}\n    process groups:")
            print("\n".join(usage_lines(run)))
            rows.append((f"{name} {kind} crawl", f"{run['seconds']:.1f} s", "", ""))
            if ratio is not None and name != "direct":
                target = f"<= {TARGET}" if kind == "full" else ""
                rows.append(check(f"{name}/direct, {kind}", f"{ratio:.2f}x", target, ratio <= TARGET) if target else
                            (f"{name}/direct, {kind}", f"{ratio:.2f}x", "", ""))
        peak = sum(rss for rss, _ in result["full"]["usage"].values())
        rows.append((f"{name} peak RSS, all groups (full)", mib(peak), "", ""))
    print(f"\nevery index holds {files:,} documents and every unchanged crawl read none: {verdict(True)}")
    if "direct" in results:
        print(f"direct runner, full crawl: {results['direct']['full']['seconds']:.1f} s")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000, help="files in the tree (default 20000)")
    parser.add_argument("--runners", default="direct,flink,spark", help="which, in order (default direct,flink,spark)")
    parser.add_argument("--url", help="an OpenSearch to use (default: start one in a temporary folder)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated tree (default 7)")
    parser.add_argument("--keep", help="work in this folder and keep it (logs, reports)")
    parser.add_argument("--tiny", action="store_true", help="200 files, direct runner only: the test suite's run")
    args = parser.parse_args()
    runners = ["direct"] if args.tiny else [r.strip() for r in args.runners.split(",") if r.strip()]
    if unknown := set(runners) - {"direct", *CLUSTERS}:
        fail(f"--runners: unknown {sorted(unknown)}; choose from direct, flink, spark")
    files = 200 if args.tiny else args.files
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="beamtrawl-cluster-bench-", dir="/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o755)  # the worker pool runs without the capabilities that bypass file permissions
    try:
        if args.url:
            rows = benchmark(work, args.url, files, args.seed, runners)
        else:
            from tests.servers.opensearch import running_node

            with running_node(work / "node") as url:
                rows = benchmark(work, url, files, args.seed, runners)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print_table(rows)
    print("cluster/direct: " + (", ".join(f"{r[0]} {r[1]}" for r in rows if "/direct" in r[0]) or
                                "direct runner only (--tiny: no cluster is started)"))


if __name__ == "__main__":
    main()
