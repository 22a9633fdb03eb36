"""Crawl benchmark: how fast beamtrawl indexes a file tree and re-crawls it, and how much memory it needs.

Run from the repository root (beamtrawl installed, psutil present)::

    python bench/crawl_bench.py [--files 20000] [--workers 2] [--keep DIR] [--seed 7] [--tiny]
    python bench/crawl_bench.py --slope 20000,100000 [--workers 2] [--keep DIR] [--baseline-code DIR]
    python bench/crawl_bench.py --baseline-code DIR [--rounds 3] [--files 20000] [--workers 2]

It generates a deterministic tree of small text and HTML files (1-4 KB, about 100 per folder, three
folder levels; generation is not timed), then measures in one run:

(a) full crawl: ``beamtrawl crawl CFG --direct_num_workers=W`` into a fresh index, in documents per
    second, against a plain single-process Python loop doing the same work (walk + stat, read bytes,
    MimeSniffer, the first preparator of ``chain_for(BUILTIN, ...)``, ``make_document``, upserts of
    500 into its own fresh EmbeddedIndex). Both are timed as whole processes (interpreter start to
    exit); both indexes must hold N documents with the same stored fields and text, else it fails.
(b) re-crawl of the unchanged tree: seconds, against the full crawl and against
    ``find TREE -type f -printf '%T@ %s\\n'``; the report must say read 0, unchanged N.
(c) peak RSS of the full crawl and of the re-crawl, summed over the beamtrawl process tree (driver
    and worker processes, sampled every 0.1 s with psutil), and of the loop; the peak of the tree's summed
    PSS (``/proc/PID/smaps_rollup``: a page shared by n processes counted 1/n, so a worker forked from the
    command is not counted twice for the pages they share), and the peak RSS of each role (the command, its
    workers, their preparing children); each against the loop's (issue 27, target 4: at most 2x).

With ``--baseline-code DIR`` (a checkout of an earlier commit: ``git worktree add /tmp/old COMMIT``) it
measures instead whether this checkout got slower: on the same tree, in the same run, it crawls with
the code in DIR, with this checkout and with the plain loop, one after the other, for ``--rounds``
rounds (baseline, current, loop, baseline, current, loop, …: a machine whose load changes during the
run weighs on both alike), each into a fresh index (``--current-code DIR``: the current code from a
checkout of its own, so that editing this one while it runs changes nothing), and prints each figure, the medians, and the ratio
current/baseline (the median of the rounds' ratios) beside current/loop.

(b) also times the floor of an unchanged re-crawl (issue 27): a recursive ``os.scandir`` walk with stat plus
reading ``url, mtime_ns, size`` of every document from the index, in this process. ``--slope N1,N2``
measures instead (d): full crawl, floor and unchanged re-crawl of trees of N1 and N2 files, and fits the
fixed cost and the cost per unchanged file of both as a line through the two sizes; it prints both
slopes, their ratio (target <= 3), the extrapolated ratio for a million files (target <= 4), and the
growth of peak memory between the sizes (target <= +10 %); in wall and in CPU seconds (on a loaded machine
the wall figures mean little). With ``--baseline-code DIR`` it re-crawls each tree with that code as well
and fits its slopes beside.

``--tiny`` (tests/test_benchmarks.py runs it) is the same run on 200 files, with (d) between 200 and 400
files: seconds, not minutes.

Exit code 0 when the figures were measured (targets may be missed), 1 when a check fails.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import math
import os
import random
import re
import shutil
import sqlite3
import stat
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
FILES_PER_FOLDER = 100
LEVELS = 3
BATCH = 500
Row = tuple[str, str, str, str]  # a line of the summary table: measure, figure, target, PASS/MISS

# ---------------------------------------------------------------------------------------------
# The tree
# ---------------------------------------------------------------------------------------------

_COMMON_WORDS = """the of and to in is for that on with as by at from this be are was it an or which not have
has will can more all their new one also other were its about than into after first two some been time
project report data team meeting budget safety sample analysis result results method test system
process quality review design plan schedule customer service policy support security network server
storage backup archive document version draft final summary note notes field station sensor
calibration measurement temperature pressure humidity water soil sample survey region coastal northern
southern harbour river mountain glacier forest winter summer spring autumn monday friday january march
june october december office staff training holiday travel expense invoice contract supplier order
delivery warehouse inventory kitchen coffee lunch committee board director manager engineer analyst
researcher student visitor guest laboratory instrument spectrometer centrifuge microscope freezer
reagent protocol procedure checklist incident risk mitigation deadline milestone release deployment
migration upgrade install configure monitor alert failure outage recovery restore incident ticket
request approval signature minutes agenda decision action owner status progress blocked complete
pending urgent weekly monthly quarterly annual estimate forecast revenue cost price margin growth
straße über café naïve résumé Übersicht Größe déjà"""
_SYLLABLES = "ka lo mi ne ra tu sel vor an dre ta bri ku len os par gim rol fe zan mar dok ith ul"


def _vocabulary(rng: random.Random, size: int = 4000) -> list[str]:
    """Common words first (they are drawn most often), then a long tail of made-up words."""
    common, syllables = _COMMON_WORDS.split(), _SYLLABLES.split()
    tail = {"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(size)}
    return common + sorted(tail - set(common))


def _sentences(rng: random.Random, count: int = 20_000) -> list[str]:
    """Sentences of Zipf-distributed words; files are drawn from this pool, which keeps generation fast."""
    words = _vocabulary(rng)
    cum = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(words))))
    pool = []
    for _ in range(count):
        chosen = rng.choices(words, cum_weights=cum, k=rng.randint(6, 18))
        pool.append(" ".join(chosen).capitalize() + rng.choice(".....?!"))
    return pool


def _paragraph(rng: random.Random, pool: list[str]) -> str:
    return " ".join(rng.choices(pool, k=rng.randint(2, 6)))


def _title(rng: random.Random, pool: list[str]) -> str:
    return " ".join(rng.choice(pool).rstrip(".?!").split()[:rng.randint(3, 7)]).title()


def _text_file(rng: random.Random, pool: list[str], size: int) -> str:
    parts = [_title(rng, pool), ""]
    while sum(map(len, parts)) < size:
        parts += [_paragraph(rng, pool), ""]
    return "\n".join(parts)


def _html_file(rng: random.Random, pool: list[str], size: int) -> str:
    title = _title(rng, pool)
    head = f'<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>{title}</title></head>'
    parts = [head, f"<body>\n<h1>{title}</h1>"]
    while sum(map(len, parts)) < size:
        parts.append(f"<h2>{_title(rng, pool)}</h2>")
        parts += [f"<p>{_paragraph(rng, pool)}</p>" for _ in range(rng.randint(1, 3))]
    parts.append("</body>\n</html>\n")
    return "\n".join(parts)


def _folder(k: int, fan: int) -> str:
    """Leaf folder ``k`` as ``LEVELS`` nested names, ``fan`` folders per level."""
    digits = [(k // fan**level) % fan for level in reversed(range(LEVELS))]
    names = ("area", "team", "batch")
    return os.path.join(*(f"{name}-{d:02d}" for name, d in zip(names, digits)))


def generate_tree(root: Path, files: int, seed: int) -> int:
    """Write ``files`` documents (even: .txt, odd: .html) under ``root``; returns the bytes written."""
    rng = random.Random(seed)
    pool = _sentences(rng)
    fan = max(2, math.ceil((math.ceil(files / FILES_PER_FOLDER)) ** (1 / LEVELS)))
    written = 0
    for i in range(files):
        folder = root / _folder(i // FILES_PER_FOLDER, fan)
        if i % FILES_PER_FOLDER == 0:
            folder.mkdir(parents=True, exist_ok=True)
        size = rng.randint(1024, 4096)
        if i % 2:
            name, text = f"page-{i:06d}.html", _html_file(rng, pool, size)
        else:
            name, text = f"note-{i:06d}.txt", _text_file(rng, pool, size)
        data = text.encode("utf-8")
        (folder / name).write_bytes(data)
        written += len(data)
    return written


# ---------------------------------------------------------------------------------------------
# The baseline loop (run as a child process: ``crawl_bench.py --loop CONFIG INDEX``)
# ---------------------------------------------------------------------------------------------

class LoopIndex:
    """What a baseline loop does with each document after reading it, as a crawl does: MimeSniffer, the first
    preparator of ``chain_for(BUILTIN, ...)``, ``make_document``, upserts of BATCH into its own fresh
    EmbeddedIndex (bench/s3_bench.py's loop too)."""

    def __init__(self, config, index_path: str):
        from beamtrawl.pipeline.crawl import preparation_fingerprint
        from beamtrawl.transforms.index.sqlite import EmbeddedIndex
        from beamtrawl.transforms.preparators import BUILTIN
        from beamtrawl.transforms.preparators.mime import MimeSniffer
        from beamtrawl.transforms.prepare import PrepareOptions

        self.options = PrepareOptions(BUILTIN, preparation_fingerprint(BUILTIN, config), config.max_file_size,
                                      config.max_summary_length)
        self.sniff, self.index = MimeSniffer(), EmbeddedIndex(index_path)
        self.index.prepare()
        self.batch, self.count = [], 0

    def add(self, entry, data: bytes) -> None:
        from beamtrawl.transforms.preparators import BUILTIN, chain_for
        from beamtrawl.transforms.prepare import make_document
        from beamtrawl.transforms.records import RawDocument

        mimetype = self.sniff(data, entry.url)
        prepared = chain_for(BUILTIN, mimetype, entry.url)[0](data, entry.url, mimetype)
        self.batch.append(make_document(RawDocument(entry, mimetype, data, ""), prepared, self.options))
        if len(self.batch) == BATCH:
            self._upsert()

    def _upsert(self) -> None:
        self.count += len(self.batch) - len(self.index.upsert(self.batch))
        self.batch = []

    def close(self) -> int:
        """The upserts left, the index closed; how many documents it wrote."""
        self._upsert()
        self.index.close()
        return self.count


def run_loop(config_path: str, index_path: str) -> None:
    """Walk, stat, read, sniff, prepare, build documents and upsert them, in one process."""
    from beamtrawl.pipeline.config import load_config
    from beamtrawl.transforms.records import Entry
    from beamtrawl.transforms.sources.file import path_to_url, url_to_path
    from beamtrawl.transforms.urls import depth_below, doc_id

    started = time.perf_counter()
    config = load_config(config_path)
    root = config.start[0].url
    loop = LoopIndex(config, index_path)
    for folder, _dirs, names in os.walk(url_to_path(root)):
        for name in names:
            path = os.path.join(folder, name)
            st = os.stat(path)
            url = path_to_url(path)
            entry = Entry(id=doc_id(url), url=url, root=root, depth=depth_below(url, root), size=st.st_size,
                          mtime_ns=st.st_mtime_ns, identity="", content=None, mimetype="", outlinks=[],
                          etag="", http_last_modified="", source_url="", link_text="")
            with open(path, "rb") as handle:
                loop.add(entry, handle.read(config.max_file_size + 1))
    print(json.dumps({"written": loop.close(), "loop_s": time.perf_counter() - started}))


# ---------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------

ROLES = ("command", "workers", "preparing", "other")  # the process tree's members, by what they do (:func:`_role`)


def _role(member: psutil.Process, root: psutil.Process) -> str:
    """What a member of a crawl's process tree is: the command (the driver), a worker of the local runner (forked
    from the command, or started by Beam), a preparing child, or another (a shell Beam starts a worker with)."""
    if member.pid == root.pid:
        return "command"
    name, line = member.name(), " ".join(member.cmdline())
    if "preparators.isolation" in line:
        return "preparing"
    return "workers" if name == "beamtrawl-work" or "local_worker" in line or line == " ".join(root.cmdline()) \
        else "other"


def _pss(pid: int) -> int:
    """The process's proportional set size: each page it shares with n processes counted 1/n (a worker forked from
    the command shares the pages they both have not written since), so that a tree's sum is its memory."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            return next(int(line.split()[1]) * 1024 for line in rollup if line.startswith("Pss:"))
    except (OSError, StopIteration, ValueError):  # gone, or no smaps_rollup (not Linux 4.14+): not counted
        return 0


def _tree_rss(proc: psutil.Process, cpu: dict[int, float]) -> tuple[int, int, int, dict[str, int]]:
    """RSS summed over a process and all its descendants, how many processes that is, their PSS summed
    (:func:`_pss`) and their RSS summed by role (:func:`_role`); ``cpu`` gets each one's CPU seconds so far
    (user and system) by process id."""
    total, seen, pss, roles = 0, 0, 0, dict.fromkeys(ROLES, 0)
    try:
        family = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0, 0, 0, roles
    for member in family:
        try:
            with member.oneshot():
                rss = member.memory_info().rss
                times = member.cpu_times()
                role = _role(member, proc)
            total += rss
            roles[role] += rss
            pss += _pss(member.pid)
            cpu[member.pid] = max(cpu.get(member.pid, 0.0), times.user + times.system)
            seen += 1
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total, seen, pss, roles


def measure(cmd: list[str], log: Path, env: dict | None = None, cwd: Path = REPO) -> dict:
    """Run ``cmd`` (output to ``log``); its exit code, wall seconds, and peak RSS and CPU seconds of its
    process tree (sampled every 0.1 s: the last tenth of a second of each process is not counted); the peak
    of its summed PSS (``peak_pss``: shared pages counted once, the tree's own memory) and each role's peak
    RSS (``roles``: the command, its workers, their preparing children, each summed). CPU seconds depend far
    less than wall seconds on what else the machine runs."""
    peak = {"rss": 0, "procs": 0, "pss": 0, "roles": dict.fromkeys(ROLES, 0)}
    cpu: dict[int, float] = {}
    done = threading.Event()

    def sample(proc: psutil.Process) -> None:
        while not done.is_set():
            rss, procs, pss, roles = _tree_rss(proc, cpu)
            peak["rss"], peak["procs"], peak["pss"] = max(peak["rss"], rss), max(peak["procs"], procs), \
                max(peak["pss"], pss)
            peak["roles"] = {role: max(peak["roles"][role], roles[role]) for role in ROLES}
            done.wait(0.1)

    with open(log, "w") as out:
        started = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=env)
        sampler = threading.Thread(target=sample, args=(psutil.Process(child.pid),), daemon=True)
        sampler.start()
        code = child.wait()
        seconds = time.perf_counter() - started
        done.set()
        sampler.join()
    return {"exit": code, "seconds": seconds, "peak_rss": peak["rss"], "procs": peak["procs"], "cpu": sum(cpu.values()),
            "peak_pss": peak["pss"], "roles": peak["roles"]}


def roles(run: dict) -> str:
    """A run's peak RSS by role (:func:`measure`), the roles it had."""
    return ", ".join(f"{role} {mib(n)}" for role, n in run["roles"].items() if n)


def run_measured(cmd: list[str], log: Path, env: dict | None = None, cwd: Path = REPO) -> dict:
    """:func:`measure` of a command that must succeed."""
    run = measure(cmd, log, env, cwd)
    if run["exit"] != 0:
        fail(f"{' '.join(cmd)} exited with {run['exit']}; its output:\n{log.read_text()}")
    return run


def time_find(tree: Path, repeats: int = 3) -> float:
    """Fastest of a few runs of find listing every file with its mtime and size."""
    best = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(["find", str(tree), "-type", "f", "-printf", r"%T@ %s\n"], check=True,
                       stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - started)
    return best


def _walk(path: str | bytes) -> int:
    """Files below ``path``: a recursive os.scandir walk with a stat of every entry."""
    files = 0
    with os.scandir(path) as listing:
        for entry in listing:
            st = entry.stat(follow_symlinks=False)
            files += _walk(entry.path) if stat.S_ISDIR(st.st_mode) else 1
    return files


def time_floor(tree: Path, index: Path, repeats: int = 3) -> tuple[float, float]:
    """The floor of an unchanged re-crawl (issue 27): fastest of a few runs, in this process, of a recursive
    os.scandir walk with stat plus reading ``url, mtime_ns, size`` of every document from the index; its wall
    seconds and the CPU seconds of that run (a loaded machine moves the one far more than the other)."""
    best, best_cpu = math.inf, math.inf
    for _ in range(repeats):
        started, cpu = time.perf_counter(), time.process_time()
        files = _walk(os.fsencode(tree))
        with contextlib.closing(sqlite3.connect(f"file:{index}?mode=ro", uri=True)) as db:
            rows = db.execute("SELECT url, mtime_ns, size FROM docs").fetchall()
        if time.perf_counter() - started < best:
            best, best_cpu = time.perf_counter() - started, time.process_time() - cpu
    if len(rows) != files:
        fail(f"the floor walked {files} files but the index holds {len(rows)}")
    return best, best_cpu


def index_count(path: Path) -> int:
    from beamtrawl.transforms.index.sqlite import EmbeddedIndex  # imports Beam: only when needed

    index = EmbeddedIndex(str(path))
    try:
        return index.count()
    finally:
        index.close()


def index_digest(path: Path) -> str:
    """A hash over every document's stored fields and searchable text (not when it was indexed)."""
    digest = hashlib.sha256()
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        rows = db.execute(
            "SELECT d.id, d.url, d.root, d.title, d.mimetype, d.extension, d.filename, d.path, d.size,"
            " d.mtime_ns, d.last_modified, d.preparation_error, d.content_hash, d.prep_fingerprint,"
            " d.outlinks, f.content, f.headlines, f.metadata"
            " FROM docs d JOIN docs_fts f ON f.rowid = d.rid ORDER BY d.id")
        for row in rows:
            digest.update(repr(row).encode())
    return digest.hexdigest()


def fail(message: str) -> None:
    print(f"\nFAILED: {message}\n(--keep DIR keeps the tree, indexes and logs)", file=sys.stderr)
    sys.exit(1)


def mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def rate(files: int, seconds: float) -> str:
    return f"{files / seconds:,.0f} docs/s ({seconds:.1f} s)"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


# ---------------------------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------------------------

def prepare_workdir(work: Path) -> None:
    """Remove what an earlier run with ``--keep`` left, so every index starts empty."""
    (work / "logs").mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "tree", ignore_errors=True)
    shutil.rmtree(work / "beamtrawl.work", ignore_errors=True)
    for name in ("beamtrawl", "loop"):
        for suffix in (".sqlite", ".sqlite-wal", ".sqlite-shm", ".report.json"):
            (work / f"{name}{suffix}").unlink(missing_ok=True)


def write_config(work: Path, tree: Path) -> Path:
    config = work / "crawl.yaml"
    config.write_text(f"start:\n  - {{url: {json.dumps(str(tree))}}}\nindex: {{path: beamtrawl.sqlite}}\n")
    return config


def crawl(config: Path, workers: int, log: Path, code: Path | None = None) -> dict:
    """``beamtrawl crawl`` as installed, or as the checkout ``code`` has it (see :func:`baseline`)."""
    if code is not None:
        command, env, cwd = baseline(code)
    else:
        command, env, cwd = [shutil.which("beamtrawl") or fail("the beamtrawl command is not on PATH "
                                                                "(pip install -e .)")], None, REPO
    run = run_measured([*command, "crawl", str(config), f"--direct_num_workers={workers}"], log, env, cwd)
    report = config.parent / "beamtrawl.report.json"
    shutil.copy(report, log.with_suffix(".report.json"))  # the next crawl overwrites it
    run["report"] = json.loads(report.read_text())
    return run


FOLDERS = ("pipeline", "transforms", "plugins", "runners")


@contextlib.contextmanager
def schema_of(code: Path | None, index: Path):
    """The index as the checkout ``code`` reads it: a baseline from before a schema change refuses an index of a
    later version, so for its re-crawl the index says the baseline's version (the columns a later version added
    stay, unread; an unchanged re-crawl writes no document), and says its own again afterwards. Only where the
    baseline's version is lower and adds nothing but columns and indexes (7 → 8: ``docs.folder``)."""
    source = code and code / "transforms" / "index" / "sqlite.py"
    found = source and source.exists() and re.search(r"^SCHEMA_VERSION = (\d+)", source.read_text(), re.MULTILINE)
    with contextlib.closing(sqlite3.connect(index)) as db:
        (own,) = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        theirs = found.group(1) if found else own
        if (int(own), int(theirs)) not in ((8, 7),):
            theirs = own
        with db:
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (theirs,))
    try:
        yield
    finally:
        with contextlib.closing(sqlite3.connect(index)) as db, db:
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (own,))


def baseline(code: Path) -> tuple[list[str], dict, Path]:
    """The command line, environment and folder that run ``beamtrawl`` from the checkout ``code``, with this
    interpreter and its packages. Code from before issue 17 imports the four folders by their own names;
    later code imports ``beamtrawl.pipeline`` and the like, which a folder of links named beamtrawl (a
    namespace package, found before this checkout's editable install) provides."""
    if "from beamtrawl." not in (code / "pipeline" / "cli.py").read_text(encoding="utf-8"):
        module, path = "pipeline.cli", code
    else:
        module, path = "beamtrawl.pipeline.cli", Path(tempfile.mkdtemp(prefix="beamtrawl-baseline-"))
        (path / "beamtrawl").mkdir()
        for folder in FOLDERS:
            (path / "beamtrawl" / folder).symlink_to(code / folder)
    command = [sys.executable, "-P", "-c", f"import sys; sys.argv[0] = 'beamtrawl'; from {module} import run; run()"]
    return command, {**os.environ, "PYTHONPATH": str(path)}, code


def check(name: str, figure: str, target: str, ok: bool) -> Row:
    return (name, figure, target, verdict(ok))


def generate(work: Path, files: int, seed: int) -> Path:
    started = time.perf_counter()
    size = generate_tree(work / "tree", files, seed)
    print(f"generated the tree in {time.perf_counter() - started:.1f} s (not part of any figure): "
          f"{files:,} files,\n  half .txt, half .html, {size / 2**20:.1f} MiB, "
          f"~{FILES_PER_FOLDER} per folder, {LEVELS} folder levels, seed {seed}")
    return write_config(work, work / "tree")


def full_crawl(work: Path, config: Path, files: int, workers: int) -> tuple[dict, dict, list[Row]]:
    print("\n(a) full crawl into a fresh index")
    full = crawl(config, workers, work / "logs" / "full-crawl.log")
    c, inside = full["report"]["counts"], full["report"]["timings"]["total_s"]
    print(f"  beamtrawl crawl: {full['seconds']:7.2f} s {files / full['seconds']:7,.0f} docs/s  "
          f"(report: read {c['read']}, written {c['written']}, failed {c['failed']}; "
          f"crawl() itself {inside:.2f} s)")
    loop = run_measured([sys.executable, __file__, "--loop", str(config), str(work / "loop.sqlite")],
                        work / "logs" / "loop.log")
    loop_s = json.loads((work / "logs" / "loop.log").read_text().splitlines()[-1])["loop_s"]
    print(f"  plain loop:      {loop['seconds']:7.2f} s {files / loop['seconds']:7,.0f} docs/s  "
          f"(the loop alone, without start-up and imports: {loop_s:.2f} s)")
    speedup, per_cpu = loop["seconds"] / full["seconds"], loop["cpu"] / full["cpu"]
    print(f"  beamtrawl/loop:  {speedup:7.2f}x docs/s   target >= 1.6  {verdict(speedup >= 1.6)}")
    print(f"  per CPU second:  {per_cpu:7.2f}x ({full['cpu']:.1f} against {loop['cpu']:.1f} CPU s, the process trees)"
          f"   target >= 0.85  {verdict(per_cpu >= 0.85)}")
    print("  Both are timed as whole processes, start to exit. The loop is one process doing the same work:\n"
          "  walk + stat, read, MimeSniffer, the same first preparator (the same extraction),\n"
          "  make_document, upserts of 500 into its own fresh EmbeddedIndex (the same index: checked next).")
    verify_indexes(work / "beamtrawl.sqlite", work / "loop.sqlite", files)
    rows = [("full crawl, beamtrawl", rate(files, full["seconds"]), "", ""),
            ("full crawl, plain loop", rate(files, loop["seconds"]), "", ""),
            check("beamtrawl / loop (docs/s)", f"{speedup:.2f}x", ">= 1.6", speedup >= 1.6),
            check("beamtrawl / loop (docs per CPU s)", f"{per_cpu:.2f}x", ">= 0.85", per_cpu >= 0.85)]
    return full, loop, rows


def verify_indexes(beamtrawl: Path, loop: Path, files: int) -> None:
    """Both hold ``files`` documents with the same stored fields and text; fails the run otherwise."""
    counts = {"beamtrawl": index_count(beamtrawl), "loop": index_count(loop)}
    print(f"  documents in the indexes: beamtrawl {counts['beamtrawl']:,}, loop {counts['loop']:,}")
    if counts != {"beamtrawl": files, "loop": files}:
        fail(f"the indexes should each hold {files} documents: {counts}")
    if index_digest(beamtrawl) != index_digest(loop):
        fail("the two indexes hold different documents (stored fields or text differ)")
    print("  every document's stored fields and searchable text are identical in both indexes: OK")


def re_crawl(work: Path, config: Path, files: int, workers: int, full: dict) -> tuple[dict, list[Row]]:
    print("\n(b) re-crawl of the unchanged tree")
    find = time_find(work / "tree")
    floor, floor_cpu = time_floor(work / "tree", work / "beamtrawl.sqlite")
    again = crawl(config, workers, work / "logs" / "re-crawl.log")
    r = again["report"]["counts"]
    to_full, to_find = again["seconds"] / full["seconds"], again["seconds"] / find
    again["floor"] = floor, floor_cpu
    unchanged = r["read"] == 0 and r["unchanged"] == files
    print(f"  beamtrawl re-crawl: {again['seconds']:7.2f} s  "
          f"(crawl() itself {again['report']['timings']['total_s']:.2f} s)")
    print(f"  find -printf:       {find:7.3f} s  (fastest of 3)")
    print(f"  floor:              {floor:7.3f} s  (scandir walk with stat + url, mtime_ns, size from the index; "
          f"fastest of 3)   re-crawl/floor {again['seconds'] / floor:.0f}x")
    print(f"  re-crawl/full crawl: {to_full:6.3f}   target <= 0.10  {verdict(to_full <= 0.10)}")
    print(f"  re-crawl/find:       {to_find:6.1f}x  target <= 5x    {verdict(to_find <= 5)}")
    print(f"  report: read {r['read']} (want 0), unchanged {r['unchanged']:,} (want {files:,})  "
          f"{verdict(unchanged)}")
    return again, [("re-crawl", f"{again['seconds']:.2f} s", "", ""),
                   check("re-crawl / full crawl", f"{to_full:.3f}", "<= 0.10", to_full <= 0.10),
                   check("re-crawl / find", f"{to_find:.0f}x (find {find:.3f} s)", "<= 5x", to_find <= 5),
                   check("re-crawl read, unchanged", f"{r['read']}, {r['unchanged']:,}", f"0, {files:,}",
                         unchanged)]


def memory(full: dict, again: dict, loop: dict) -> list[Row]:
    """(c): peak RSS summed over each process tree, its roles', and peak PSS summed (shared pages once: a worker
    forked from the command shares its pages until either writes them), each against the loop's (target 4: at
    most 2x)."""
    print("\n(c) peak memory: RSS and PSS summed over the process tree, sampled every 0.1 s")
    rows: list[Row] = []
    for what, run in (("full crawl", full), ("re-crawl", again)):
        rss = run["peak_rss"] / loop["peak_rss"]
        pss = run["peak_pss"] / loop["peak_pss"] if loop["peak_pss"] else math.nan  # no smaps_rollup: not measured
        print(f"  {what + ':':11} RSS {mib(run['peak_rss']):>9} ({rss:.2f}x the loop), PSS {mib(run['peak_pss']):>9} "
              f"({pss:.2f}x); {run['procs']} processes, peak RSS by role: {roles(run)}")
        rows += [check(f"peak RSS, {what} / loop", f"{rss:.2f}x ({mib(run['peak_rss'])})", "<= 2x", rss <= 2),
                 check(f"peak PSS, {what} / loop", f"{pss:.2f}x ({mib(run['peak_pss'])})", "<= 2x", pss <= 2)]
    print(f"  plain loop: RSS {mib(loop['peak_rss']):>9}, PSS {mib(loop['peak_pss']):>9} ({loop['procs']} process)")
    return rows + [("peak RSS, PSS, plain loop", f"{mib(loop['peak_rss'])}, {mib(loop['peak_pss'])}", "", "")]


def benchmark(work: Path, files: int, workers: int, seed: int, then: int | None = None) -> list[Row]:
    """(a)-(c); with ``then``, (d) too, between this tree and one of ``then`` files."""
    prepare_workdir(work)
    print(f"beamtrawl crawl benchmark: {files:,} files, {workers} workers, {os.cpu_count()} CPUs, in {work}")
    config = generate(work, files, seed)
    full, loop, rows = full_crawl(work, config, files, workers)
    again, more = re_crawl(work, config, files, workers, full)
    rows += more + memory(full, again, loop)
    if then is not None:
        first = {"files": files, "floor": again["floor"], "full": full, "again": again}
        rows += slope([first, point(work, then, workers, seed)])
    return rows


Point = dict  # files; floor (s, CPU s); full (a crawl's figures); again, and with a baseline baseline (re-crawls)


def point(work: Path, files: int, workers: int, seed: int, code: Path | None = None,
          current: Path | None = None) -> Point:
    """A tree of ``files``: its full crawl, its floor (:func:`time_floor`) and its unchanged re-crawl; with
    ``code`` (``--baseline-code``), then the unchanged re-crawl of that code too (after this checkout's, which
    finds the index as its own crawl left it: see the SQLite target's stamp). ``current``: this checkout's
    code from a checkout of its own (``--current-code``)."""
    prepare_workdir(work)
    print(f"\n{files:,} files")
    config = generate(work, files, seed)
    full = crawl(config, workers, work / "logs" / f"full-{files}.log", current)
    floor = time_floor(work / "tree", work / "beamtrawl.sqlite")
    found = {"files": files, "floor": floor, "full": full}
    for name, checkout in (("again", current), ("baseline", code)):
        if name == "baseline" and code is None:
            break
        with schema_of(checkout, work / "beamtrawl.sqlite"):
            again = found[name] = crawl(config, workers, work / "logs" / f"{name}-{files}.log", checkout)
        counts = again["report"]["counts"]
        if counts.get("read", 0) or counts.get("unchanged") != files:
            fail(f"the {name} re-crawl of {files} unchanged files read {counts.get('read', 0)} and found "
                 f"{counts.get('unchanged')} unchanged")
        print(f"  {'' if name == 'again' else 'baseline '}unchanged re-crawl {again['seconds']:.2f} s "
              f"({again['cpu']:.1f} CPU s), peak RSS {mib(again['peak_rss'])}, PSS {mib(again['peak_pss'])}; re-crawl/floor "
              f"{again['seconds'] / floor[0]:.0f}x, in CPU s {again['cpu'] / floor[1]:.0f}x")
    print(f"  full crawl {full['seconds']:.2f} s, peak RSS {mib(full['peak_rss'])}, PSS {mib(full['peak_pss'])}; floor {floor[0]:.3f} s "
          f"({floor[1]:.3f} CPU s)")
    return found


def _fit(n1: int, n2: int, y1: float, y2: float) -> tuple[float, float]:
    """(fixed, per file) of the line through (n1, y1) and (n2, y2)."""
    per_file = (y2 - y1) / (n2 - n1)
    return y1 - per_file * n1, per_file


def slope(points: list[Point]) -> list[Row]:
    """The fixed cost and the cost per unchanged file of beamtrawl's re-crawl and of the floor, fitted as a
    line through two tree sizes measured in the same run (issue 27, target 1: beamtrawl's per-file cost <= 3x
    the floor's, and a million files <= 4x the floor, extrapolated), in wall and in CPU seconds (the re-crawl's
    process tree, the floor's process), with a baseline's re-crawl beside; and the growth of peak memory of
    full crawl and re-crawl between them (target 4)."""
    print("\n(d) unchanged re-crawl against the floor, fitted over two tree sizes")
    first, second = points
    n1, n2 = first["files"], second["files"]
    rows: list[Row] = []
    for name in ("again", "baseline"):
        if name not in first:
            continue
        who = "beamtrawl" if name == "again" else "baseline"
        for unit, k, key in (("wall", 0, "seconds"), ("CPU", 1, "cpu")):
            fixed, per_file = _fit(n1, n2, first[name][key], second[name][key])
            floor_fixed, floor_per_file = _fit(n1, n2, first["floor"][k], second["floor"][k])
            # a slope that is not positive is noise (a loaded machine: the larger tree went faster): no verdict
            fitted = per_file > 0 and floor_per_file > 0
            ratio = per_file / floor_per_file if fitted else math.nan
            million = (fixed + per_file * 1e6) / (floor_fixed + floor_per_file * 1e6) if fitted else math.nan
            print(f"\n  {who}, {unit} seconds: per unchanged file {per_file * 1e6:.1f} us, floor "
                  f"{floor_per_file * 1e6:.2f} us, ratio {ratio:.1f}x (target <= 3)\n  fixed: {fixed:.2f} s, floor "
                  f"{floor_fixed:.3f} s; a million unchanged files (extrapolated): {fixed + per_file * 1e6:.0f} s, "
                  f"{million:.1f}x the floor (target <= 4)")
            rows += [(f"{who} re-crawl per unchanged file ({unit})", f"{per_file * 1e6:.1f} us", "", ""),
                     (f"{who} re-crawl fixed cost ({unit})", f"{fixed:.2f} s", "", "")]
            if name == "again":
                rows += [(f"floor per file ({unit})", f"{floor_per_file * 1e6:.2f} us", "", ""),
                         check(f"per file, beamtrawl / floor ({unit})", f"{ratio:.1f}x", "<= 3x",
                               fitted and ratio <= 3),
                         check(f"1M unchanged / floor, extrapolated ({unit})", f"{million:.1f}x", "<= 4x",
                               fitted and million <= 4)]
    for name, what in (("full", "full crawl"), ("again", "re-crawl")):
        for size, key in (("RSS", "peak_rss"), ("PSS", "peak_pss")):
            if not first[name][key]:  # PSS where no smaps_rollup tells it
                continue
            growth = second[name][key] / first[name][key] - 1
            print(f"  peak {size} growth {n1:,} -> {n2:,} files, {what}: {growth:+.0%} "
                  f"({mib(first[name][key])} -> {mib(second[name][key])}; target <= +10 %)")
            rows.append(check(f"peak {size} growth {n1:,} -> {n2:,}, {what}", f"{growth:+.0%} ({mib(second[name][key])})",
                              "<= +10 %", growth <= 0.10))
        print(f"    peak RSS by role, {what}: {n1:,} files {roles(first[name])}; {n2:,} files {roles(second[name])}")
    return rows


def fresh_index(work: Path) -> None:
    shutil.rmtree(work / "beamtrawl.work", ignore_errors=True)
    for suffix in (".sqlite", ".sqlite-wal", ".sqlite-shm"):
        (work / f"beamtrawl{suffix}").unlink(missing_ok=True)
        (work / f"loop{suffix}").unlink(missing_ok=True)


def compare(work: Path, code: Path, files: int, workers: int, seed: int, rounds: int,
            current: Path | None = None) -> list[Row]:
    """Full crawls of one tree by the code in ``code``, by this checkout (or ``current``) and by the plain
    loop, interleaved."""
    prepare_workdir(work)
    commit = subprocess.run(["git", "-C", str(code), "log", "-1", "--format=%h %cs"], check=False,
                            capture_output=True, text=True).stdout.strip() or "not a git checkout"
    print(f"beamtrawl crawl A/B: {files:,} files, {workers} workers, {os.cpu_count()} CPUs, {rounds} rounds, "
          f"in {work}\n  baseline: {code} ({commit})\n  current:  {current or REPO}")
    config = generate(work, files, seed)
    rates: dict[str, list[float]] = {"baseline": [], "current": [], "loop": []}
    cpu_rates: dict[str, list[float]] = {"baseline": [], "current": [], "loop": []}  # documents per CPU second
    for n in range(1, rounds + 1):
        for name in ("baseline", "current"):
            fresh_index(work)
            run = crawl(config, workers, work / "logs" / f"{name}-{n}.log", code if name == "baseline" else current)
            if index_count(work / "beamtrawl.sqlite") != files:
                fail(f"the {name} crawl indexed {index_count(work / 'beamtrawl.sqlite')} of {files} files")
            rates[name].append(files / run["seconds"])
            cpu_rates[name].append(files / run["cpu"])
        loop = run_measured([sys.executable, __file__, "--loop", str(config), str(work / "loop.sqlite")],
                            work / "logs" / f"loop-{n}.log")
        rates["loop"].append(files / loop["seconds"])
        cpu_rates["loop"].append(files / loop["cpu"])
        print(f"  round {n}: " + "   ".join(f"{k} {v[-1]:5,.0f} docs/s" for k, v in rates.items())
              + "   (per CPU second: " + ", ".join(f"{k} {v[-1]:,.0f}" for k, v in cpu_rates.items()) + ")")
    median = {k: statistics.median(v) for k, v in rates.items()}
    ratio = statistics.median(c / b for c, b in zip(rates["current"], rates["baseline"]))
    print("  medians:  " + "   ".join(f"{k} {v:5,.0f} docs/s" for k, v in median.items()))
    print(f"  current/baseline {ratio:.2f}x (median of the rounds' ratios; no regression: >= 0.95)   "
          f"current/loop {median['current'] / median['loop']:.2f}x   baseline/loop "
          f"{median['baseline'] / median['loop']:.2f}x")
    cpu = {k: statistics.median(v) for k, v in cpu_rates.items()}
    cpu_ratio = statistics.median(c / b for c, b in zip(cpu_rates["current"], cpu_rates["baseline"]))
    print("  documents per CPU second of the process tree (medians; less sensitive to the machine's load): "
          + "   ".join(f"{k} {v:,.0f}" for k, v in cpu.items())
          + f"\n  current/baseline per CPU second {cpu_ratio:.2f}x")
    return [(f"full crawl, {k} (median)", f"{v:,.0f} docs/s", "", "") for k, v in median.items()] + [
        check("current / baseline (docs/s)", f"{ratio:.2f}x", ">= 0.95", ratio >= 0.95),
        check("current / baseline (docs per CPU s)", f"{cpu_ratio:.2f}x", ">= 0.95", cpu_ratio >= 0.95),
        check("current / loop (docs/s)", f"{median['current'] / median['loop']:.2f}x", ">= 1.6",
              median["current"] / median["loop"] >= 1.6),
        check("current / loop (docs per CPU s)", f"{cpu['current'] / cpu['loop']:.2f}x", ">= 0.85",
              cpu["current"] / cpu["loop"] >= 0.85),
        ("baseline / loop (docs/s)", f"{median['baseline'] / median['loop']:.2f}x", "", "")]


def print_table(rows: list[Row]) -> None:
    header = ("measure", "figure", "target", "result")
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(4)]
    line = "  ".join("-" * w for w in widths)
    print("\nsummary", line, "  ".join(h.ljust(w) for h, w in zip(header, widths)), line, sep="\n")
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000, help="documents to generate (default 20000)")
    parser.add_argument("--workers", type=int, default=2, help="beamtrawl's --direct_num_workers (default 2)")
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep tree and indexes there")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated tree (default 7)")
    parser.add_argument("--baseline-code", metavar="DIR", type=Path,
                        help="compare with the code of this checkout of an earlier commit (see above)")
    parser.add_argument("--current-code", metavar="DIR", type=Path,
                        help="with --baseline-code: crawl with this checkout instead of the installed one")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the comparison (default 3)")
    parser.add_argument("--slope", metavar="N1,N2", help="unchanged re-crawls of two tree sizes against the "
                        "floor, e.g. 20000,100000: the cost per unchanged file and the fixed cost of each")
    parser.add_argument("--tiny", action="store_true", help="200 files, and (d) with 400: the test suite's run")
    parser.add_argument("--loop", nargs=2, metavar=("CONFIG", "INDEX"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tiny:
        args.files = 200
    if args.loop:
        return run_loop(*args.loop)
    if args.slope:
        sizes = [int(n) for n in args.slope.split(",")] if args.slope.replace(",", "").isdigit() else []
        if len(sizes) != 2 or not 0 < sizes[0] < sizes[1]:
            parser.error("--slope takes two sizes, the smaller first: --slope 20000,100000")
        code, current = (path and path.resolve() for path in (args.baseline_code, args.current_code))
        measure = lambda work: slope([point(work, n, args.workers, args.seed, code, current) for n in sizes])
    elif args.baseline_code:
        code, current = args.baseline_code.resolve(), args.current_code and args.current_code.resolve()
        measure = lambda work: compare(work, code, args.files, args.workers, args.seed, args.rounds, current)
    else:
        measure = lambda work: benchmark(work, args.files, args.workers, args.seed, 400 if args.tiny else None)
    if args.keep:
        rows = measure(Path(args.keep).resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="beamtrawl-bench-") as work:
            rows = measure(Path(work))
    print_table(rows)


if __name__ == "__main__":
    main()
